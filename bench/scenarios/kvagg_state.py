#!/usr/bin/env python3
"""kvagg --state: what checkpoints cost the worker, and what a client holds until durable.

1. Throughput, alternated in the same run: kvagg replaying a pcap from memory (net_pcap
   infinite_rx; 8192 frames x 32 tuples over 1 Mi keys; one worker on CPU 1, one 32 MiB table)
   without --state, with --state on /dev/shm and on a disk file, at the default checkpoint
   interval (250 ms). Per run, besides Mtuples/s (the goal: >= 0.9x without state), the worker
   thread's own CPU time and the time it waited for a CPU (/proc/PID/task/TID/schedstat, sampled
   every 10 ms), the control thread's CPU time, and the workers' copy time (the JSON's
   state.copy_total_us). Mtuples per second of the worker's own CPU time takes out what other
   processes on the shared machine took from it; the per-run ratios pair each run with the run
   without state just before it.
2. The checkpoint interval swept (50, 100, 250, 1000 ms) on /dev/shm: the same throughput
   figures, and, over a veth pair in namespaces made here, kvagg on net_af_packet (one worker on
   CPU 0) with the C++ client (build/examples/kvagg_load) sending from the peer namespace on
   CPU 1, paced to at most 10 datagrams (900 tuples) a millisecond: the datagrams the client holds for a resend (held(): not yet confirmed received, or
   received but not yet durable) sampled every 5 ms while it sends (--sample-held-ms), mean and
   max, next to the estimate datagrams/s x (interval / 2 + checkpoint time).
Writes bench/results/kvagg-state.json through bench/run kvagg-state.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import benchkit as bk  # noqa: E402
from kvagg_service import VethPair, load, result, with_kvagg  # noqa: E402

KVAGG = bk.app_path("kvagg")
DEFAULT_MS = 250
SWEEP_MS = (50, 100, 250, 1000)
TUPLES_PER_FRAME = 32
# The client's status() every this many unconfirmed datagrams (its default, 8192, is 5 s of
# datagrams at this client's rate: the held count would measure that, not durability).
STATUS_EVERY = 64
# The client sleeps 1 ms after every PACE tuples: at most 10 datagrams of 90 tuples a ms, the
# same rate at every interval.
PACE = 900


def run_sampled(cmd, timeout):
    """Runs cmd to its end; the last schedstat sample of each of its threads."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last, end = {}, time.time() + timeout
    while p.poll() is None:
        last.update(bk.thread_times(p.pid))
        if time.time() > end:
            p.kill()
            raise RuntimeError(f"{' '.join(cmd)}: no exit within {timeout} s")
        time.sleep(0.01)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}")
    return p.pid, last


def replay_once(pcap, state, checkpoint_ms, seconds):
    """kvagg replaying `pcap` for `seconds` (state None: without --state): its figures."""
    j_path = os.path.join(bk.TMP, "kvagg-state.json")
    cmd = ([KVAGG, "-l", "0,1", "--no-huge", "-m", "1024", "--no-pci", "--no-shconf",
           "--no-telemetry", "--log-level=lib.eal:warning",
           f"--vdev=net_pcap0,rx_pcap={pcap},tx_pcap=/dev/null,infinite_rx=1", "--"] +
           bk.KVAGG_REPLAY + ["--duration", str(seconds), "--stats-period", "0",
                              "--mbufs", "16383", "--json", j_path])
    if state:
        for f in (state, state + ".tmp"):
            if os.path.exists(f):
                os.unlink(f)
        cmd += ["--state", state, "--checkpoint-ms", str(checkpoint_ms)]
    pid, threads = run_sampled(cmd, seconds + 60)
    with open(j_path) as f:
        j = json.load(f)
    worker = [t for t in threads.values() if t[0].startswith("rte-worker")]
    # The main thread is the process id; the control thread is the other one named kvagg.
    control = [t for tid, t in threads.items() if t[0] == "kvagg" and tid != pid]
    st = j.get("state") or {}
    r = {"mtuples_per_s": j["mtuples_per_s"], "tuples": j["tuples"],
         "duration_s": j["duration_s"], "command": " ".join(cmd)}
    if worker:
        r["worker_cpu_s"] = worker[0][1] / 1e9
        r["worker_waited_s"] = worker[0][2] / 1e9
        r["mtuples_per_worker_cpu_s"] = j["tuples"] / worker[0][1] * 1e3
    if control:
        r["control_cpu_ms"] = max(t[1] for t in control) / 1e6
    if st:
        r["state"] = st
        r["copy_share_of_run"] = st["copy_total_us"] / 1e6 / j["duration_s"]
    return r


