"""kvagg's app over a net_pcap trace in every (NetBuf, AggBuf) pair of memory regions: what the
scenarios that measure placement share (bench/scenarios/kvagg.py's matrix,
bench/scenarios/regions_advise.py)."""
import json
import os
import statistics
import subprocess
import time

import benchkit as bk

REGIONS = ["socket:0", "pages:4k", "pages:thp", "file:/dev/shm/kvagg_bench.{}"]


def checked(cmd, timeout=900):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-2000:]}")
    return p.stdout


def region_for(spec, use):
    return spec.format(use) if "{}" in spec else spec


def make_trace(tmp, frames, tuples, keys):
    pcap = os.path.join(tmp, "kvagg_trace.pcap")
    cmd = [bk.GEN, "--kind", "kvagg", "--write-pcap", pcap,
           "--count", str(frames), "--tuples", str(tuples), "--keys", str(keys),
           "--streams", "16"]
    checked(cmd)
    return pcap, " ".join(cmd)


def created(spec):
    # The app refuses a missing region file unless asked to create it.
    return spec + ",create" if spec.startswith("file:") else spec


def app_once(pcap, net, agg, keys, seconds, tmp):
    # --no-telemetry: with --no-shconf every process shares the default telemetry socket, and a
    # stuck process listening there blocks the EAL init of the next one.
    j = os.path.join(tmp, "app.json")
    if os.path.exists(j):
        os.unlink(j)
    cmd = ([bk.app_path("kvagg"), "-l", "0,1", "--no-huge", "-m", "1024",
           "--no-pci", "--no-shconf", "--no-telemetry", "--log-level=lib.eal:warning",
           f"--vdev=net_pcap0,rx_pcap={pcap},tx_pcap=/dev/null,infinite_rx=1", "--",
           "--netbuf", created(net), "--aggbuf", created(agg), "--keys", str(keys)] +
           bk.KVAGG_REPLAY + ["--duration", str(seconds), "--stats-period", "0", "--mbufs",
                              "16383", "--json", j])
    checked(cmd, timeout=seconds + 60)
    res = json.load(open(j))
    for spec in (net, agg):
        if spec.startswith("file:"):
            try:
                os.unlink(spec[5:].split(",")[0])
            except OSError:
                pass
    return res, cmd


def app_matrix(args, tmp):
    frames, tuples, keys = 8192, 32, 1 << 20
    pcap, gen_cmd = make_trace(tmp, frames, tuples, keys)
    regions = REGIONS if not args.quick else ["socket:0", "pages:thp"]
    cells = {}
    command = None
    started = time.time()
    # Repeats outermost: drift on a shared machine spreads over every cell alike.
    for _ in range(args.app_repeats):
        for net in regions:
            for agg in regions:
                n, a = region_for(net, "netbuf"), region_for(agg, "aggbuf")
                res, cmd = app_once(pcap, n, a, keys, args.seconds, tmp)
                command = command or cmd
                c = cells.setdefault((net, agg), {"net": n, "agg": a, "runs": []})
                c["runs"].append(res["mtuples_per_s"])
                c["netbuf"], c["aggbuf"] = res["netbuf"], res["aggbuf"]
                c["rx_mpps"] = res["rx_mpps"]
    out = []
    for c in cells.values():
        c["mtuples_per_s"] = statistics.median(c["runs"])
        c["min_mtuples_per_s"], c["max_mtuples_per_s"] = min(c["runs"]), max(c["runs"])
        out.append(c)
    best = max(out, key=lambda c: c["mtuples_per_s"])
    worst = min(out, key=lambda c: c["mtuples_per_s"])
    return {"trace": {"frames": frames, "tuples_per_packet": tuples, "keys": keys,
                      "command": gen_cmd},
            "command_example": " ".join(command).replace(pcap, "TRACE.pcap"),
            "seconds_per_run": args.seconds, "repeats": args.app_repeats, "cells": out,
            "best": {k: best[k] for k in ("net", "agg", "mtuples_per_s")},
            "worst": {k: worst[k] for k in ("net", "agg", "mtuples_per_s")},
            "best_over_worst": round(best["mtuples_per_s"] / worst["mtuples_per_s"], 3),
            "wall_s": round(time.time() - started, 1)}
