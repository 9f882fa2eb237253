#!/usr/bin/env python3
"""kvagg benchmark: million tuples per second per core, kvagg against in-memory baselines measured
in the same run, and the Net-X x Agg-Y region matrix of the full app.

1. kernel sweeps (build/bench/kvagg/kvagg_bench, one process, one core, EAL --no-huge): kvagg's
   kernel on an in-memory trace of kvagg frames (parse + duplicate window + table: `ours`,
   `ours_rx_csum` (the port's checksum verdict instead of software checksums), `ours_direct`,
   `ours_shared`) against the same tuples already decoded, summed by
   (a) `plain`: the same AggTable loop with no packets (the ceiling), `array` (a u64 array, for
   reference), `lines` (one random line read-modify-write per tuple over the table's footprint:
   the memory ceiling of any table that size, docs/kvagg.md "Why not 3x"), (b) std::unordered_map,
   (c) tbb::concurrent_hash_map. Sweeps: tuples per packet
   (1, 8, 32, 89 at 1 Mi keys) and distinct keys (1 Ki .. 16 Mi at 32 tuples), then the AggBuf in
   socket:0, pages:4k, pages:thp and file:/dev/shm (kernel only, 1 Mi and 16 Mi keys).
2. app matrix: kvagg itself on a net_pcap port replaying a gen trace forever (infinite_rx), one
   worker, --duration S, Mtuples/s from its --json; NetBuf (--netbuf) x AggBuf (--aggbuf) over
   the same four regions. The replay repeats sequence numbers, so --dup-window 0 there.

Goals (issue 5): ours/plain >= 0.8 and ours/unordered_map >= 3. Issue 27's ours/plain >= 0.5 at 1
tuple per packet and 1 Mi keys is a reference figure now, not a goal (issue 38: the plain loop
reads no packets; kvagg at 1 tuple is measured against l2reflect by bench/run scaling). Writes bench/results/kvagg.json
(commands, machine, date, every figure, ratios, best/worst of the matrix) and
bench/results/kvagg_sweep.png, kvagg_matrix.png (gnuplot).

  bench/scenarios/kvagg.py [--repeats N] [--app-repeats N] [--seconds S] [--quick] [--skip-app]

Without hugepages (the default here) socket:0 is DPDK's --no-huge heap: 4 KiB pages, like
pages:4k. Two shared cores make absolute numbers noise: read the ratios, which come from
interleaved runs in the same process (kernel) or back-to-back runs (matrix).
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import benchkit as bk  # noqa: E402
from kvagg_matrix import REGIONS, app_matrix, checked, region_for  # noqa: E402

BUILD, RESULTS, ROOT = bk.BUILD, bk.RESULTS, bk.ROOT

GOAL_PLAIN = 0.8
GOAL_UMAP = 3.0
# ours/plain at 1 tuple per packet, 1 Mi keys: issue 27's goal, retired by issue 38 (the plain
# loop reads no packets, so it bounds the table, not the app: docs/perf-notes/kvagg.md). Kept
# as a reference figure; the app's goal at 1 tuple is against l2reflect on the same trace and
# port (bench/run scaling).
REFERENCE_ONE_TUPLE = 0.5


# ---- 1. kernel sweeps ----

def kernel_sweeps(args, tmp):
    out = os.path.join(tmp, "kernel.json")
    cmd = [os.path.join(BUILD, "bench", "kvagg", "kvagg_bench"),
           "--repeats", str(args.repeats), "--passes", str(args.passes),
           "--sweep-region", args.sweep_region,
           "--trace-tuples", args.trace_tuples, "--regions",
           ",".join(region_for(r, "aggbuf") for r in REGIONS), "--json", out]
    if args.quick:
        cmd += ["--tuples", "8,32", "--keys", "1K,1M", "--region-keys", "1M"]
    started = time.time()
    log = checked(cmd)
    res = json.load(open(out))
    res["command"] = " ".join(cmd)
    res["wall_s"] = round(time.time() - started, 1)
    res["log"] = log.splitlines()
    return res


def rate(rows, variant, t, k):
    for r in rows:
        if r["variant"] == variant and r["tuples_per_packet"] == t and r["keys"] == k:
            return r["mtuples_per_s"]
    return None


def kernel_ratios(res):
    rows = res["sweep"]
    points = sorted({(r["tuples_per_packet"], r["keys"]) for r in rows})
    table = []
    for t, k in points:
        ours = rate(rows, "ours", t, k)
        entry = {"tuples_per_packet": t, "keys": k, "ours_mtuples_per_s": ours}
        for base in ("plain", "array", "lines", "unordered_map", "tbb_chm"):
            b = rate(rows, base, t, k)
            if ours and b:
                entry[f"ours/{base}"] = round(ours / b, 3)
        lines, umap = rate(rows, "lines", t, k), rate(rows, "unordered_map", t, k)
        if lines and umap:
            entry["lines/unordered_map"] = round(lines / umap, 3)
        rx = rate(rows, "ours_rx_csum", t, k)
        p = rate(rows, "plain", t, k)
        if rx and p:
            entry["ours_rx_csum/plain"] = round(rx / p, 3)
        for other in ("ours_direct", "ours_shared"):
            o = rate(rows, other, t, k)
            if o and ours:
                entry[f"{other}/ours"] = round(o / ours, 3)
        table.append(entry)
    return table


def region_table(res):
    return [{"region": r["region"], "variant": r["variant"], "keys": r["keys"],
             "tuples_per_packet": r["tuples_per_packet"], "mtuples_per_s": r["mtuples_per_s"],
             "placement": r["placement"]} for r in res["regions"]]


# ---- 2. app matrix ----

# ---- plots ----

def count_label(n):
    for unit, shift in (("Mi", 20), ("Ki", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def plot_sweep(result, tmp):
    """The kernel sweeps: Mtuples/s against keys and against tuples per packet."""
    rows = result["kernel"]["sweep"]
    variants = ["ours", "ours_rx_csum", "ours_direct", "ours_shared", "plain", "array", "lines",
                "unordered_map", "tbb_chm"]
    pivot_t = 32
    pivot_k = 1 << 20
    keys = sorted({r["keys"] for r in rows if r["tuples_per_packet"] == pivot_t})
    tuples = sorted({r["tuples_per_packet"] for r in rows if r["keys"] == pivot_k})
    kd, td = os.path.join(tmp, "keys.dat"), os.path.join(tmp, "tuples.dat")

    with open(kd, "w") as f:
        for k in keys:
            f.write(f"{k} {count_label(k)} " + " ".join(str(rate(rows, v, pivot_t, k) or "NaN")
                                                         for v in variants) + "\n")
    with open(td, "w") as f:
        for t in tuples:
            f.write(f"{t} {t} " + " ".join(str(rate(rows, v, t, pivot_k) or "NaN")
                                           for v in variants) + "\n")
    sweep_png = os.path.join(RESULTS, "kvagg_sweep.png")
    lines = ", ".join(f"'{{f}}' u 1:{i + 3}:xtic(2) w lp t '{v}'" for i, v in enumerate(variants))
    region = result["kernel"].get("sweep_region", "")
    script = f"""set terminal pngcairo size 1200,500 font ',10' noenhanced
