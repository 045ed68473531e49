# SPDX-License-Identifier: Apache-2.0
"""bench/fusion_choice.py: a fused pattern earns the default only when its conformance row
passed, the planted error was caught and it is 1% or more faster than the mode it adds to;
each refusal names its reason."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from fusion_choice import choose, row_result  # noqa: E402

ROW = "Backends/WholeStep.EveryLayerMatchesTheReferenceNetwork/"
STATS = "cuda_r18_n4_64px_f32_nchw_f16_fuse_bn_relu_bn_add_relu_conv_stats"
PROLOGUE = STATS + "_conv_prologue"


def gtest(**results):
    """A gtest JSON document with the two rows' results (passed, failed, skipped)."""
    tests = []
    for name, r in results.items():
        t = {"name": ROW + name, "status": "RUN", "result": "SKIPPED" if r == "skipped" else "COMPLETED"}
        if r == "failed":
            t["failures"] = [{"failure": "tensor out of bounds"}]
        tests.append(t)
    return {"testsuites": [{"name": "Backends/WholeStep", "testsuite": tests}]}


RATES = {"f16-nhwc-graph": 6500.0, "f16-nhwc-graph-convstats": 6700.0,
         "f16-nhwc-graph-prologue": 6720.0}


def by_pattern(choices):
    return {c["pattern"]: c for c in choices}


class FusionChoice(unittest.TestCase):
    def test_rows_found_by_their_end(self):
        doc = gtest(**{STATS: "passed", PROLOGUE: "failed"})
        self.assertEqual(row_result(doc, "_conv_stats"), "passed")
        self.assertEqual(row_result(doc, "_conv_prologue"), "failed")
        self.assertIsNone(row_result(gtest(), "_conv_stats"))

    def test_faster_and_right_earns_the_default(self):
        c = by_pattern(choose(RATES, gtest(**{STATS: "passed", PROLOGUE: "passed"}), "caught"))
        self.assertTrue(c["conv_stats"]["default"], c)
        self.assertAlmostEqual(c["conv_stats"]["gain"], 6700 / 6500 - 1, places=4)
        # +0.3% over conv_stats alone: noise, not a default.
        self.assertFalse(c["conv_prologue"]["default"])
        self.assertIn("below the 1%", c["conv_prologue"]["reason"])

    def test_a_failed_row_keeps_it_off_however_fast(self):
        fast = dict(RATES, **{"f16-nhwc-graph-prologue": 9000.0})
        c = by_pattern(choose(fast, gtest(**{STATS: "passed", PROLOGUE: "failed"}), "caught"))
        self.assertFalse(c["conv_prologue"]["default"])
        self.assertIn("conformance row failed", c["conv_prologue"]["reason"])

    def test_an_uncaught_plant_decides_nothing(self):
        for verdict in ("not caught", "not run", None):
            c = by_pattern(choose(RATES, gtest(**{STATS: "passed", PROLOGUE: "passed"}), verdict))
            self.assertFalse(c["conv_stats"]["default"], verdict)
            self.assertIn("planted error", c["conv_stats"]["reason"])

    def test_no_gpu_no_choice(self):
        # The dry run: f32 on the CPU backend, the rows skipped.
        c = choose({"f32": 3.0}, gtest(**{STATS: "skipped", PROLOGUE: "skipped"}), "not run")
        self.assertTrue(all(not x["default"] and x["reason"].startswith("undecided") for x in c), c)

    def test_an_unmeasured_mode_is_undecided(self):
        rates = {"f16-nhwc-graph": 6500.0}
        c = by_pattern(choose(rates, gtest(**{STATS: "passed", PROLOGUE: "passed"}), "caught"))
        self.assertFalse(c["conv_stats"]["default"])
        self.assertIn("was not measured", c["conv_stats"]["reason"])


if __name__ == "__main__":
    unittest.main()
