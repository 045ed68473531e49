# SPDX-License-Identifier: Apache-2.0
"""Issue 45's choice per fused pattern, from one GPU check: does the pattern earn the default?

A pattern (`--fusions conv_stats`, `conv_prologue`) becomes the default only when, in the same
run, its conformance row passed (right before fast), the planted error failed that row (the
row can see such an error), and its mode trained at least MIN_GAIN faster than the mode it
adds to. Otherwise it stays behind its option, and the reason says which condition failed.
gpu_check_summary.py writes the result as gpu_check.json's `fusion_choice`; the choice itself
(train/lowering.h's kDefaultFusions) is a code change a person makes from it. Standard
library only.
"""

import json

# pattern, its gpu_check mode, the mode it adds to, its conformance row (the test name's end)
PATTERNS = [
    ("conv_stats", "f16-nhwc-graph-convstats", "f16-nhwc-graph", "_conv_stats"),
    ("conv_prologue", "f16-nhwc-graph-prologue", "f16-nhwc-graph-convstats", "_conv_prologue"),
]
# Below 1%, two runs of one mode differ as much (the H200 runs' medians of 20 steps), and a
# default is not changed for noise.
MIN_GAIN = 0.01


def row_result(gtest_doc, suffix):
    """passed, failed or skipped: the cuda conformance row whose name ends with `suffix`; None
    when the run has no such row."""
    for suite in (gtest_doc or {}).get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = t.get("name", "")
            if "cuda" in name and name.endswith(suffix):
                if t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                    return "skipped"
                return "failed" if t.get("failures") else "passed"
    return None


def choose(rates, conformance, planted_verdict):
    """One choice per pattern. rates: img/s by gpu_check mode (batch 256); conformance: the
    conformance suite's gtest JSON (a dict); planted_verdict: step_planted's (caught, not caught,
    not run) or None."""
    out = []
    for pattern, mode, base, suffix in PATTERNS:
        row = row_result(conformance, suffix)
        mine, theirs = rates.get(mode), rates.get(base)
        gain = mine / theirs - 1 if mine and theirs else None
        c = {"pattern": pattern, "mode": mode, "against": base, "images_per_s": mine,
             "against_images_per_s": theirs, "gain": round(gain, 4) if gain is not None else None,
             "conformance": row, "planted": planted_verdict, "default": False}
        if row != "passed":
            c["reason"] = f"undecided: its conformance row {row or 'did not run'}" if row in (None, "skipped") \
                else "stays behind its option: its conformance row failed"
        elif planted_verdict != "caught":
            c["reason"] = f"undecided: the planted error was {planted_verdict or 'not run'}, so a pass proves little"
        elif gain is None:
            c["reason"] = f"undecided: {mode if not mine else base} was not measured"
        elif gain < MIN_GAIN:
            c["reason"] = (f"stays behind its option: {gain:+.1%} against {base}, "
                           f"below the {MIN_GAIN:.0%} a default needs")
        else:
            c["default"] = True
            c["reason"] = f"earns the default: {gain:+.1%} against {base}, its conformance row passed"
        out.append(c)
    return out


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", required=True, help='JSON: {"mode": img/s, ...}')
    ap.add_argument("--conformance", help="the conformance suite's gtest JSON")
    ap.add_argument("--planted", help="step_planted's verdict")
    a = ap.parse_args()
    conf = json.load(open(a.conformance)) if a.conformance else None
    print(json.dumps(choose(json.loads(a.rates), conf, a.planted), indent=1))


if __name__ == "__main__":
    main()