set output '{sweep_png}'
set multiplot layout 1,2 title 'kvagg kernel vs baselines: Mtuples/s on one core, AggBuf in {region}'
set grid
set key top right
set yrange [0:*]
set logscale x 2
set xlabel 'distinct keys ({pivot_t} tuples/packet)'
set ylabel 'Mtuples/s'
plot {lines.replace('{f}', kd)}
unset logscale x
set xlabel 'tuples per packet ({count_label(pivot_k)} keys)'
plot {lines.replace('{f}', td)}
unset multiplot
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    return sweep_png


def plot_matrix(matrix, tmp):
    """The app matrix: Mtuples/s per NetBuf x AggBuf region."""
    nets = []
    aggs = []
    for c in matrix["cells"]:
        if c["net"] not in nets:
            nets.append(c["net"])
        if c["agg"] not in aggs:
            aggs.append(c["agg"])
    md = os.path.join(tmp, "matrix.dat")
    short = lambda s: s.split(",")[0].replace("/dev/shm/kvagg_bench.", "shm/")
    with open(md, "w") as f:
        f.write("net " + " ".join(f'"Agg {short(a)}"' for a in aggs) + "\n")
        for n in nets:
            vals = [next(c["mtuples_per_s"] for c in matrix["cells"]
                         if c["net"] == n and c["agg"] == a) for a in aggs]
            f.write(f'"Net {short(n)}" ' + " ".join(f"{v:.2f}" for v in vals) + "\n")
    matrix_png = os.path.join(RESULTS, "kvagg_matrix.png")
    cols = ", ".join(f"'' u {i + 2} t col" for i in range(1, len(aggs)))
    script = f"""set terminal pngcairo size 900,500 font ',10' noenhanced
set output '{matrix_png}'
set title 'kvagg app (net_pcap replay, 1 worker): Mtuples/s, NetBuf x AggBuf region (best/worst {matrix["best_over_worst"]})'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid ytics
set key outside right
set ylabel 'Mtuples/s'
set yrange [0:*]
plot '{md}' u 2:xtic(1) t col{', ' + cols if cols else ''}
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    return matrix_png


def plot(result, tmp):
    """The PNGs of the result (none without gnuplot)."""
    if not shutil.which("gnuplot"):
        return []
    pngs = [plot_sweep(result, tmp)]
    if result.get("app_matrix"):
        pngs.append(plot_matrix(result["app_matrix"], tmp))
    return pngs


def headline(result):
    ratios = result["kernel_ratios"]
    pick = [r for r in ratios if r["tuples_per_packet"] == 32 and r["keys"] == 1 << 20]
    h = {}
    if pick:
        p = pick[0]
        # lines/unordered_map: what a table of this footprint could reach at best (the memory
        # ceiling), to read ours/unordered_map against.
        h["at_32_tuples_1Mi_keys"] = {k: p.get(k) for k in ("ours_mtuples_per_s", "ours/plain",
                                                             "ours/unordered_map",
                                                             "ours/tbb_chm", "ours/lines",
                                                             "lines/unordered_map")}
    one = [r for r in ratios if r["tuples_per_packet"] == 1 and r["keys"] == 1 << 20]
    if one:
        # BenchBF3's 1 tuple per packet against the plain loop, with the checksums in software
        # (ours) and with the port's verdict (ours_rx_csum): a reference, not a goal.
        h["at_1_tuple_1Mi_keys"] = {k: one[0].get(k) for k in ("ours_mtuples_per_s", "ours/plain",
                                                                "ours_rx_csum/plain")}
        h["reference_1_tuple_plain_0.5_reached"] = (one[0].get("ours/plain", 0) >=
                                                    REFERENCE_ONE_TUPLE)
    for key in ("ours/plain", "ours/unordered_map", "ours/tbb_chm", "ours/lines",
                "lines/unordered_map"):
        vals = [r[key] for r in ratios if key in r]
        if vals:
            h[key] = {"min": min(vals), "median": statistics.median(vals), "max": max(vals)}
    big = [r for r in ratios if r["tuples_per_packet"] >= 32]
    h["goal_plain_0.8_met_at_32plus_tuples"] = all(r.get("ours/plain", 0) >= GOAL_PLAIN
                                                   for r in big) if big else None
    h["goal_unordered_map_3x_met_at_32plus_tuples"] = all(
        r.get("ours/unordered_map", 0) >= GOAL_UMAP for r in big) if big else None
    if result.get("app_matrix"):
        m = result["app_matrix"]
        h["matrix_best"] = m["best"]
        h["matrix_worst"] = m["worst"]
        h["matrix_best_over_worst"] = m["best_over_worst"]
        # How far apart the runs of one cell are: a best/worst below this is noise.
        h["matrix_cell_max_over_min_median"] = round(statistics.median(
            c["max_mtuples_per_s"] / c["min_mtuples_per_s"] for c in m["cells"]), 3)
    return h


def scenario(args):
    """The whole benchmark as one result dict (bench/run can call this)."""
    with tempfile.TemporaryDirectory(prefix="kvagg_bench_") as tmp:
        result = {"loadavg_1_5_15_at_start": list(os.getloadavg()),
                  "description": __doc__.split("\n\n")[0],
                  "goals": {"ours/plain": GOAL_PLAIN, "ours/unordered_map": GOAL_UMAP},
                  "references": {"ours/plain at 1 tuple, 1 Mi keys": REFERENCE_ONE_TUPLE},
                  "repeats": args.repeats}
        result["kernel"] = kernel_sweeps(args, tmp)
        result["kernel_ratios"] = kernel_ratios(result["kernel"])
        result["regions"] = region_table(result["kernel"])
        if not args.skip_app:
            result["app_matrix"] = app_matrix(args, tmp)
        result["headline"] = headline(result)
        os.makedirs(RESULTS, exist_ok=True)
        result["plots"] = [os.path.relpath(p, ROOT) for p in plot(result, tmp)]
        result["loadavg_1_5_15_at_end"] = list(os.getloadavg())
    return result


def run(args):
    """bench/run's entry: its --runs caps the repeats (3 and 5: about 3.5 minutes); per-run
    seconds stay kvagg's own (bench/run's default 4 s x 16 cells would be far too long)."""
    return scenario(argparse.Namespace(repeats=max(1, min(args.runs, 3)),
                                       app_repeats=max(1, min(args.runs, 5)), passes=2,
                                       trace_tuples="2M", sweep_region="pages:thp",
                                       seconds=1.5, quick=False, skip_app=False))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="kernel: runs per figure (median)")
    ap.add_argument("--app-repeats", type=int, default=5, help="app: runs per matrix cell (median)")
    ap.add_argument("--passes", type=int, default=2, help="kernel: timed passes per run")
    ap.add_argument("--trace-tuples", default="2M", help="kernel: tuples in the trace")
    ap.add_argument("--sweep-region", default="pages:thp",
                    help="kernel sweeps: the AggBuf's region (THP stands in for the hugepages "
                         "a production run has)")
    ap.add_argument("--seconds", type=float, default=1.5, help="app: seconds per matrix run")
    ap.add_argument("--quick", action="store_true", help="fewer points (a smoke run)")
    ap.add_argument("--skip-app", action="store_true", help="kernel sweeps only")
    args = ap.parse_args()
    started = time.time()
    result = {"scenario": "kvagg", "command": " ".join(["bench/scenarios/kvagg.py"] +
                                                       sys.argv[1:]),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": {**bk.machine(), "loadavg_at_start": os.getloadavg()}}
    result.update(scenario(args))
    result["wall_s"] = round(time.time() - started, 1)
    result["machine"]["loadavg_at_end"] = os.getloadavg()
    path = os.path.join(RESULTS, "kvagg.json")
    bk.write_json(path, result)
    print(f"kvagg: wrote {os.path.relpath(path, ROOT)} in {result['wall_s']} s")
    print(json.dumps(result["headline"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
