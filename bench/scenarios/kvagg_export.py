"""bench/run kvagg-export: what `kvagg --export` costs and carries (docs/scale-out.md).

A Redis Cluster of six redis-server processes (three primaries, three replicas) on 127.0.0.1
(free ports, a scratch directory; stopped at the end). kvagg on a net_pcap port replaying a
trace of 1 Mi keys forever (one worker, --dup-window 0), --export-ms 1000:
1. rate: kvagg without --export against kvagg with it, alternated in the same run (Mtuples/s
   from each run's JSON); the export's throughput from the runs with it: keys per epoch over the
   last epoch's export time, and key deltas acknowledged per second of run;
2. backlog: one longer run with --metrics scraped every 0.5 s, every Redis node stopped
   (SIGSTOP) for 10 s in its middle: the backlog of epochs over time, its peak, and the seconds
   it took to drain after the nodes came back.
"""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import benchkit as bk

KEYS = 1 << 20
STOP_S = 10
METRICS_PORT = 9477
# A batch of a partition is 1/16 of an epoch (65 Ki keys here): one Lua script that takes longer
# than the default 1 s on a loaded 2-core machine, so its reply would time out and be retried.
TIMEOUT_MS = 5000


def node_port(taken):
    """A free port on 127.0.0.1 whose cluster bus (port + 10000) is a port too."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p <= 65535 - 10000 and p not in taken:
            return p


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                          text=True).stdout.strip()


def start_cluster(tmp):
    """Six nodes, `redis-cli --cluster create` with a replica each; (processes, ports)."""
    procs, ports = [], []
    for i in range(6):
        ports.append(node_port(ports))
        d = os.path.join(tmp, f"redis{i}")
        os.makedirs(d)
        procs.append(subprocess.Popen(
            ["redis-server", "--port", str(ports[-1]), "--bind", "127.0.0.1", "--dir", d,
             "--save", "", "--appendonly", "no", "--cluster-enabled", "yes",
             "--cluster-config-file", "nodes.conf", "--logfile", os.path.join(d, "log")]))
    if not all(bk.wait_for(lambda p=p: cli(p, "PING") == "PONG", 10) for p in ports):
        raise RuntimeError("redis-server did not answer in 10 s")
    subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
                    "--cluster-replicas", "1", "--cluster-yes"], check=True,
                   capture_output=True)
    if not bk.wait_for(lambda: all("cluster_state:ok" in cli(p, "CLUSTER", "INFO")
                                   for p in ports), 30):
        raise RuntimeError("the cluster is not ok after 30 s")
    return procs, ports


def kvagg_cmd(pcap, seconds, out, export):
    return ([bk.app_path("kvagg"), "-l", "0,1", "--no-pci",
             f"--vdev=net_pcap0,rx_pcap={pcap},infinite_rx=1", "--log-level=lib.eal:warning"] +
            bk.memory_args(bk.hugepages_free() >= 256, "bench_kvexport") +
            ["--", "--keys", str(2 * KEYS)] + bk.KVAGG_REPLAY + ["--stats-period", "1",
             "--duration", str(seconds), "--json", out] + export)


def rates(args, pcap, tmp, export):
    """Without and with --export, alternated; the export's figures of the runs with it."""
    jsons = {"kvagg": [], "kvagg_export": []}

    def variant(name, extra):
        out = os.path.join(tmp, name + ".json")

        def parse(_out):
            with open(out) as f:
                jsons[name].append(json.load(f))
            os.unlink(out)
            return [jsons[name][-1]["mtuples_per_s"]]
        return (kvagg_cmd(pcap, args.seconds, out, extra), parse)

    res = bk.measure_alternating({"kvagg": variant("kvagg", []),
                                  "kvagg_export": variant("kvagg_export", export)},
                                 args.runs, args.seconds + 2 * TIMEOUT_MS / 1000 + 10)
    for r in res.values():
        r.pop("samples_mpps", None)
    ex = [j["export"] for j in jsons["kvagg_export"]]
    res["export"] = {
        "per_run": ex,
        "keys_per_epoch": [e["keys"] / max(e["epochs"], 1) for e in ex],
        "last_epoch_keys_per_s": [e["keys"] / max(e["epochs"], 1) / (e["last_export_us"] / 1e6)
                                  for e in ex if e["last_export_us"]],
        "acknowledged_keys_per_s_of_run": [e["keys"] / j["duration_s"] for e, j in
                                           zip(ex, jsons["kvagg_export"])],
    }
    return res


def backlog_gauge():
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=1) as r:
            m = re.search(r"^linerate_kvagg_export_backlog_epochs\S* (\S+)$", r.read().decode(),
                          re.M)
            return float(m.group(1)) if m else None
    except OSError:
        return None


def backlog_under_stop(pcap, tmp, export, redis):
    """One run, every node SIGSTOPped for STOP_S in its middle; the backlog every 0.5 s."""
    seconds = 3 * STOP_S
    out = os.path.join(tmp, "backlog.json")
    p = subprocess.Popen(kvagg_cmd(pcap, seconds, out, export +
                                   ["--metrics", f"127.0.0.1:{METRICS_PORT}"]),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0, series, stopped = time.time(), [], None
    while p.poll() is None:
        t = time.time() - t0
        if stopped is None and t >= STOP_S:
            stopped = t
            for r in redis:
                r.send_signal(signal.SIGSTOP)
        if stopped is not None and stopped > 0 and t >= stopped + STOP_S:
            for r in redis:
                r.send_signal(signal.SIGCONT)
            stopped = -(stopped + STOP_S)  # the time the nodes came back, negated: done
        series.append([round(t, 2), backlog_gauge()])
        time.sleep(0.5)
    back = -stopped if stopped and stopped < 0 else None
    drained = next((t for t, b in series if back and t > back and b == 0), None)
    with open(out) as f:
        e = json.load(f)["export"]
    return {"stop_s": STOP_S, "series_s_epochs": series,
            "peak_epochs": max((b for _, b in series if b is not None), default=None),
            "drain_s_after_back": round(drained - back, 2) if drained else None,
            "errors": e["errors"], "backlog_full": e["backlog_full"], "backlog_at_end": e["backlog"]}


def run(args):
    tmp = tempfile.mkdtemp(prefix="bench_kvexport")
    pcap = bk.write_pcap("kvexport_1m", "--kind", "kvagg", "--count", "32768", "--tuples", "32",
                         "--keys", str(KEYS), "--streams", "16")
    redis, ports = start_cluster(tmp)
    try:
        export = ["--export", f"redis://127.0.0.1:{ports[0]}", "--export-ms", "1000",
                  "--export-timeout-ms", str(TIMEOUT_MS)]
        res = rates(args, pcap, tmp, export)
        res["backlog_under_stop"] = backlog_under_stop(pcap, tmp, export, redis)
    finally:
        for r in redis:
            r.send_signal(signal.SIGCONT)
            r.kill()
            r.wait()
    return {"keys": KEYS, "export_ms": 1000, "results": res,
            "headline": {"export_over_none": res["kvagg_export"]["median_mpps"] /
                         res["kvagg"]["median_mpps"]}}
