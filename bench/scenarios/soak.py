#!/usr/bin/env python3
"""bench/run soak: kvagg at full rate for a long time, with everything a deployment does to it.

Two network namespaces joined by a veth pair, made here and removed at the end (also on
failure). kvagg (one worker, CPU 0) on one end through AF_XDP (--af-xdp, the steering program),
with --state on a disk file in a temporary directory under /tmp (a checkpoint every 250 ms)
and --metrics on 127.0.0.1 inside its namespace; gen (bench/gen, CPU 1) on the other end through AF_XDP sends kvagg traffic (32
tuples a frame, 1 Mi keys, 16 streams) at full rate for the soak's length and writes the sums
it sent (--expect). While it runs:
  - every 2 s: kvagg's resident memory (VmRSS) and its worker thread's CPU and wait times
    sampled, /metrics scraped over 127.0.0.1 (a reader in kvagg's namespace, urllib) and the
    DPDK telemetry socket asked /linerate/stats;
  - every 30 s: kvagg's veth end set down, 1 s later up again (kvagg must receive again after
    each: its /metrics rx counter grows before the next flap; the delay is reported).
At the end gen stops, kvagg is stopped with SIGINT, and the soak checks:
  - resident memory flat: the last sample against the first after warm-up (the first quarter
    of the run), growth at most 1 MiB, and the largest sample;
  - mempool in use 0 at exit (kvagg's exit JSON);
  - every frame accounted for: gen's frames sent = kvagg's frames received (kvagg's drops by
    reason are part of those) + the port's drops + the veth pair's drops (ip -s link:
    the frames the link downs cost; the kernel counts the port's ring-full drops on kvagg's end
    too, so those count once) + the frames kvagg's end handed to the kernel's own stack; the XDP
    program's redirected = received + the port's drops; and what kvagg's end received = what
    the XDP program saw + what reached the stack. The stack's frames are counted by an AF_PACKET
    tap on kvagg's end (it sees frames after XDP). They are frames a link down catches: the veth
    takes the XDP program off its queues before it stops their NAPI, and a frame polled in
    between goes to the stack without XDP (a few per run; the stack drops them, destined to
    another MAC, and no veth counter says so). SOAK_FLAP_EVERY_S shortens the 30 s between
    flaps to look at them.
  - sums: kvagg's per-key sums (--dump) equal gen's --expect exactly when no frame was lost;
    otherwise no key above what was sent, and the tuples missing = 32 x the frames lost.
Seconds: --seconds of bench/run is the run length here when given explicitly (SOAK_SECONDS
overrides; default 600). Writes bench/results/soak.json.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import benchkit as bk

KVAGG = bk.app_path("kvagg")
GEN = bk.GEN
TUPLES = 32
SAMPLE_S = 2.0
FLAP_EVERY_S = float(os.environ.get("SOAK_FLAP_EVERY_S", 30.0))
FLAP_DOWN_S = 1.0
METRICS_PORT = 9464
EAL = ["--no-huge", "-m", "1024", "--no-pci", "--log-level=lib.eal:warning",
       "--log-level=pmd.net.af_xdp:warning"]

# Runs in kvagg's namespace: prints one JSON line per scrape of /metrics (the counters the
# soak follows), until killed.
SCRAPER = r'''
import json, sys, time, urllib.request
url, every = sys.argv[1], float(sys.argv[2])
want = ("linerate_mempool_in_use", "linerate_rx_packets_total", "linerate_link_downs_total",
        "linerate_link_up", "linerate_uptime_seconds")
while True:
    t = time.time()
    try:
        text = urllib.request.urlopen(url, timeout=2).read().decode()
        got = {}
        for line in text.splitlines():
            name = line.split("{")[0].split(" ")[0]
            if name in want:
                got[name] = got.get(name, 0) + float(line.rsplit(" ", 1)[1])
        print(json.dumps({"t": t, "ok": True, **got}), flush=True)
    except Exception as e:
        print(json.dumps({"t": t, "ok": False, "error": str(e)}), flush=True)
    time.sleep(max(0, every - (time.time() - t)))
'''


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def worker_times(pid):
    """kvagg's worker thread so far: ms on a CPU and ms waiting for one (schedstat). A stretch
    without receives is then starvation (wait grows), a busy worker (run grows) or a blocked
    one (neither)."""
    threads = bk.thread_times(pid)
    # With one lcore (-l 0) the worker loop runs on the main thread.
    worker = [t for t in threads.values() if t[0].startswith("rte-worker")] or \
        [t for tid, t in threads.items() if tid == pid]
    if not worker:
        return {}
    _, run_ns, wait_ns = worker[0]
    return {"worker_run_ms": run_ns // 1000000, "worker_wait_ms": wait_ns // 1000000}


def veth_drops(ns, dev):
    out = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show", dev], capture_output=True,
                         text=True, check=True).stdout
    st = json.loads(out)[0]["stats64"]
    return {"rx_dropped": st["rx"]["dropped"], "tx_dropped": st["tx"]["dropped"],
            "rx_packets": st["rx"]["packets"], "tx_packets": st["tx"]["packets"]}


def read_csv(path):
    sums = {}
    with open(path) as f:
        for line in f:
            k, v = line.split(",")
            sums[int(k)] = int(v)
    return sums


# Runs in kvagg's namespace: counts the frames the kernel's own stack receives on kvagg's veth
# end (an AF_PACKET tap sees them after XDP: frames the steering program passed, or that
# arrived while a link flap had the program detached); prints the count when terminated.
STACK_TAP = r'''
import signal, socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind((sys.argv[1], 0))
seen = {"in": 0, "out": 0}
def done(*_):
    st = s.getsockopt(263, 6, 8)  # SOL_PACKET, PACKET_STATISTICS: packets, drops
    print(seen["in"], seen["out"], int.from_bytes(st[4:], "little"), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
print("ready", flush=True)
while True:
    try:
        _, addr = s.recvfrom(64)
    except OSError:  # ENETDOWN while the link is down
        continue
    seen["out" if addr[2] == socket.PACKET_OUTGOING else "in"] += 1
'''


def commands(net, tmp, seconds):
    prefix = f"{net.dut_ns}kv"
    kv = ([KVAGG, "-l", "0", f"--file-prefix={prefix}"] + EAL +
          ["--", "--af-xdp", net.dut_if, "--keys", "1M", "--state", os.path.join(tmp, "soak.state"),
           "--metrics", f"127.0.0.1:{METRICS_PORT}", "--stats-period", "10",
           "--json", os.path.join(tmp, "kvagg.json"), "--dump", os.path.join(tmp, "kvagg.csv")])
    gen = ([GEN, "-l", "1", f"--file-prefix={net.gen_ns}gen"] + EAL +
           ["--", "--af-xdp", net.gen_if, "--kind", "kvagg", "--tuples", str(TUPLES),
            "--keys", str(1 << 20), "--streams", "16", "--duration", str(seconds),
            "--stats-period", "10", "--expect", os.path.join(tmp, "gen.csv"),
            "--json", os.path.join(tmp, "gen.json")])
    return prefix, kv, gen


def flap(net, downs):
    subprocess.run(["ip", "-n", net.dut_ns, "link", "set", net.dut_if, "down"], check=True)
    time.sleep(FLAP_DOWN_S)
    subprocess.run(["ip", "-n", net.dut_ns, "link", "set", net.dut_if, "up"], check=True)
    downs.append(time.time())


def soak_loop(net, kv, gen, prefix, seconds):
    """Samples and link flaps until gen ends: (RSS samples, telemetry answered per read, link
    flap times, start time)."""
    rss, tele, flaps = [], [], []
    start = time.time()
    next_flap = start + FLAP_EVERY_S
    while gen.poll() is None:
        t = time.time()
        rss.append({"t": round(t - start, 1), "kib": rss_kib(kv.pid), **worker_times(kv.pid)})
        j = bk.telemetry(prefix, "/linerate/stats")
        tele.append(j is not None)
        if t >= next_flap and t < start + seconds - FLAP_EVERY_S / 2:
            flap(net, flaps)
            next_flap += FLAP_EVERY_S
        if kv.poll() is not None:
            raise RuntimeError(f"kvagg exited {kv.returncode} during the soak")
        time.sleep(max(0, SAMPLE_S - (time.time() - t)))
    return rss, tele, flaps, start


def accounting(gj, kj, veth_kv, veth_gen):
    """gen's frames sent against where they went. gen's veth end delivered them to kvagg's end
    or dropped them (tx_dropped: the link down); kvagg's end handed each it received to the XDP
    program or, while a link down had the program detached, to the kernel's stack (the tap's
    count). The AF_XDP port's drops (its rx ring full) are frames the program redirected that
    kvagg never saw; the veth counts them in kvagg's end's rx_dropped, and the stack's drops of
    the tap's frames may land there too: rx_dropped is checked, not added."""
    sent = gj["tx_packets"]
    received = kj["rx_packets"]
    port = sum(v["total"] for v in kj["port_drops"].values())
    kernel = veth_gen["tx_dropped"]
    xdp = kj.get("xdp") or {}
    redirected = xdp.get("redirected")
    seen_by_xdp = sum(xdp.get(k, 0) for k in ("redirected", "passed", "unclaimed"))
    stack = veth_kv.get("stack_received", 0)
    return {"gen_sent": sent, "kvagg_received": received, "kvagg_dropped_by_reason": kj["dropped"],
            "kvagg_drops": {k: v for k, v in kj["drops"].items() if v},
            "port_drops": port, "port_drop_kinds": {k: v for d in kj["port_drops"].values()
                                                    for k, v in d.items()
                                                    if k not in ("total", "name") and v},
            "kernel_drops": kernel, "xdp_redirected": redirected,
            "veth": {"kvagg_end": veth_kv, "gen_end": veth_gen},
            "stack_received": stack,
            "unaccounted": sent - received - port - kernel - stack,
            "gen_end_sent_or_dropped": veth_gen["tx_packets"] + veth_gen["tx_dropped"] == sent,
            "veth_received_is_xdp_plus_stack": veth_kv["rx_packets"] == seen_by_xdp + stack,
            "kvagg_end_drops_are_port_or_stack":
                port <= veth_kv["rx_dropped"] <= port + stack,
            "redirected_is_received_plus_port_drops":
                redirected is None or redirected == received + port}


