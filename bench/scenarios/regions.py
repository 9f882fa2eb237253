"""bench/run regions: linerate-regions (docs/regions.md) on this machine's regions: socket:0
(DPDK's hugepages when enough are free, else its --no-huge heap, 4 KiB pages: the JSON's facts
say which), pages:thp, pages:4k and a file: region under /dev/shm; the study's Fig. 5-8 as
bench/results/regions.json (with the CPU model) and regions.png, and the advice for kvagg at its
defaults (1 Mi keys, one worker).

  bench/run regions [--quick] [--max-size 256M] [--point-ms 50]
"""
import argparse
import os

import benchkit as bk
from regions_tool import measure
import regions_plot

TAKES_OPTIONS = True


def parser():
    ap = argparse.ArgumentParser(prog="bench/run regions")
    ap.add_argument("--quick", action="store_true", help="linerate-regions --quick (seconds)")
    ap.add_argument("--max-size", default="256M", help="largest working set")
    ap.add_argument("--point-ms", default="50", help="milliseconds a point")
    return ap


def run(args):
    opts = parser().parse_args(args.extra)
    shm = f"/dev/shm/linerate_regions.{os.getpid()}"
    regions = ["socket:0", "pages:thp", "pages:4k", f"file:{shm},create"]
    size = ["--quick"] if opts.quick else ["--max-size", opts.max_size, "--point-ms", opts.point_ms]
    try:
        doc, cmd, table = measure(size + ["--advise", "kvagg"] + regions)
    finally:
        if os.path.exists(shm):
            os.unlink(shm)
    print(table, flush=True)
    doc["description"] = __doc__.split("\n\n")[0]
    doc["tool_command"] = " ".join(cmd)
    doc["hugepages_free_at_start"] = bk.hugepages_free()
    doc["loadavg_1_5_15_at_end"] = list(os.getloadavg())
    doc["plot"] = regions_plot.plot(doc, os.path.join(bk.RESULTS, "regions.png"))
    doc["headline"] = headline(doc)
    return doc


def headline(doc):
    """Latency at 16 KiB (L1), 512 KiB (L2), 8 MiB and 256 MiB per region, 64 B stride; the
    advice."""
    out = {}
    for r in doc["regions"]:
        curve = min(r["latency"], key=lambda c: c["stride_bytes"])["points"]
        out[r["spec"]] = {f"latency_ns_at_{p['working_set_bytes'] >> 10}_kib": round(p["latency_ns"], 1)
                          for p in curve if p["working_set_bytes"] in (16 << 10, 512 << 10, 8 << 20, 256 << 20)}
    out["advice_kvagg"] = doc.get("advice", {}).get("app_args")
    return out
