#!/usr/bin/env python3
"""clocksync benchmark: the bound ε (mean, p99.9) for probes 1 vs 4, idle vs under a flood of
background traffic, against the floor RTTmin/2 + ρ·T/2.

Master and client are two DPDK processes on one machine joined by net_memif; the client runs in
verification mode (5 ms off, 8 ppm fast), so each run also checks ε against the true offset
(violations must be 0). The flood comes from the traffic generator (build/bench/gen/gen, plain
UDP 64 B) on a second memif port of the master, polled by the same worker as the client's port:
memif ports are point to point, so "the same port" becomes "the same worker and loop". Without
the generator the flood cases are skipped.

The floor: right after a sync ε = δ/2 >= RTTmin/2, then ε grows by ρ for T (the sync period), so
ε averaged over a period cannot be below RTTmin/2 + ρ·T/2. Goals (issue 6): idle ε mean <= 1.1x
the floor; p99.9 under load <= 2x idle p99.9.

  bench/clocksync_bench.py [--duration S] [--repeats N] [--lcores M,C,G] [--flood-pps R]

Writes bench/results/clocksync.json (command lines, machine, load, every run, medians, goals).
Two cores shared with anything else make the numbers scheduling noise: look at `loadavg`.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("LINERATE_BUILD", os.path.join(ROOT, "build"))
RESULTS = os.path.join(ROOT, "bench", "results")

RHO_PPM = 10.0
SYNC_PERIOD_MS = 100.0


def eal(lcore, prefix, vdevs):
    # Separate processes: each its own --file-prefix (memif needs no shared config, telemetry
    # does); no hugepages so the bench runs anywhere.
    return (["-l", str(lcore), "--no-huge", "-m", "512", "--no-pci", f"--file-prefix={prefix}",
             "--log-level=lib.eal:warning"] + [f"--vdev={v}" for v in vdevs] + ["--"])


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def wait_for(path, text, proc, timeout=30):
    """Waits until the log at `path` holds `text` (the process must still be running)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(path) as f:
            if text in f.read():
                return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    with open(path) as f:
        sys.exit(f"waiting for '{text}' in {path}:\n{f.read()}")


