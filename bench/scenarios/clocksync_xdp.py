#!/usr/bin/env python3
"""clocksync's master nearest the wire: ε (mean, p99.9) with the XDP master (--datapath xdp:
apps/clocksync/xdp/clocksync.bpf.c answers in the veth's XDP hook) against the C++ master on AF_XDP (the
DPDK poll loop behind an AF_XDP socket), in the same run, alternated, idle and under a flood.

Both masters stamp from CLOCK_MONOTONIC (the XDP program's clock; the C++ master with
--sw-clock monotonic), on one end of a veth pair in its own network namespace, lcore 0; the
client runs on AF_XDP on the other end, lcore 1, in verification mode (5 ms off, 8 ppm fast,
--master-clock monotonic, which also makes its t4 the steering program's receive stamp), so
every run also checks ε against the true offset (violations must be 0); each run records the
one-way legs (up t2 - t1, down t4 - t3, in true time). The flood is the client's --background-pps (64-byte UDP frames to port 9, not clocksync):
both masters hand them to the kernel (XDP_PASS), which drops them.

On 2 cores the machine's other work competes with the busy-polling processes: each run records
how long each poller waited for its core (bench/lib/clocksync_pair.py's schedstat reading); the XDP master
has no poller, which is part of what is measured. On a shared machine start it in its own session at a higher
autogroup priority, as docs/clocksync.md's Benchmark section does for bench/scenarios/clocksync.py (the
JSON's settings.scheduling records it).

  bench/clocksync_xdp_bench.py [--duration S] [--repeats N] [--flood-pps R]

Writes bench/results/clocksync-xdp.json (command lines, machine with the CPU model, load, every
run, medians, the ratio XDP/AF_XDP of ε mean: the issue's goal is <= 0.6).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import benchkit as bk  # noqa: E402
import clocksync_pair as csb  # noqa: E402  (its pollers' wait, JSON reads, EAL arguments)

ROOT, BUILD, RESULTS = bk.ROOT, bk.BUILD, bk.RESULTS

# Each case: the master's options and the client's. xdp: --xdp-mode auto, which is generic (skb)
# on a veth; xdp_native: in the veth driver (its XDP_TX reaches the client's end, whose AF_XDP
# program turns its NAPI on); af_xdp: the C++ master on the same clock. The client takes t4 from
# the steering program's receive stamp; the *_loop_t4 cases read it in its poll loop instead
# (--no-rx-stamps), and the *_raw cases run both ends on their default clock,
# CLOCK_MONOTONIC_RAW, onto which the client converts the hook's CLOCK_MONOTONIC stamp. The
# *_xdp_tx cases give the client --xdp-tx: its requests leave from its interface's XDP layer
# (XDP_TX from a live-frames test run) with t1 the program's stamp, not through its AF_XDP
# socket; the native XDP master and the C++ master both drain XDP frames on their end (the
# generic master does not: its end has no NAPI).
MONO = ["--master-clock", "monotonic"]
CASES = {
    "xdp": (["--datapath", "xdp"], MONO),
    "xdp_native": (["--datapath", "xdp", "--xdp-mode", "native"], MONO),
    "xdp_loop_t4": (["--datapath", "xdp"], MONO + ["--no-rx-stamps"]),
    "af_xdp": (["--sw-clock", "monotonic"], MONO),
    "af_xdp_loop_t4": (["--sw-clock", "monotonic"], MONO + ["--no-rx-stamps"]),
    "af_xdp_raw": ([], []),
    "af_xdp_raw_loop_t4": ([], ["--no-rx-stamps"]),
    "xdp_native_xdp_tx": (["--datapath", "xdp", "--xdp-mode", "native"], MONO + ["--xdp-tx"]),
    "af_xdp_xdp_tx": (["--sw-clock", "monotonic"], MONO + ["--xdp-tx"]),
}


def one_run(args, net, master_name, flood, tag):
    """Case `master_name` (CASES) once on the veth pair `net`; the run's figures."""
    master_args, client_args = CASES[master_name]
    app = os.path.join(args.build, "apps", "clocksync", "clocksync")
    (jm, jc), logs = csb.run_files("csx", tag)
    prefixes = [f"csxm{tag}", f"csxc{tag}"]
    master = net.exec(net.dut_ns, [app] + csb.eal(0, prefixes[0], []) + [
        "--af-xdp", net.dut_if, "--role", "master", "--stats-period", "0",
        "--duration", str(args.duration + 6), "--json", jm] + master_args)
    client = net.exec(net.gen_ns, [app] + csb.eal(1, prefixes[1], []) + [
        "--af-xdp", net.gen_if, "--role", "client", "--duration", str(args.duration),
        "--sync-period-ms", str(csb.SYNC_PERIOD_MS), "--drift-bound-ppm", str(csb.RHO_PPM),
        "--sim-offset-ns", "5000000", "--sim-drift-ppm", "8",
        "--probe-timeout-ms", "80", "--stats-period", "0", "--json", jc] + client_args +
        (["--background-pps", str(args.flood_pps), "--background-size",
          str(csb.FLOOD_FRAME_BYTES)] if flood else []))
    procs = []
    try:
        m = csb.start_logged(master, logs[0], procs)
        csb.must_see(logs[0], "running", m)
        c = csb.start_logged(client, logs[1], procs)
        # The XDP master's process idles (its slow path gets nothing): only the client polls.
        pollers = {"client": c} if master_name.startswith("xdp") else {"master": m, "client": c}
        wait_share = csb.watch_pollers(pollers, c)
        c.wait(timeout=args.duration + 60)
        m.send_signal(2)
        m.wait(timeout=20)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for prefix in prefixes:
            subprocess.run(["rm", "-rf", f"/var/run/dpdk/{prefix}"])
    mj, cj, outs = csb.take_outputs([jm, jc], logs)
    if not cj or not cj.get("syncs") or not mj:
        sys.exit(f"{master_name}: no JSON or no sync\n" + "\n".join(outs))
    return {
        "master": master_name, "flood": flood,
        "epsilon_ns": cj["epsilon_ns"], "rtt_ns": cj["rtt_ns"], "syncs": cj["syncs"],
        "violations": cj["violations"], "timeouts": cj["timeouts"],
        "max_abs_error_ns": cj.get("max_abs_error_ns"), "one_way_ns": cj.get("one_way_ns"),
        "rx_stamps": cj.get("rx_stamps"), "rx_stamps_refused": cj.get("rx_stamps_refused"),
        "xdp_tx_requests": cj.get("xdp_tx_requests"),
        "responses": cj.get("responses"),
        "poller_wait_share": wait_share,
        "contended": max(wait_share.values(), default=0) > args.max_wait_share,
        "master_datapath": mj.get("datapath"), "master_tx_packets": mj.get("tx_packets"),
        "master_drops": mj.get("drops"), "master_xdp": mj.get("xdp"),
        "flood_sent": cj.get("background_frames") if flood else None,
    }, {"master": master, "client": client}


