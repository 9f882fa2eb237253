"""bench/run regions: linerate-regions (docs/regions.md) on this machine's regions: socket:0
(DPDK's hugepages when enough are free, else its --no-huge heap, 4 KiB pages: the JSON's facts
say which), pages:thp, pages:4k and a file: region under /dev/shm; the study's Fig. 5-8 as
bench/results/regions.json (with the CPU model) and regions.png, and the advice for kvagg at its
defaults (1 Mi keys, one worker).

  bench/run regions [--quick] [--max-size 256M] [--point-ms 50]
"""
import argparse
import json
import os
import subprocess
import tempfile

import benchkit as bk
import regions_plot

TAKES_OPTIONS = True
TOOL = os.path.join(bk.BUILD, "apps", "regions", "linerate-regions")


def parser():
    ap = argparse.ArgumentParser(prog="bench/run regions")
    ap.add_argument("--quick", action="store_true", help="linerate-regions --quick (seconds)")
    ap.add_argument("--max-size", default="256M", help="largest working set")
    ap.add_argument("--point-ms", default="50", help="milliseconds a point")
    return ap


def measure(tool_args, eal=None):
    """linerate-regions with `tool_args` (its own EAL defaults unless `eal`): its JSON and the
    command line."""
    with tempfile.TemporaryDirectory(prefix="regions_") as tmp:
        out = os.path.join(tmp, "regions.json")
        cmd = [TOOL] + (eal + ["--"] if eal else []) + ["--json", out] + tool_args
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
        with open(out) as f:
            return json.load(f), cmd, p.stdout


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