def one_run(args, probes, flood, tag):
    """Runs master (+ generator) + client once; returns the figures of the run."""
    sock = f"/tmp/lr_csb_{tag}.sock"
    flood_sock = f"/tmp/lr_csb_{tag}_flood.sock"
    prefixes = [f"csbm{tag}", f"csbc{tag}", f"csbg{tag}"]
    jm, jc, jg = (f"/tmp/lr_csb_{tag}_{r}.json" for r in ("master", "client", "gen"))
    logs = [f"/tmp/lr_csb_{tag}_{r}.log" for r in ("master", "client", "gen")]
    m_lcore, c_lcore, g_lcore = args.lcores
    app = os.path.join(args.build, "apps", "clocksync", "clocksync")

    # The flood port first: the master starts its ports in order and waits for each link, and
    # a memif client that connects before the server's port started is refused for good.
    vdevs = [f"net_memif1,role=server,socket={flood_sock}"] if flood else []
    vdevs.append(f"net_memif0,role=server,socket={sock}")
    master = (
        [app] + eal(m_lcore, prefixes[0], vdevs) +
        ["--role", "master", "--stats-period", "0", "--link-wait", "30", "--json", jm])
    client = (
        [app] + eal(c_lcore, prefixes[1], [f"net_memif0,role=client,socket={sock}"]) +
        ["--role", "client", "--probes", str(probes), "--duration", str(args.duration),
         "--sync-period-ms", str(SYNC_PERIOD_MS), "--drift-bound-ppm", str(RHO_PPM),
         "--sim-offset-ns", "5000000", "--sim-drift-ppm", "8", "--stats-period", "0",
         "--json", jc])
    gen = None
    if flood:
        gen = ([args.gen] +
               eal(g_lcore, prefixes[2], [f"net_memif0,role=client,socket={flood_sock}"]) +
               ["--kind", "udp", "--size", "64", "--stats-period", "0", "--json", jg] +
               (["--rate-pps", str(args.flood_pps)] if args.flood_pps > 0 else []))

    procs = []

    def start(cmd, log):
        # Line-buffered stdout, so the readiness lines reach the log as they are printed.
        p = subprocess.Popen(["stdbuf", "-oL"] + cmd, stdout=open(log, "w"),
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        procs.append(p)
        return p

    try:
        m = start(master, logs[0])
        wait_for(logs[0], "netbuf", m)  # printed right before the ports start
        time.sleep(0.3)
        if gen:
            start(gen, logs[2])
            wait_for(logs[0], "port 0 (", m)  # the flood port is up: the client's starts
            time.sleep(0.3)
        c = start(client, logs[1])
        c.wait(timeout=args.duration + 60)
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(2)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for prefix in prefixes:
            shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
        for s in (sock, flood_sock):
            if os.path.exists(s):
                os.unlink(s)
    cj, mj, gj = read_json(jc), read_json(jm), read_json(jg) if flood else None
    outs = {}
    for path in logs:
        if os.path.exists(path):
            with open(path) as f:
                outs[path] = f.read()
            os.unlink(path)
    for path in (jm, jc, jg):
        if os.path.exists(path):
            os.unlink(path)
    if not cj or not cj.get("syncs"):
        sys.exit("clocksync client: no JSON or no sync\n" + "\n".join(outs.values()))

    floor = cj["rtt_ns"]["min"] / 2 + RHO_PPM * 1e-6 * SYNC_PERIOD_MS * 1e6 / 2
    run = {
        "epsilon_ns": cj["epsilon_ns"], "rtt_ns": cj["rtt_ns"], "syncs": cj["syncs"],
        "violations": cj["violations"], "timeouts": cj["timeouts"],
        "max_abs_error_ns": cj.get("max_abs_error_ns"), "floor_ns": floor,
        "mean_over_floor": cj["epsilon_ns"]["mean"] / floor if floor else None,
        "master_rx_packets": mj["rx_packets"] if mj else None,
        "master_not_clocksync": mj["drops"]["not_clocksync"] if mj else None,
        "master_duration_s": mj["duration_s"] if mj else None,
    }
    if gj:
        run["flood_tx_mpps"] = gj.get("tx_mpps")
    return run, {"master": master, "client": client, "gen": gen}


def median_of(runs, *path):
    values = []
    for r in runs:
        v = r
        for key in path:
            v = v.get(key) if isinstance(v, dict) else None
        if v is not None:
            values.append(v)
    return statistics.median(values) if values else None


def summarize(runs):
    return {
        "epsilon_mean_ns": median_of(runs, "epsilon_ns", "mean"),
        "epsilon_p999_ns": median_of(runs, "epsilon_ns", "p999"),
        "epsilon_max_ns": median_of(runs, "epsilon_ns", "max"),
        "rtt_min_ns": median_of(runs, "rtt_ns", "min"),
        "rtt_p50_ns": median_of(runs, "rtt_ns", "p50"),
        "floor_ns": median_of(runs, "floor_ns"),
        "mean_over_floor": median_of(runs, "mean_over_floor"),
        "syncs": median_of(runs, "syncs"),
        "violations_total": sum(r["violations"] for r in runs),
        "timeouts": median_of(runs, "timeouts"),
        "flood_tx_mpps": median_of(runs, "flood_tx_mpps"),
        "master_not_clocksync": median_of(runs, "master_not_clocksync"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=BUILD, help="build directory (default $LINERATE_BUILD "
                    "or build/)")
    ap.add_argument("--gen", default=None, help="generator binary (default BUILD/bench/gen/gen)")
    ap.add_argument("--duration", type=float, default=10.0, help="client seconds per run")
    ap.add_argument("--repeats", type=int, default=3, help="runs per case (medians reported)")
    ap.add_argument("--lcores", default=None,
                    help="lcores of master,client,generator (default 0,1,2; 0,1,0 on 2 cores)")
    ap.add_argument("--flood-pps", type=float, default=0,
                    help="flood rate in frames/s (default 0 = the generator's full rate)")
    ap.add_argument("--no-flood", action="store_true", help="idle cases only")
    ap.add_argument("--out", default=os.path.join(RESULTS, "clocksync.json"))
    args = ap.parse_args()

    loadavg = os.getloadavg()
    cores = os.cpu_count() or 1
    default = [0, 1 if cores > 1 else 0, 2 if cores > 2 else 0]
    args.lcores = [int(x) for x in args.lcores.split(",")] if args.lcores else default
    args.gen = args.gen or os.path.join(args.build, "bench", "gen", "gen")
    app = os.path.join(args.build, "apps", "clocksync", "clocksync")
    if not os.access(app, os.X_OK):
        sys.exit(f"{app} not built")
    flood_ok = not args.no_flood and os.access(args.gen, os.X_OK)
    if not args.no_flood and not flood_ok:
        print(f"note: {args.gen} not found: flood cases skipped", file=sys.stderr)

    loads = ["idle"] + (["flood"] if flood_ok else [])
    cases, commands = [], {}
    tag0 = f"{os.getpid()}"
    n = 0
    for load in loads:
        for probes in (1, 4):
            runs = []
            for _ in range(args.repeats):
                run, cmds = one_run(args, probes, load == "flood", f"{tag0}_{n}")
                n += 1
                runs.append(run)
                print(f"probes {probes} {load}: eps mean {run['epsilon_ns']['mean']:.0f} ns "
                      f"p99.9 {run['epsilon_ns']['p999']} ns, rtt min {run['rtt_ns']['min']} "
                      f"ns, floor {run['floor_ns']:.0f} ns, syncs {run['syncs']}, "
                      f"violations {run['violations']}", flush=True)
                commands[f"probes{probes}_{load}"] = cmds
            cases.append({"probes": probes, "load": load, "runs": runs,
                          "median": summarize(runs)})

    by = {(c["probes"], c["load"]): c["median"] for c in cases}
    goals = {}
    for probes in (1, 4):
        idle = by.get((probes, "idle"))
        flood = by.get((probes, "flood"))
        g = {"idle_mean_over_floor": idle["mean_over_floor"],
             "idle_mean_within_1.1x_floor": idle["mean_over_floor"] is not None
             and idle["mean_over_floor"] <= 1.1}
        if flood:
            ratio = (flood["epsilon_p999_ns"] / idle["epsilon_p999_ns"]
                     if idle["epsilon_p999_ns"] else None)
            g["flood_p999_over_idle_p999"] = ratio
            g["flood_p999_within_2x_idle"] = ratio is not None and ratio <= 2
        goals[f"probes{probes}"] = g

    result = {
        "scenario": "clocksync",
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"host": platform.node(), "cores": cores, "kernel": platform.release(),
                    "arch": platform.machine()},
        "loadavg_at_start": loadavg,
        "settings": {"duration_s": args.duration, "repeats": args.repeats,
                     "sync_period_ms": SYNC_PERIOD_MS, "drift_bound_ppm": RHO_PPM,
                     "lcores_master_client_gen": args.lcores,
                     "flood": "skipped (no generator)" if not flood_ok else
                     {"kind": "udp 64B", "rate_pps": args.flood_pps or "full"}},
        "floor": "rtt_min/2 + rho*T/2",
        "cases": cases,
        "goals": goals,
        "commands": commands,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps(goals, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
