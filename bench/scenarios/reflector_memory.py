"""bench/run reflector-memory: the DPA study's Fig. 11 here, l2reflect's round trip against
--touch PCT and --lookups N, per memory region."""
import argparse
import json
import os
import statistics

import benchkit as bk

TAKES_OPTIONS = True  # bench/run reflector-memory --quick ...: options() below

# gen's --size counts the 4-byte FCS: 1028 makes the 1 KiB frames of the study (1024 bytes in
# memory, 128 words at --touch 100).
FRAME_SIZE = 1028
PCTS = (0, 25, 50, 75, 100)
LOOKUPS = (0, 1, 2, 4, 8, 16, 32)
# socket:0 is DPDK's hugepage heap: only where hugepages are free (64 x 2 MiB at least).
HUGE_PAGES_NEEDED = 64


def options(extra):
    ap = argparse.ArgumentParser(prog="bench/run reflector-memory")
    ap.add_argument("--quick", action="store_true",
                    help="PCT 0 and 100, N 0, 4 and 16 only: a check that it runs")
    ap.add_argument("--rate-pps", type=float, default=20000,
                    help="gen's paced rate, far below what l2reflect takes at the most work")
    ap.add_argument("--lookup-kind", default="dependent", choices=("dependent", "independent"))
    ap.add_argument("--lookup-buffer", default="8M", help="as the study: 8 MiB")
    ap.add_argument("--regions", help="comma-separated region specs (default: pages:4k, "
                                      "pages:thp, and socket:0 where hugepages are free)")
    return ap.parse_args(extra)


def regions(opts):
    if opts.regions:
        return opts.regions.split(",")
    out = ["pages:4k", "pages:thp"]
    if bk.hugepages_free() >= HUGE_PAGES_NEEDED:
        out.append("socket:0")
    return out


def run(args):
    """gen (memif client, core 1) -> l2reflect (memif server, core 0) -> gen, 1 KiB frames paced
    far below saturation: the round trip gen stamps (p50, p99, mean) and l2reflect's busy cycles
    per frame, (a) against --touch PCT with no lookups, (b) against --lookups N (the kind
    --lookup-kind says, from an 8 MiB buffer) with no touch; the packet pool (--netbuf) and the
    lookup buffer (--lookup-region) both in the region under test. Median over runs per point."""
    opts = options(list(getattr(args, "extra", [])))
    runs = max(1, min(args.runs, 3))
    pcts = (0, 100) if opts.quick else PCTS
    lookups = (0, 4, 16) if opts.quick else LOOKUPS
    out = {"description": run.__doc__, "runs": runs, "seconds_per_run": args.seconds,
           "frame_bytes": FRAME_SIZE - 4, "rate_pps": opts.rate_pps,
           "lookup_kind": opts.lookup_kind, "lookup_buffer": opts.lookup_buffer,
           "loadavg_1_5_15_at_start": list(os.getloadavg()), "regions": {}}
    for region in regions(opts):
        res = {"touch": {}, "lookups": {}}
        for pct in pcts:
            res["touch"][str(pct)] = point(region, pct, 0, opts, runs, args.seconds)
        for n in lookups:
            res["lookups"][str(n)] = (res["touch"]["0"] if n == 0 else
                                      point(region, 0, n, opts, runs, args.seconds))
        out["regions"][region] = res
    out["loadavg_1_5_15_at_end"] = list(os.getloadavg())
    out["plot"] = plot(out)
    return out


def point(region, pct, n, opts, runs, seconds):
    """One (PCT, N) on `region`, `runs` times: medians of the round trip and the DUT's cycles."""
    samples = [one_run(region, pct, n, opts, seconds) for _ in range(runs)]
    res = {key: statistics.median(s[key] for s in samples)
           for key in ("rtt_p50_ns", "rtt_p99_ns", "rtt_mean_ns", "cycles_per_packet")}
    res["per_run"] = samples
    print(f"  reflector-memory {region} touch {pct} lookups {n}: RTT p50 {res['rtt_p50_ns']:.0f} "
          f"ns, p99 {res['rtt_p99_ns']:.0f} ns, {res['cycles_per_packet']:.0f} cycles/frame",
          flush=True)
    return res