def summarize(runs):
    return {
        "runs": len(runs), "runs_contended": sum(r["contended"] for r in runs),
        "epsilon_mean_ns": bk.median_of(runs, "epsilon_ns", "mean"),
        "epsilon_p999_ns": bk.median_of(runs, "epsilon_ns", "p999"),
        "rtt_min_ns": bk.median_of(runs, "rtt_ns", "min"),
        "rtt_p50_ns": bk.median_of(runs, "rtt_ns", "p50"),
        "rtt_p99_ns": bk.median_of(runs, "rtt_ns", "p99"),
        "up_p50_ns": bk.median_of(runs, "one_way_ns", "up", "p50"),
        "down_p50_ns": bk.median_of(runs, "one_way_ns", "down", "p50"),
        "syncs": bk.median_of(runs, "syncs"), "timeouts": bk.median_of(runs, "timeouts"),
        "violations_total": sum(r["violations"] for r in runs),
        "rx_stamps_refused_total": sum(r["rx_stamps_refused"] or 0 for r in runs),
    }


def print_run(name, load, run):
    ow = run["one_way_ns"] or {}
    print(f"{name} {load}: eps mean {run['epsilon_ns']['mean']:.0f} ns p99.9 "
          f"{run['epsilon_ns']['p999']} ns, rtt min {run['rtt_ns']['min']} p50 "
          f"{run['rtt_ns']['p50']} ns, up/down p50 "
          f"{ow.get('up', {}).get('p50')}/"
          f"{ow.get('down', {}).get('p50')} ns, syncs {run['syncs']}, violations "
          f"{run['violations']}, poller wait "
          + ", ".join(f"{k} {v:.1%}" for k, v in run["poller_wait_share"].items()),
          flush=True)


def alternate(args, loads):
    """Every case under every load, `repeats` times, each run on a veth pair of its own:
    ({(case, load): runs}, {case_load: the last run's command lines})."""
    runs = {(m, load): [] for load in loads for m in CASES}
    commands = {}
    n = 0
    for _ in range(args.repeats):
        for load in loads:
            for name in CASES:
                with bk.VethNamespaces(f"x{os.getpid() % 1000}{n}") as net:
                    run, cmds = one_run(args, net, name, load == "flood", f"{os.getpid()}_{n}")
                n += 1
                runs[(name, load)].append(run)
                commands[f"{name}_{load}"] = [" ".join(c) for c in cmds.values()]
                print_run(name, load, run)
    return runs, commands


