"""bench/run capacity: cycles per packet of each app, and the cores line rate would take."""
import json
import os
import statistics
import subprocess

import benchkit as bk

RATES_GBPS = (10, 100, 200)


def cores_needed(cycles_per_packet, tsc_hz, frame_bytes, gbps):
    """Cores for line rate: frames/s at `gbps` (frame + preamble and gap, 20 B) x cycles each."""
    pps = gbps * 1e9 / ((frame_bytes + 20) * 8)
    return pps * cycles_per_packet / tsc_hz


def json_run(cmd, seconds):
    """Runs an app with --json for `seconds` (it stops itself); returns its JSON."""
    path = os.path.join(bk.TMP, "capacity.json")
    if os.path.exists(path):
        os.unlink(path)
    subprocess.run(cmd + ["--duration", str(seconds), "--stats-period", "0", "--json", path],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=seconds + 60)
    with open(path) as f:
        return json.load(f)


def cases():
    """(app, frame bytes with FCS, trace, app args) of every case."""
    out = []
    for size in (64, 512, 1518):
        trace = bk.write_pcap(f"cap_nfv{size}", "--count", "1024", "--kind", "nfv-mix", "--size",
                              str(size))
        out += [("l2reflect", size, trace, []), ("nfv", size, trace, [])]
    # kvagg frames: 80 B + 16 B per tuple beyond the first, + 4 B FCS.
    for tuples in (1, 27, 90):
        trace = bk.write_pcap(f"cap_kv{tuples}", "--kind", "kvagg", "--count", "8192", "--tuples",
                              str(tuples), "--keys", str(1 << 20), "--streams", "16")
        out.append(("kvagg", 84 + 16 * (tuples - 1), trace,
                     ["--keys", str(1 << 20), "--mbufs", "16383"] + bk.KVAGG_REPLAY))
    cs_trace = bk.write_pcap("cap_cs", "--kind", "clocksync", "--count", "1024")
    out.append(("clocksync", 88, cs_trace, ["--role", "master", "--timestamps", "sw"]))
    return out


def run(args):
    """cycles_per_packet of each app at three frame sizes, one worker, frames replayed from
    memory by net_pcap (infinite_rx; its RX copies every frame into an mbuf, work a NIC's DMA
    does not ask of the core, so these are upper bounds), and the cores each would need for 10,
    100 and 200 Gb/s at that size on this host (docs/capacity.md)."""
    eal = ["-l", "0,1", "--no-pci", "--no-huge", "-m", "1024", "--no-shconf", "--no-telemetry",
           "--log-level=lib.eal:warning"]
    out = {"description": run.__doc__, "runs": args.runs,
           "seconds_per_run": args.seconds, "rates_gbps": list(RATES_GBPS), "cases": []}
    for app, size, trace, app_args in cases():
        cmd = ([bk.app_path(app)] + eal +
               [f"--vdev=net_pcap0,rx_pcap={trace},infinite_rx=1", "--"] + app_args)
        per_run = [json_run(cmd, args.seconds) for _ in range(args.runs)]
        if any(j.get("duplicates") for j in per_run):  # cycles of dropping, not of the app's work
            raise RuntimeError(f"{app} {size} B: frames dropped as duplicates: {' '.join(cmd)}")
        cpp = statistics.median(j["cycles_per_packet"] for j in per_run)
        hz = per_run[0]["tsc_hz"]
        out["cases"].append({
            "app": app, "frame_bytes": size, "cycles_per_packet": cpp,
            "per_run_cycles_per_packet": [j["cycles_per_packet"] for j in per_run],
            "mpps_one_core": hz / cpp / 1e6 if cpp else 0, "tsc_hz": hz,
            "cores": {str(g): cores_needed(cpp, hz, size, g) for g in RATES_GBPS},
            "command": " ".join(cmd)})
    return out