def one_run(region, pct, n, opts, seconds):
    tag = bk.next_tag()
    sock = os.path.join(bk.TMP, f"reflector-memory-{tag}.sock")
    dut_json = os.path.join(bk.TMP, f"dut{tag}.json")
    huge = region.startswith("socket:")
    work = ["--touch", str(pct)]
    if n:
        work += ["--lookups", str(n), "--lookup-kind", opts.lookup_kind,
                 "--lookup-buffer", opts.lookup_buffer, "--lookup-region", region]
    dut = ([bk.app_path("l2reflect"), "-l", "0", f"--vdev=net_memif0,role=server,socket={sock}",
            "--no-pci", "--log-level=lib.eal:warning"] + bk.memory_args(huge, f"bdut{tag}") +
           ["--", "--stats-period", "0", "--json", dut_json, "--netbuf", region] + work)
    gen = ([bk.GEN, "-l", "1", f"--vdev=net_memif0,role=client,socket={sock}", "--no-pci",
            "--log-level=lib.eal:warning"] + bk.memory_args(False, f"bgen{tag}") +
           ["--", "--kind", "udp", "--size", str(FRAME_SIZE), "--rate-pps", str(int(opts.rate_pps)),
            "--duration", str(seconds), "--drain", "0.5", "--stats-period", "0",
            "--json", os.path.join(bk.TMP, f"gen{tag}.json")])
    _, g = bk.memif_run(dut, ": running", gen, sock, tag, seconds)
    with open(dut_json) as f:
        d = json.load(f)
    lat = g.get("latency_ns") or {}
    if not lat.get("count"):
        raise RuntimeError(f"no frame came back: {g}")
    return {"rtt_p50_ns": lat["p50"], "rtt_p99_ns": lat["p99"], "rtt_mean_ns": lat["mean"],
            "returned": g.get("returned"), "lost": g.get("lost"),
            "cycles_per_packet": d["cycles_per_packet"],
            "touched_bytes": sum(w.get("touched_bytes", 0) for w in d["workers"]),
            "lookups": sum(w.get("lookups", 0) for w in d["workers"]),
            "lookup_region": d.get("memory_work", {}).get("lookup_region"), "netbuf": d["netbuf"]}


def plot(out):
    """PNG, the study's Fig. 11 shape: RTT p50 (top) and l2reflect's cycles per frame (bottom)
    against PCT (left) and N (right), a line per region (gnuplot)."""
    panels = []
    for key, label in (("rtt_p50_ns", "round trip p50 (µs)"),
                       ("cycles_per_packet", "l2reflect cycles per frame")):
        for sweep, xlabel in (("touch", "--touch PCT (% of each 1 KiB frame read)"),
                              ("lookups", f"--lookups N ({out['lookup_kind']}, 8-byte reads "
                                          f"from {out['lookup_buffer']})")):
            lines = []
            for region, res in out["regions"].items():
                name = f"reflector_memory_{key}_{sweep}_{region.replace(':', '_')}.dat"
                data = os.path.join(bk.TMP, name)
                with open(data, "w") as f:
                    for x, r in res[sweep].items():
                        f.write(f"{x} {r[key] / 1000 if key == 'rtt_p50_ns' else r[key]}\n")
                lines.append(f"'{data}' using 1:2 with linespoints title '{region}'")
            panels.append(f"set xlabel '{xlabel}'\nset ylabel '{label}'\nplot " +
                          ", ".join(lines) + "\n")
    png = os.path.join(bk.RESULTS, "reflector-memory.png")
    load = "-".join(f"{x:.1f}" for x in (out["loadavg_1_5_15_at_start"][0],
                                        out["loadavg_1_5_15_at_end"][0]))
    script = (f"set multiplot layout 2,2 title 'l2reflect over memif, {out['frame_bytes']} B "
              f"frames at {out['rate_pps']:.0f} pps: memory work per frame (load {load})'\n"
              "set key top left\nset grid\nset yrange [0:*]\n" + "".join(panels) +
              "unset multiplot\n")
    return bk.plot(png, script, size="1200,800", font_pt=9)
