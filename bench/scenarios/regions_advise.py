"""bench/run regions-advise: is `linerate-regions --advise kvagg` right on this machine today?
The advice for kvagg's matrix trace (1 Mi keys, one worker) from figures measured now under the
matrix's own EAL memory (--no-huge: socket:0 is DPDK's heap on 4 KiB pages there), then kvagg's
NetBuf x AggBuf matrix (bench/run kvagg's app_matrix, the same four regions) right after; the
advised cell's Mtuples/s against the best cell's, and the cells' run-to-run spread (the noise).
Within noise: advised / best >= 1 / (median over cells of max/min of its runs).

  bench/run regions-advise [--quick] [--seconds S] [--runs N]
"""
import argparse
import os
import statistics
import tempfile

import kvagg_matrix as kb
from regions_tool import measure

TAKES_OPTIONS = True
# The matrix's EAL memory, with the tool's two worker lcores (the main lcore only sleeps).
EAL = ["--lcores=0@(0,1),1@0,2@1", "--no-huge", "-m", "1024", "--no-pci", "--no-shconf",
       "--no-telemetry", "--log-level=lib.eal:warning"]


def matrix_region(spec, kb):
    """The matrix's name of a region the advice names: the same spec, or for a file: region the
    matrix's (its file is per buffer)."""
    if spec.startswith("file:"):
        return next(r for r in kb.REGIONS if r.startswith("file:"))
    return next(r for r in kb.REGIONS if r == spec)


def run(args):
    ap = argparse.ArgumentParser(prog="bench/run regions-advise")
    ap.add_argument("--quick", action="store_true", help="two regions, one run a cell")
    opts = ap.parse_args(args.extra)
    regions = kb.REGIONS[:] if not opts.quick else ["socket:0", "pages:thp"]
    probe = [r.format("probe") + (",create" if r.startswith("file:") else "") for r in regions]
    try:
        doc, cmd, _ = measure(
            ["--figures", "latency,sequential", "--strides", "64", "--max-size", "64M",
             "--point-ms", "20" if opts.quick else "50", "--advise", "kvagg", "--keys",
             str(1 << 20)] + probe, EAL)
    finally:
        for p in probe:
            if p.startswith("file:") and os.path.exists(p[5:].split(",")[0]):
                os.unlink(p[5:].split(",")[0])
    advice = doc["advice"]
    net, agg = matrix_region(advice["netbuf"], kb), matrix_region(advice["aggbuf"], kb)
    margs = argparse.Namespace(app_repeats=1 if opts.quick else max(1, min(args.runs, 5)),
                               seconds=1.5, quick=opts.quick)
    with tempfile.TemporaryDirectory(prefix="regions_advise_") as tmp:
        matrix = kb.app_matrix(margs, tmp)
    return verdict(advice, cmd, matrix, net, agg)


def verdict(advice, cmd, matrix, net, agg):
    cells = {(c["net"], c["agg"]): c for c in matrix["cells"]}
    def names(cell_region, region):  # a cell names its file: region with the buffer's file
        return cell_region == region or (region.startswith("file:") and cell_region.startswith("file:"))
    advised = next(c for c in matrix["cells"] if names(c["net"], net) and names(c["agg"], agg))
    best = max(matrix["cells"], key=lambda c: c["mtuples_per_s"])
    spread = statistics.median(c["max_mtuples_per_s"] / c["min_mtuples_per_s"]
                               for c in cells.values())
    ratio = advised["mtuples_per_s"] / best["mtuples_per_s"]
    return {"description": __doc__.split("\n\n")[0], "advice": advice,
            "advice_command": " ".join(cmd),
            "advised_cell": {k: advised[k] for k in ("net", "agg", "mtuples_per_s", "runs")},
            "best_cell": {k: best[k] for k in ("net", "agg", "mtuples_per_s", "runs")},
            "advised_over_best": round(ratio, 3), "cell_max_over_min_median": round(spread, 3),
            "within_noise": ratio >= 1 / spread, "matrix": matrix,
            "headline": {"advised": advice["app_args"], "best": f"{best['net']} x {best['agg']}",
                         "advised_over_best": round(ratio, 3),
                         "noise_max_over_min": round(spread, 3), "within_noise": ratio >= 1 / spread}}
