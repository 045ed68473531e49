# SPDX-License-Identifier: Apache-2.0
# The skip rule of the tests, in one place: a missing oracle (torch, torchvision, a tool, a
# test image) is a skip (exit 77, which ctest counts as skipped) where it may be missing, and a
# failure (exit 1) under CI=true or STOKER_REQUIRE_ORACLES=1 (scripts/test.sh), where
# scripts/deps.sh --test must have installed it. An honest skip (tests/honest_skips.txt: no CUDA
# device, no io_uring, a case that does not apply) is a skip everywhere, tagged "SKIP[kind]:"
# so that scripts/test.sh can tell it from the others. Also the checker of a ctest run
# (--check JUNIT) and of the test sources (--lint DIR), which scripts/test.sh and ctest run.
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def honest_kinds():
    with open(os.path.join(HERE, "honest_skips.txt")) as f:
        return {line.split(":", 1)[0].strip() for line in f
                if line.strip() and not line.startswith("#")}


def required():
    return os.environ.get("CI") == "true" or os.environ.get("STOKER_REQUIRE_ORACLES") == "1"


def skip(reason):
    """Ends the test: skipped with `reason`, or failed where the oracle is required."""
    if required():
        print(f"FAIL: {reason} (required here: CI=true or STOKER_REQUIRE_ORACLES=1)")
        sys.exit(1)
    print(f"SKIP: {reason}")
    sys.exit(77)


def skip_honest(kind, reason):
    """Ends the test as skipped everywhere; `kind` must be listed in honest_skips.txt."""
    if kind not in honest_kinds():
        print(f"FAIL: skip kind '{kind}' is not in tests/honest_skips.txt ({reason})")
        sys.exit(1)
    print(f"SKIP[{kind}]: {reason}")
    sys.exit(77)


def skip_case(reason, kind=None):
    """The same rule inside a pytest test or fixture."""
    import pytest
    if kind is not None:
        if kind not in honest_kinds():
            pytest.fail(f"skip kind '{kind}' is not in tests/honest_skips.txt ({reason})")
        pytest.skip(f"SKIP[{kind}]: {reason}")
    if required():
        pytest.fail(f"{reason} (required here: CI=true or STOKER_REQUIRE_ORACLES=1)")
    pytest.skip(reason)


HONEST_LINE = re.compile(r"^SKIP\[([a-z0-9-]+)\]: (.*)$", re.M)
OTHER_LINE = re.compile(r"^SKIP: (.*)$|: Skipped\n(.+)$", re.M)


def skip_reason(output):
    """(kind or None, reason) of a skipped test's output: its honest tag wherever it is."""
    m = HONEST_LINE.search(output)
    if m:
        return m.group(1), m.group(2)
    m = OTHER_LINE.search(output)
    return None, (m.group(1) or m.group(2)) if m else "(no reason given)"


def check_junit(path):
    """Lists ctest's skipped tests with their reasons; exit 1 where a skip is not honest and
    oracles are required."""
    import xml.etree.ElementTree as ET
    honest, skipped, bad = honest_kinds(), [], []
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("skipped") is None and case.get("status") not in ("notrun", "skipped"):
            continue
        kind, reason = skip_reason(case.findtext("system-out") or "")
        skipped.append((case.get("name"), kind, reason))
        if kind not in honest:
            bad.append(case.get("name"))
    print(f"# {len(skipped)} tests skipped" + (":" if skipped else ""))
    for name, kind, reason in skipped:
        print(f"#   {name}: [{kind or 'NOT AN HONEST SKIP'}] {reason}")
    if bad and required():
        print(f"FAIL: {len(bad)} skipped for a reason tests/honest_skips.txt does not list, where "
              f"every oracle is required (STOKER_REQUIRE_ORACLES=1): {', '.join(bad)}")
        return 1
    return 0


# A skip written outside the policy: raw exit 77, pytest.skip, GTEST_SKIP (test_util.h's
# STOKER_SKIP_* wrap it), and STOKER_SKIP_HONEST / skip_honest with an unlisted kind.
RAW = [(re.compile(r"sys\.exit\(77\)|\bexit 77\b|pytest\.skip\(|pytest\.mark\.skip|GTEST_SKIP\(\)"),
        "a raw skip: use tests/skip_policy.{py,sh} or skip_policy.h's STOKER_SKIP_*")]
KIND = re.compile(r"(?:STOKER_SKIP_HONEST\(|skip_honest\(?\s*)\"?([a-z0-9-]+)\"?")
POLICY_FILES = {"skip_policy.py", "skip_policy.sh", "skip_policy.h"}


def lint(root):
    honest, problems = honest_kinds(), []
    for top, _, files in os.walk(root):
        for name in files:
            if name in POLICY_FILES or not name.endswith((".py", ".sh", ".cc", ".h", ".txt")):
                continue
            path = os.path.join(top, name)
            for n, line in enumerate(open(path, errors="replace"), 1):
                for pattern, why in RAW:
                    if pattern.search(line):
                        problems.append(f"{path}:{n}: {why}")
                for kind in KIND.findall(line):
                    if kind not in honest:
                        problems.append(f"{path}:{n}: skip kind '{kind}' is not in honest_skips.txt")
    for p in problems:
        print(p)
    print(f"{'FAIL' if problems else 'ok'}: {len(problems)} skips outside the policy under {root}")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(check_junit(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "--lint":
        sys.exit(lint(sys.argv[2]))
    sys.exit("usage: skip_policy.py --check CTEST_JUNIT_XML | --lint TESTS_DIR")