def sums_check(tmp, gj, kj, lost_frames):
    expect, got = read_csv(os.path.join(tmp, "gen.csv")), read_csv(os.path.join(tmp, "kvagg.csv"))
    over = sum(1 for k, v in got.items() if v > expect.get(k, 0))
    missing_tuples = gj["expect"]["tuples"] - kj["tuples"]
    return {"keys_sent": len(expect), "keys_kvagg": len(got), "exact": got == expect,
            "keys_above_sent": over, "sum_sent": gj["expect"]["sum"],
            "sum_kvagg": kj["aggregated_sum"], "tuples_sent": gj["expect"]["tuples"],
            "tuples_kvagg": kj["tuples"], "tuples_missing": missing_tuples,
            "frames_lost": lost_frames,
            "ok": (got == expect) if lost_frames == 0 else
                  (over == 0 and missing_tuples == TUPLES * lost_frames)}


def receives_after_flaps(scrapes, flaps, end):
    """Per link flap: the seconds from the link coming back up to the first /metrics scrape
    that shows kvagg received more, looked for until the next flap (or the run's end); None
    where it received nothing: a port that did not recover. A starved worker recovers late,
    not never (its wait shows in the RSS samples' worker_wait_ms)."""
    out = []
    for i, f in enumerate(flaps):
        until = flaps[i + 1] if i + 1 < len(flaps) else end
        rx = [(s["t"], s["linerate_rx_packets_total"]) for s in scrapes
              if s.get("ok") and f <= s["t"] <= until]
        later = [t for t, n in rx if rx and n > rx[0][1]]
        out.append(round(later[0] - f, 1) if later else None)
    return out


