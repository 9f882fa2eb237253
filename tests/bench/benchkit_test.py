#!/usr/bin/env python3
"""bench/lib/benchkit.py's per-second samples: a start-up 0 (testpmd's first stats line) is not a
rate, so a short run's median is its forwarding rate, not half of it."""
import os
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "lib"))
import benchkit as bk  # noqa: E402

TESTPMD_3S = """Port statistics ====================================
  RX-packets: 0          RX-missed: 0          RX-bytes:  0
  Throughput (since last show)
  Rx-pps:            0          Rx-bps:            0
Port statistics ====================================
  RX-packets: 144706370  RX-missed: 0          RX-bytes:  9261207680
  Throughput (since last show)
  Rx-pps:    144706370          Rx-bps:  74089661440
"""


class Steady(unittest.TestCase):
    def test_leading_zeros_are_start_up(self):
        self.assertEqual(bk.steady([0.0, 144.7]), [144.7])
        self.assertEqual(bk.steady([0.0, 0.0, 10.0, 11.0, 12.0]), [11.0, 12.0])

    def test_warm_up_skipped_only_where_enough_are_left(self):
        self.assertEqual(bk.steady([9.0, 10.0, 11.0]), [10.0, 11.0])
        self.assertEqual(bk.steady([9.0, 10.0]), [9.0, 10.0])

    def test_a_zero_after_the_start_is_a_sample(self):
        self.assertEqual(bk.steady([5.0, 10.0, 0.0, 10.0]), [10.0, 0.0, 10.0])

    def test_zeros_only_are_a_rate_of_zero(self):
        self.assertEqual(bk.steady([0.0, 0.0, 0.0]), [0.0, 0.0])


class MeasureAlternating(unittest.TestCase):
    def test_a_short_testpmd_run_is_not_halved(self):
        with mock.patch.object(bk, "run_for", return_value=TESTPMD_3S):
            res = bk.measure_alternating({"testpmd": (["testpmd"], bk.testpmd_mpps)}, 3, 3)
        self.assertEqual(bk.testpmd_mpps(TESTPMD_3S), [0.0, 144.70637])
        self.assertAlmostEqual(res["testpmd"]["median_mpps"], 144.70637)

    def test_a_run_that_never_forwards_is_zero(self):
        idle = "Port statistics" + TESTPMD_3S.split("Port statistics")[1]
        with mock.patch.object(bk, "run_for", return_value=idle * 3):
            res = bk.measure_alternating({"testpmd": (["testpmd"], bk.testpmd_mpps)}, 1, 3)
        self.assertEqual(res["testpmd"]["median_mpps"], 0.0)


if __name__ == "__main__":
    unittest.main()