def ratios_of(cases, load):
    """The ratios of ε between the cases under one load."""
    med = {c: cases[f"{c}_{load}"]["median"] for c in CASES}
    eps = {c: med[c]["epsilon_mean_ns"] for c in CASES}
    out = {}
    for x in ("xdp", "xdp_native"):
        out[f"epsilon_mean_{x}_over_af_xdp"] = eps[x] / eps["af_xdp"]
        out[f"epsilon_p999_{x}_over_af_xdp"] = (med[x]["epsilon_p999_ns"] /
                                                med["af_xdp"]["epsilon_p999_ns"])
    # The same ratio with the client's t4 in its loop; and what the hook's t4 gives each
    # AF_XDP case (its ε mean over the loop's).
    out["epsilon_mean_xdp_over_af_xdp_loop_t4"] = eps["xdp_loop_t4"] / eps["af_xdp_loop_t4"]
    for c in ("xdp", "af_xdp", "af_xdp_raw"):
        out[f"epsilon_mean_{c}_rx_stamps_over_loop_t4"] = eps[c] / eps[f"{c}_loop_t4"]
    # Both masters with the client's requests sent by XDP_TX (--xdp-tx), and what that
    # gives each against the same master with requests through the AF_XDP socket.
    out["epsilon_mean_xdp_native_over_af_xdp_xdp_tx"] = (
        eps["xdp_native_xdp_tx"] / eps["af_xdp_xdp_tx"])
    out["epsilon_p999_xdp_native_over_af_xdp_xdp_tx"] = (
        med["xdp_native_xdp_tx"]["epsilon_p999_ns"] / med["af_xdp_xdp_tx"]["epsilon_p999_ns"])
    for c in ("xdp_native", "af_xdp"):
        out[f"epsilon_mean_{c}_xdp_tx_over_socket_tx"] = eps[f"{c}_xdp_tx"] / eps[c]
    return out


def goals_of(cases, ratios, loads):
    return {**{f"epsilon_mean_xdp_within_0.6x_af_xdp_{load}":
               ratios[load]["epsilon_mean_xdp_over_af_xdp"] <= 0.6 for load in loads},
            **{f"epsilon_mean_xdp_native_within_0.6x_af_xdp_client_xdp_tx_{load}":
               ratios[load]["epsilon_mean_xdp_native_over_af_xdp_xdp_tx"] <= 0.6
               for load in loads},
            "violations_total": sum(c["median"]["violations_total"] for c in cases.values())}


def measure(args):
    """Alternates the masters `repeats` times per load; the result document."""
    loads = ["idle"] + ([] if args.no_flood else ["flood"])
    loadavg = list(os.getloadavg())
    runs, commands = alternate(args, loads)
    cases = {f"{m}_{load}": {"runs": r, "median": summarize(r)} for (m, load), r in runs.items()}
    ratios = {load: ratios_of(cases, load) for load in loads}
    return {
        "headline": {load: {**{f"{m}_eps_mean_ns": cases[f"{m}_{load}"]["median"]["epsilon_mean_ns"]
                               for m in CASES},
                            **{f"{m}_eps_p999_ns": cases[f"{m}_{load}"]["median"]["epsilon_p999_ns"]
                               for m in CASES},
                            **ratios[load]} for load in loads},
        "goals": goals_of(cases, ratios, loads),
        "loadavg_1_5_15_at_start": loadavg, "loadavg_1_5_15_at_end": list(os.getloadavg()),
        "settings": {"duration_s": args.duration, "repeats": args.repeats,
                     "flood_pps": None if args.no_flood else args.flood_pps,
                     "sync_period_ms": csb.SYNC_PERIOD_MS, "drift_bound_ppm": csb.RHO_PPM,
                     "lcores": {"master": 0, "client": 1},
                     "link": "veth pair, each end in its own namespace, IPv6 off",
                     "scheduling": csb.scheduling()},
        "cases": cases, "commands": commands,
    }


def parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=BUILD)
    ap.add_argument("--duration", type=float, default=8.0, help="client seconds per run")
    ap.add_argument("--repeats", type=int, default=3, help="alternations (medians reported)")
    ap.add_argument("--flood-pps", type=float, default=1e5)
    ap.add_argument("--no-flood", action="store_true")
    ap.add_argument("--max-wait-share", type=float, default=0.05)
    ap.add_argument("--out", default=os.path.join(RESULTS, "clocksync-xdp.json"))
    return ap


def run(args):
    """bench/run clocksync-xdp."""
    return measure(parser().parse_args(csb.bench_run_options(args, 5)))


def main():
    args = parser().parse_args()
    result = measure(args)
    result.update({"scenario": "clocksync-xdp", "command": " ".join(sys.argv),
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                       timespec="seconds"),
                   "machine": bk.machine()})
    bk.write_json(args.out, result)
    print(json.dumps(result["headline"], indent=2))
    print(f"wrote {os.path.relpath(args.out, ROOT)}")


if __name__ == "__main__":
    main()