def memory_check(rss):
    """Growth of the resident memory after warm-up (the first quarter of the run, at least
    10 s: the table and the checkpoint buffer fill as keys arrive): a leak keeps growing."""
    ks = [(s["t"], s["kib"]) for s in rss if s["kib"]]
    if not ks:
        return {"ok": False, "samples": 0}
    warm_s = max(10.0, ks[-1][0] / 4)
    after = [k for t, k in ks if t >= warm_s] or [ks[-1][1]]
    growth = after[-1] - after[0]
    return {"warm_up_s": warm_s, "first_kib": ks[0][1], "after_warm_up_kib": after[0],
            "last_kib": after[-1], "max_kib": max(k for _, k in ks), "growth_kib": growth,
            "max_over_warm_up_kib": max(after) - after[0], "samples": len(ks),
            "ok": growth <= 1024}


def soak(net, seconds):
    tmp = tempfile.mkdtemp(prefix="kvagg-soak")
    subprocess.run(["ip", "-n", net.dut_ns, "link", "set", "lo", "up"], check=True)
    prefix, kv_cmd, gen_cmd = commands(net, tmp, seconds)
    kv_log = open(os.path.join(tmp, "kvagg.log"), "w")
    kv = subprocess.Popen(net.exec(net.dut_ns, kv_cmd), stdout=kv_log, stderr=subprocess.STDOUT)
    scraper = gen = tap = None
    try:
        if not bk.wait_for_line(kv_log.name, ": running", timeout=60):
            raise RuntimeError(f"kvagg did not start:\n{open(kv_log.name).read()[-2000:]}")
        # Into a file: a pipe read at the end fills up (64 KiB, ~4.5 min of lines) and stalls it.
        scrapes_log = open(os.path.join(tmp, "scrapes.jsonl"), "w")
        scraper = subprocess.Popen(net.exec(net.dut_ns, [
            sys.executable, "-c", SCRAPER, f"http://127.0.0.1:{METRICS_PORT}/metrics",
            str(SAMPLE_S)]), stdout=scrapes_log)
        tap = subprocess.Popen(net.exec(net.dut_ns, [sys.executable, "-c", STACK_TAP, net.dut_if]),
                               stdout=subprocess.PIPE, text=True)
        if tap.stdout.readline().strip() != "ready":
            raise RuntimeError("the stack tap did not start")
        gen_log = open(os.path.join(tmp, "gen.log"), "w")
        gen = subprocess.Popen(net.exec(net.gen_ns, gen_cmd), stdout=gen_log,
                               stderr=subprocess.STDOUT)
        rss, tele, flaps, start = soak_loop(net, kv, gen, prefix, seconds)
        if gen.wait() != 0:
            raise RuntimeError(f"gen exit {gen.returncode}:\n{open(gen_log.name).read()[-2000:]}")
        time.sleep(1)  # what is still in the rings reaches kvagg
        veth_kv, veth_gen = veth_drops(net.dut_ns, net.dut_if), veth_drops(net.gen_ns, net.gen_if)
        tap.terminate()
        seen_in, seen_out, tap_drops = map(int, tap.communicate(timeout=10)[0].split())
        veth_kv.update({"stack_received": seen_in, "stack_tap_drops": tap_drops})
        kv.send_signal(signal.SIGINT)
        if kv.wait(timeout=120) != 0:
            raise RuntimeError(f"kvagg exit {kv.returncode}:\n{open(kv_log.name).read()[-2000:]}")
    finally:
        for p in (scraper, tap, gen, kv):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    with open(scrapes_log.name) as f:
        scrapes = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(tmp, "kvagg.json")) as f:
        kj = json.load(f)
    with open(os.path.join(tmp, "gen.json")) as f:
        gj = json.load(f)
    r = report(tmp, kj, gj, (veth_kv, veth_gen), (rss, tele, scrapes, flaps, start))
    r.update({"seconds": seconds, "commands": {"kvagg": " ".join(kv_cmd),
                                                "gen": " ".join(gen_cmd)}})
    return r