def summary(runs, none_runs=None):
    s = {"median_mtuples_per_s": bk.median_of(runs, "mtuples_per_s"),
         "median_mtuples_per_worker_cpu_s": bk.median_of(runs, "mtuples_per_worker_cpu_s"),
         "median_worker_waited_s": bk.median_of(runs, "worker_waited_s"),
         "median_control_cpu_ms": bk.median_of(runs, "control_cpu_ms"),
         "per_run_mtuples_per_s": [r["mtuples_per_s"] for r in runs],
         "per_run_mtuples_per_worker_cpu_s": [r.get("mtuples_per_worker_cpu_s") for r in runs]}
    if runs and "state" in runs[0]:
        s["median_copy_share_of_run"] = bk.median_of(runs, "copy_share_of_run")
        s["max_copy_us"] = max(r["state"]["max_copy_us"] for r in runs)
        s["median_last_copy_us"] = statistics.median(r["state"]["last_copy_us"] for r in runs)
        s["median_checkpoint_us"] = statistics.median(r["state"]["last_us"] for r in runs)
        s["file_bytes"] = runs[-1]["state"]["last_bytes"]
    if none_runs:
        s["median_of_run_ratios"] = statistics.median(
            r["mtuples_per_s"] / n["mtuples_per_s"] for r, n in zip(runs, none_runs))
        s["median_of_run_ratios_per_worker_cpu_s"] = statistics.median(
            r["mtuples_per_worker_cpu_s"] / n["mtuples_per_worker_cpu_s"]
            for r, n in zip(runs, none_runs)
            if "mtuples_per_worker_cpu_s" in r and "mtuples_per_worker_cpu_s" in n)
    s["last_command"] = runs[-1]["command"]
    return s


def throughput(pcap, where, runs, seconds):
    per = {k: [] for k in where}
    for _ in range(runs):
        for name, path in where.items():
            per[name].append(replay_once(pcap, path, DEFAULT_MS, seconds))
    res = {k: summary(v, None if k == "none" else per["none"]) for k, v in per.items()}
    for k in where:
        if k != "none":
            res[k]["ratio_of_medians"] = (res[k]["median_mtuples_per_s"]
                                          / res["none"]["median_mtuples_per_s"])
            res[k]["ratio_of_medians_per_worker_cpu_s"] = (
                res[k]["median_mtuples_per_worker_cpu_s"]
                / res["none"]["median_mtuples_per_worker_cpu_s"])
    return res, per


def held_once(ns, interval_ms, tuples, tmp):
    """kvagg --state on af_packet with --checkpoint-ms interval_ms, kvagg_load sampling held."""
    state = os.path.join("/dev/shm", f"kvagg-held-{os.getpid()}.state")
    for f in (state, state + ".tmp"):
        if os.path.exists(f):
            os.unlink(f)
    client = lambda: result(load(ns, "--tuples", tuples, "--keys", 100000, "--seed", interval_ms,
                                 "--sample-held-ms", 5, "--status-every", STATUS_EVERY,
                                 "--pace", PACE))
    try:
        c, kj, cmd = with_kvagg(ns, "af_packet", os.path.join(tmp, f"held-{interval_ms}.json"),
                                ["--state", state, "--checkpoint-ms", str(interval_ms)], client)
    finally:
        for f in (state, state + ".tmp"):
            if os.path.exists(f):
                os.unlink(f)
    dps = c["datagrams"] / c["send_s"]
    ckpt_s = kj["state"]["last_us"] / 1e6
    return {"datagrams_per_s": dps, "tuples_per_datagram": c["tuples_per_datagram"],
            "held_samples": c["held_samples"], "held_mean": c["held_mean"],
            "held_max": c["held_max"], "unconfirmed_mean": c["unconfirmed_mean"],
            "unconfirmed_max": c["unconfirmed_max"],
            "estimate_held_until_durable": dps * (interval_ms / 2000 + ckpt_s),
            "checkpoint_us": kj["state"]["last_us"], "checkpoints": kj["state"]["checkpoints"],
            "command": cmd}


