#!/usr/bin/env python3
"""timesource benchmark (bench/run timesource): what reading the exported time costs, and what
bound a reader gets through the page against the client's own.

1. tt_bench: ns per call of tt_now, tt_clock_now and the page read alone against
   clock_gettime(CLOCK_MONOTONIC_RAW), alternated in one process (medians of --runs), with the
   page idle and rewritten at 1 kHz by another thread.
2. A clocksync pair over memif (bench/scenarios/clocksync.py's run: 8-slot rings, verification mode,
   4 probes per round) with --export, and a reader process (tests/clocksync/tt_probe, C) calling
   tt_now 1e5 times over the run: the reader's ε (half the interval) against the client's ε
   samples, and the calls whose interval missed the true (raw-clock) time, which must be 0.

Writes bench/results/timesource.json through bench/run.
"""
import json
import os
import subprocess

import benchkit as bk

import clocksync_pair  # noqa: E402  (its master + client run)


class PairArgs:
    """The settings clocksync_pair.one_run reads."""
    def __init__(self, build, duration):
        self.build = build
        self.duration = duration
        self.lcores = [0, 1]
        self.flood_pps = 0
        self.max_wait_share = 0.05


def tt_cost(build, runs, writer_hz):
    out = subprocess.run([os.path.join(build, "bench", "timesource", "tt_bench"), "--runs",
                          str(runs), "--writer-hz", str(writer_hz)], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    j = json.loads(out.strip().splitlines()[-1])
    j.pop("sink", None)
    return j


def page_vs_client(build, duration, repeats):
    runs = []
    for i in range(repeats):
        page = f"lrtt_bench_{os.getpid()}_{i}"
        reader = ["env", f"LINERATE_TT={page}", os.path.join(build, "tests", "clocksync",
                  "tt_probe"), "100000", str(int((duration - 2) * 1000)), "10000"]
        try:
            run, cmds = clocksync_pair.one_run(
                PairArgs(build, duration), 4, False, f"tts{os.getpid()}_{i}",
                client_extra=["--export", page], reader=reader)
        finally:
            if os.path.exists(f"/dev/shm/{page}"):
                os.unlink(f"/dev/shm/{page}")
        r = run["reader"] or {}
        eps = run["epsilon_ns"]
        run["page_over_client"] = {
            "epsilon_p50": r["epsilon_ns"]["p50"] / eps["p50"] if r and eps["p50"] else None,
            "epsilon_max": r["epsilon_ns"]["max"] / eps["max"] if r and eps["max"] else None,
        }
        print(f"page vs client: reader eps p50 {r.get('epsilon_ns', {}).get('p50')} ns, client "
              f"p50 {eps['p50']} ns; reader max {r.get('epsilon_ns', {}).get('max')}, client max "
              f"{eps['max']}; outside {r.get('outside')} of {r.get('ok')}; violations "
              f"{run['violations']}", flush=True)
        runs.append(run)
    med = lambda *path: bk.median_of(runs, *path)  # noqa: E731
    return {
        "command": cmds, "runs": runs,
        "median": {
            "reader_epsilon_p50_ns": med("reader", "epsilon_ns", "p50"),
            "client_epsilon_p50_ns": med("epsilon_ns", "p50"),
            "epsilon_p50_page_over_client": med("page_over_client", "epsilon_p50"),
            "epsilon_max_page_over_client": med("page_over_client", "epsilon_max"),
        },
        "outside_total": sum((r["reader"] or {}).get("outside", 0) for r in runs),
        "reader_calls_total": sum((r["reader"] or {}).get("ok", 0) for r in runs),
        "violations_total": sum(r["violations"] for r in runs),
    }


def run(args):
    build, runs = bk.BUILD, max(3, args.runs)
    result = {
        "tt_cost_idle_page": tt_cost(build, runs, 0),
        "tt_cost_page_written_1khz": tt_cost(build, runs, 1000),
        "page_vs_client": page_vs_client(build, max(6.0, args.seconds * 1.5),
                                         max(1, min(args.runs, 3))),
        "loadavg_at_end": os.getloadavg(),
    }
    idle = result["tt_cost_idle_page"]
    result["headline"] = {
        "tt_now_ns": idle["ns_per_call"]["tt_now"]["median"],
        "clock_gettime_ns": idle["ns_per_call"]["clock_gettime"]["median"],
        "tt_now_over_clock_gettime": idle["ratio_to_clock_gettime"]["tt_now"],
        "tt_now_over_clock_gettime_1khz_writer":
            result["tt_cost_page_written_1khz"]["ratio_to_clock_gettime"]["tt_now"],
        **result["page_vs_client"]["median"],
        "outside_total": result["page_vs_client"]["outside_total"],
    }
    return result