def report(tmp, kj, gj, veth, samples):
    """The soak's checks and figures from the exit JSONs, veth counters and the samples."""
    veth_kv, veth_gen = veth
    rss, tele, scrapes, flaps, start = samples
    acc = accounting(gj, kj, veth_kv, veth_gen)
    lost = acc["port_drops"] + acc["kernel_drops"] + acc["stack_received"] + kj["dropped"]
    mem = memory_check(rss)
    sums = sums_check(tmp, gj, kj, lost)
    ok_scrapes = [s for s in scrapes if s.get("ok")]
    after_flaps = receives_after_flaps(scrapes, flaps, scrapes[-1]["t"] if scrapes else 0)
    checks = {"rss_flat": mem["ok"], "mempool_in_use_0": kj["mempool_in_use_at_exit"] == 0,
              "every_frame_accounted": acc["unaccounted"] == 0 and all(
                  acc[k] for k in ("redirected_is_received_plus_port_drops",
                                   "veth_received_is_xdp_plus_stack", "gen_end_sent_or_dropped",
                                   "kvagg_end_drops_are_port_or_stack")),
              "sums": sums["ok"],
              "receives_after_every_flap": bool(after_flaps) and
                                           all(n is not None for n in after_flaps),
              "metrics_answered": len(ok_scrapes) >= len(scrapes) - 1 and bool(ok_scrapes),
              "telemetry_answered": bool(tele) and all(tele)}
    return {
        "tmp": tmp, "checks": checks, "ok": all(checks.values()),
        "memory": mem, "rss_samples": rss, "accounting": acc, "sums": sums,
        "link_flaps_at_s": [round(f - start, 1) for f in flaps],
        "seconds_to_first_receive_after_each_flap": after_flaps,
        # net_af_xdp (DPDK 22.11) reports its link up for the whole run: the downs kvagg counts
        # are the PMD's view, the flaps above are what was done to the veth.
        "kvagg_link": kj["links"],
        "metrics_scrapes": {"count": len(scrapes), "answered": len(ok_scrapes),
                            "first": ok_scrapes[0] if ok_scrapes else None,
                            "last": ok_scrapes[-1] if ok_scrapes else None},
        "telemetry_reads": {"count": len(tele), "answered": sum(tele)},
        "kvagg": {k: kj.get(k) for k in ("rx_packets", "rx_mpps", "mtuples_per_s", "tuples",
                                          "keys", "mempool_in_use_at_exit", "pmd_held",
                                          "state", "duration_s")},
        "gen": {k: gj.get(k) for k in ("tx_packets", "sent_mpps", "send_s", "expect", "drops")},
    }


def seconds_given():
    """Whether bench/run's command line gave --seconds (the soak's length then)."""
    return any(a == "--seconds" or a.startswith("--seconds=") for a in sys.argv[1:])


def run(args):
    if os.geteuid() != 0:
        return {"skipped": "needs root: network namespaces, a veth pair, AF_XDP"}
    seconds = float(os.environ.get("SOAK_SECONDS", args.seconds if seconds_given() else 600))
    load = os.getloadavg()
    with bk.VethNamespaces(bk.next_tag()) as net:
        r = soak(net, seconds)
    r["loadavg_1_5_15_at_start"] = list(load)
    r["loadavg_1_5_15_at_end"] = list(os.getloadavg())
    r["headline"] = {"ok": r["ok"], **{k: v for k, v in r["checks"].items()},
                     "rss_growth_kib": r["memory"]["growth_kib"],
                     "gen_sent": r["accounting"]["gen_sent"],
                     "unaccounted": r["accounting"]["unaccounted"],
                     "mtuples_per_s": r["kvagg"]["mtuples_per_s"]}
    return r
