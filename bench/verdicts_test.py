"""Tests of bench/verdicts.py (run by ctest as bench.verdicts: python3 -m unittest verdicts_test)."""
import math
import unittest

import verdicts
from verdicts import MET, MISSED, NOT_WORSE, TOO_FEW, ratio_stats, verdict


def stats(low, high, n=7):
    """ratio_stats-shaped figures with the interval [low, high]."""
    mid = (low + high) / 2
    return {"median": mid, "mean": mid, "ci95": [low, high], "min": low, "max": high, "n": n}


class IntervalTest(unittest.TestCase):
    def test_interval_of_one_to_seven_is_the_hand_computed_one(self):
        # Catches: a wrong t quantile (the normal 1.96, or the table read one
        # degree of freedom off: 2.365 or 2.571 for n = 7), the population
        # standard deviation in place of the sample's, or a divisor other
        # than √n.
        # By hand: mean 4, sample variance 28/6, so the half-width is
        # 2.447 (t, 6 degrees of freedom, 97.5 %) × √(28/6) / √7 = 2.447 × √(2/3).
        st = ratio_stats([1, 2, 3, 4, 5, 6, 7])
        half = 2.447 * math.sqrt(2 / 3)
        self.assertAlmostEqual(half, 1.99797, places=5)
        self.assertAlmostEqual(st["mean"], 4.0)
        self.assertAlmostEqual(st["median"], 4.0)
        self.assertAlmostEqual(st["ci95"][0], 4 - half, places=9)
        self.assertAlmostEqual(st["ci95"][1], 4 + half, places=9)
        self.assertEqual((st["min"], st["max"], st["n"]), (1, 7, 7))

    def test_t_quantiles_are_the_published_ones(self):
        # Catches: a table shifted by one entry, or a quantile past 30 degrees
        # of freedom smaller than the true one (an interval too narrow, a
        # "met" too early). Values from any Student's t table (97.5 %).
        self.assertEqual(verdicts.t975(1), 12.706)
        self.assertEqual(verdicts.t975(6), 2.447)
        self.assertEqual(verdicts.t975(30), 2.042)
        for df, true_t in ((35, 2.030), (45, 2.014), (100, 1.984), (1000, 1.962)):
            self.assertGreaterEqual(verdicts.t975(df), true_t, df)
        with self.assertRaises(ValueError):
            verdicts.t975(0)


class VerdictTest(unittest.TestCase):
    def test_at_least(self):
        # Catches: the old lenient rule ("met" when the interval merely
        # reaches the target), or the two sides of a "≥" target swapped.
        self.assertEqual(verdict(stats(1.02, 1.10), 1.0, False), MET)
        self.assertEqual(verdict(stats(1.00, 1.10), 1.0, False), MET)  # the target is on its own side
        self.assertEqual(verdict(stats(0.98, 1.10), 1.0, False), NOT_WORSE)
        self.assertEqual(verdict(stats(0.90, 1.00), 1.0, False), NOT_WORSE)
        self.assertEqual(verdict(stats(0.90, 0.99), 1.0, False), MISSED)

    def test_at_most(self):
        # Catches: "≤" judged as "≥" (at_most ignored), or "met" from the
        # interval's low end alone.
        self.assertEqual(verdict(stats(0.78, 0.87), 0.9, True), MET)
        self.assertEqual(verdict(stats(0.80, 0.90), 0.9, True), MET)
        self.assertEqual(verdict(stats(0.80, 0.95), 0.9, True), NOT_WORSE)
        self.assertEqual(verdict(stats(0.90, 0.95), 0.9, True), NOT_WORSE)
        self.assertEqual(verdict(stats(0.91, 0.95), 0.9, True), MISSED)

    def test_fewer_than_seven_pairs_get_no_verdict(self):
        # Catches: a verdict from 3 pairs (the old default of
        # bench/agent_vs_wrk.py), however far the interval is from the target.
        for n in (1, 2, 6):
            self.assertEqual(verdict(stats(2.0, 2.1, n), 1.0, False), TOO_FEW)
            self.assertEqual(verdict(stats(0.1, 0.2, n), 1.0, True), TOO_FEW)
        self.assertEqual(verdict(stats(2.0, 2.1, 7), 1.0, False), MET)
        self.assertEqual(verdict(stats(2.0, 2.1, 3), 1.0, False, what="runs"), "too few runs")

    def test_verdict_from_measured_values(self):
        # Catches: ratio_stats and verdict disagreeing on the interval (a
        # verdict from the range or the median): seven ratios with a median
        # of 1.01 (above 1.0) whose interval still reaches below it.
        st = ratio_stats([0.93, 0.97, 1.00, 1.01, 1.02, 1.05, 1.08])
        self.assertLess(st["ci95"][0], 1.0)
        self.assertEqual(verdict(st, 1.0, False), NOT_WORSE)
        st = ratio_stats([1.05, 1.06, 1.07, 1.08, 1.09, 1.10, 1.11])
        self.assertEqual(verdict(st, 1.0, False), MET)
        self.assertEqual(verdict(st, 1.0, True), MISSED)


if __name__ == "__main__":
    unittest.main()
