#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install dependencies (test oracles included), build everything, run every test.
# Exits non-zero on any failure. Whatever scripts/deps.sh --test installs is required: a test
# missing an oracle, tool or library fails rather than skips (STOKER_REQUIRE_ORACLES=1; set it
# to 0 to allow those skips). Skips that remain (no GPU, say) are listed with their reasons.
set -euo pipefail
cd "$(dirname "$0")/.."
export STOKER_REQUIRE_ORACLES=${STOKER_REQUIRE_ORACLES:-1}
scripts/deps.sh --test
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTOKER_BUILD_TESTS=ON > /dev/null
cmake --build build
# The lean GPU bundle, before the tests (tests/tools/gpu_bundle_chroot_test.sh runs it on a
# bare Debian): its own smaller build, made here rather than inside a test that runs beside others.
if [ -x build/tests/cuda_backend_test ]; then
  scripts/gpu_bundle.sh --out build/gpu-bundle --build-dir build/bundle-build >/dev/null
fi
rc=0
ctest --test-dir build --output-on-failure -j "$(nproc)" --output-junit ctest-junit.xml || rc=$?
# The skipped tests and why: ctest's summary names them, not the reason.
python3 - build/ctest-junit.xml <<'PY'
import re, sys, xml.etree.ElementTree as ET
skipped = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.find("skipped") is None and case.get("status") not in ("notrun", "skipped"):
        continue
    out = case.findtext("system-out") or ""
    m = re.search(r"^SKIP: (.*)$|: Skipped\n(.+)$", out, re.M)
    skipped.append((case.get("name"), (m.group(1) or m.group(2)) if m else "(no reason given)"))
print(f"# {len(skipped)} tests skipped" + (":" if skipped else ""))
for name, reason in skipped:
    print(f"#   {name}: {reason}")
PY
exit "$rc"