def held_sweep(tuples):
    tmp = tempfile.mkdtemp(prefix="kvstate-held")
    out = {}
    with VethPair() as ns:
        for ms in SWEEP_MS:
            out[ms] = held_once(ns, ms, tuples, tmp)
    return out


def measure(runs, seconds):
    pcap = bk.write_pcap("kvagg_state", "--kind", "kvagg", "--count", "8192", "--tuples",
                         str(TUPLES_PER_FRAME), "--keys", str(1 << 20))
    disk_dir = os.environ.get("LINERATE_BENCH_DISK", "/var/tmp")
    where = {"none": None, "shm": "/dev/shm/kvagg-bench.state",
             "disk": os.path.join(disk_dir, "kvagg-bench.state")}
    load_before = open("/proc/loadavg").read().split()[:3]
    res, _ = throughput(pcap, where, runs, seconds)
    base = res["none"]["median_mtuples_per_s"]
    base_cpu = res["none"]["median_mtuples_per_worker_cpu_s"]
    sweep = []
    if os.geteuid() == 0:
        held = held_sweep(int(os.environ.get("KVSTATE_HELD_TUPLES", "5000000")))
    else:
        held = {}
    for ms in SWEEP_MS:
        r = replay_once(pcap, where["shm"], ms, seconds)
        sweep.append({"checkpoint_ms": ms, "mtuples_per_s": r["mtuples_per_s"],
                      "over_none": r["mtuples_per_s"] / base,
                      "mtuples_per_worker_cpu_s": r.get("mtuples_per_worker_cpu_s"),
                      "over_none_per_worker_cpu_s":
                          r.get("mtuples_per_worker_cpu_s", 0) / base_cpu,
                      "copy_share_of_run": r["copy_share_of_run"],
                      "checkpoints": r["state"]["checkpoints"],
                      "checkpoint_us": r["state"]["last_us"],
                      "worker_copy_us_last_max": [r["state"]["last_copy_us"],
                                                  r["state"]["max_copy_us"]],
                      "file_bytes": r["state"]["last_bytes"],
                      "client": held.get(ms, {"skipped": "needs root (veth, namespaces)"})})
    for p in where.values():
        if p and os.path.exists(p):
            os.unlink(p)
    headline = {}
    for k in ("shm", "disk"):
        headline[f"{k}_over_none"] = res[k]["ratio_of_medians"]
        headline[f"{k}_over_none_run_ratios"] = res[k]["median_of_run_ratios"]
        headline[f"{k}_over_none_per_worker_cpu_s"] = res[k]["ratio_of_medians_per_worker_cpu_s"]
        headline[f"{k}_copy_share_of_run"] = res[k]["median_copy_share_of_run"]
    headline["goal_0_9_met"] = min(headline["shm_over_none"], headline["disk_over_none"]) >= 0.9
    return {"description": __doc__, "runs": runs, "seconds_per_run": seconds,
            "checkpoint_ms": DEFAULT_MS, "disk_dir": disk_dir, "status_every": STATUS_EVERY,
            "loadavg_before": load_before,
            "loadavg_after": open("/proc/loadavg").read().split()[:3],
            "results": res, "sweep_shm": sweep, "headline": headline}


def run(args):
    return measure(max(1, args.runs), args.seconds)


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 3, 4.0), indent=2))
