#!/usr/bin/env python3
"""bench/scenarios/clock_peers.py's acceptance criteria and its --runs summary, on made-up
figures (no namespaces, no daemons): each criterion passes, fails, or is None where a peer is
missing, and --runs counts each across the runs."""
import os
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "scenarios"))
import clock_peers as cp  # noqa: E402


def row(variant, load, p50, p99, bound_p50=None, over=None):
    system = "chrony" if variant.startswith("chrony") else variant
    return {"variant": variant, "system": system, "load": load,
            "error_abs_ns": {"p50": p50, "p99": p99, "max": p99},
            "bound_ns": {"p50": bound_p50, "p99": bound_p50} if bound_p50 else None,
            "error_over_bound": over}


def measurement(cs_p50=10, cs_p99=100, cs_bound=500, over=0):
    runs = []
    for load in ("idle", "flood"):
        runs += [row("clocksync_best", load, cs_p50, cs_p99, cs_bound, over),
                 row("chrony", load, 150, 800, 6000, 0), row("ptp4l", load, 60, 400)]
    return {"runs": runs, "table": {}, "description": "d", "settings": {}}


class Criteria(unittest.TestCase):
    def test_all_met(self):
        c = cp.criteria(measurement(), ["idle", "flood"])
        self.assertEqual(len(c), 7)
        self.assertTrue(all(v is True for v in c.values()), c)

    def test_each_limit_is_inclusive_and_fails_past_it(self):
        at = cp.criteria(measurement(cs_p50=15, cs_p99=200, cs_bound=600), ["idle"])
        self.assertTrue(all(v is True for v in at.values()), at)
        past = cp.criteria(measurement(cs_p50=16, cs_p99=201, cs_bound=601, over=1), ["idle"])
        self.assertEqual(list(past.values()), [False, False, False, False])

    def test_a_missing_peer_is_none_not_a_pass(self):
        m = measurement()
        m["runs"] = [r for r in m["runs"] if r["system"] != "chrony"]
        c = cp.criteria(m, ["idle"])
        self.assertIsNone(c["idle: clocksync bound p50 <= 0.1x chrony's"])
        self.assertTrue(c["idle: clocksync |error| p99 <= 0.5x ptp4l's"])

    def test_the_daemons_beside_spinners_are_criteria_of_their_own_where_measured(self):
        m = measurement()
        for load in ("idle", "flood"):
            m["runs"] += [row("chrony_busy", load, 80, 600, 4999, 0),
                          row("ptp4l_busy", load, 10, 200)]
        c = cp.criteria(m, ["idle"])
        self.assertEqual(len(c), 6)
        self.assertTrue(c["idle: clocksync |error| p99 <= 0.5x ptp4l_busy's"])  # 100 <= 100
        self.assertFalse(c["idle: clocksync bound p50 <= 0.1x chrony_busy's"])  # 500 > 499.9
        self.assertTrue(c["idle: clocksync bound p50 <= 0.1x chrony's"])

    def test_the_defaults_against_chrony_in_the_same_run(self):
        m = measurement()
        m["runs"] += [row("clocksync_default", "idle", 90, 800, 4000, 0),
                      row("clocksync_default", "flood", 95, 801, 4000, 0)]
        c = cp.criteria(m, ["idle", "flood"])
        self.assertEqual(len(c), 9)
        self.assertTrue(c["idle: clocksync_default |error| p99 <= chrony's"])  # 800 <= 800
        self.assertFalse(c["flood: clocksync_default |error| p99 <= chrony's"])  # 801 > 800

    def test_only_the_variants_asked_for_have_criteria(self):
        m = measurement()
        m["runs"] = [r for r in m["runs"] if r["system"] == "chrony"]
        for load in ("idle", "flood"):
            m["runs"].append(row("clocksync_default", load, 90, 700, 4000, 0))
        c = cp.criteria(m, ["idle", "flood"], ["clocksync_default", "chrony"])
        self.assertEqual(c, {"idle: clocksync_default |error| p99 <= chrony's": True,
                             "idle: 0 clocksync errors beyond its bound": True,
                             "flood: clocksync_default |error| p99 <= chrony's": True,
                             "flood: 0 clocksync errors beyond its bound": True})
        # Asked for but skipped (chrony not installed): None, not a pass.
        m["runs"] = [r for r in m["runs"] if r["system"] != "chrony"]
        c = cp.criteria(m, ["idle"], ["clocksync_default", "chrony"])
        self.assertIsNone(c["idle: clocksync_default |error| p99 <= chrony's"])


class Runs(unittest.TestCase):
    def test_counts_each_criterion_over_the_runs(self):
        figures = iter([measurement(), measurement(cs_p99=300), measurement(cs_p50=20)])
        opts = cp.options(["--runs", "3", "--no-flood"])
        with mock.patch.object(cp, "measure", lambda _: next(figures)):
            out = cp.measure_runs(opts)
        self.assertEqual(out["runs_of_the_bench"], 3)
        self.assertEqual(len(out["measurements"]), 3)
        self.assertEqual(out["criteria"]["idle: clocksync |error| p99 <= 0.5x ptp4l's"],
                         {"passed": 2, "failed": 1, "runs": 3})
        self.assertEqual(out["criteria"]["idle: clocksync |error| p50 <= 15 ns"],
                         {"passed": 2, "failed": 1, "runs": 3})
        self.assertEqual(out["criteria"]["idle: clocksync bound p50 <= 0.1x chrony's"],
                         {"passed": 3, "failed": 0, "runs": 3})

    def test_a_subset_of_variants_counts_its_own_criteria(self):
        def defaults(p99):
            m = measurement()
            m["runs"] = [r for r in m["runs"] if r["system"] == "chrony"]
            m["runs"] += [row("clocksync_default", load, 90, p99, 4000, 0)
                          for load in ("idle", "flood")]
            return m
        figures = iter([defaults(700), defaults(900), defaults(800)])
        opts = cp.options(["--runs", "3", "--variants", "clocksync_default,chrony",
                           "--result-name", "clock-peers-defaults"])
        self.assertEqual(opts.result_name, "clock-peers-defaults")
        with mock.patch.object(cp, "measure", lambda _: next(figures)):
            out = cp.measure_runs(opts)
        self.assertEqual(sorted(out["criteria"]), [
            "flood: 0 clocksync errors beyond its bound",
            "flood: clocksync_default |error| p99 <= chrony's",
            "idle: 0 clocksync errors beyond its bound",
            "idle: clocksync_default |error| p99 <= chrony's"])
        self.assertEqual(out["criteria"]["flood: clocksync_default |error| p99 <= chrony's"],
                         {"passed": 2, "failed": 1, "runs": 3})

    def test_bench_runs_own_runs_option_counts_only_where_given(self):
        args = mock.Mock(runs=5)  # bench/run's default
        with mock.patch.object(sys, "argv", ["bench/run", "clock-peers", "--quick"]):
            self.assertIsNone(cp.runs_given(args))
        args.runs = 3
        with mock.patch.object(sys, "argv", ["bench/run", "clock-peers", "--runs", "3"]):
            self.assertEqual(cp.runs_given(args), 3)

    def test_client_legs_halve_the_difference(self):
        legs = cp.client_legs({"violations": 0, "syncs": 9, "one_way_ns": {
            "up": {"min": 560, "p50": 727, "p99": 7871},
            "down": {"min": 350, "p50": 463, "p99": 3167}}})
        self.assertEqual(legs["leg_bias_ns"], {"p50": 132.0, "min": 105.0})
        self.assertIsNone(cp.client_legs(None))


if __name__ == "__main__":
    unittest.main()
