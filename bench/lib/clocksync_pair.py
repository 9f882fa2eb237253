"""A clocksync master and client as two DPDK processes over net_memif, one busy-polling lcore
each, what the clocksync scenarios share (bench/scenarios/clocksync.py, clocksync_xdp.py,
clock_peers.py, timesource.py): their EAL arguments, logged starts and readiness, the pollers'
run-queue wait (schedstat), one measured run (one_run) and its figures."""
import json
import os
import shutil
import subprocess
import sys
import time

import benchkit as bk

BUILD, RESULTS = bk.BUILD, bk.RESULTS

RHO_PPM = 10.0
SYNC_PERIOD_MS = 100.0
FLOOD_FRAME_BYTES = 64
# memif rings of 8 slots of 1 KiB (2 pages of buffers per direction) instead of the default
# 1024 of 2 KiB (512 pages): an exchange every 100 ms touches its ring's pages rarely, and on
# this VM a page untouched for long costs microseconds at its next touch (measured: the round
# trip of a lone probe, p50, 37 µs with the default ring, 4-6 µs with this one). 8 slots still
# take the flood's batches of 8 (about 1% refused at 2 Mpps).
MEMIF_RING = "rsize=3,bsize=1024"


def scheduling():
    """This process's scheduling as its children inherit it: on a shared machine the bench may be
    started in its own session at a higher autogroup priority (docs/clocksync.md, Benchmark)."""
    try:
        with open("/proc/self/autogroup") as f:
            autogroup = f.read().strip()
    except OSError:
        autogroup = None
    return {"nice": os.getpriority(os.PRIO_PROCESS, 0), "autogroup": autogroup}


def eal(lcore, prefix, vdevs):
    # Separate processes: each its own --file-prefix (memif needs no shared config, telemetry
    # does); no hugepages so the bench runs anywhere.
    return (["-l", str(lcore), "--no-huge", "-m", "512", "--no-pci", f"--file-prefix={prefix}",
             "--log-level=lib.eal:warning"] + [f"--vdev={v}" for v in vdevs] + ["--"])


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def must_see(path, text, proc, timeout=30):
    """Waits until the log at `path` holds `text` (the process must still be running); exits
    with the log when it does not."""
    if not bk.wait_for_line(path, text, proc, timeout):
        with open(path) as f:
            sys.exit(f"waiting for '{text}' in {path}:\n{f.read()}")


def start_logged(cmd, log, procs):
    """Starts `cmd` with its output into the file `log` and appends it to `procs`. Line-buffered
    stdout, so the readiness lines reach the log as they are printed."""
    p = subprocess.Popen(["stdbuf", "-oL"] + cmd, stdout=open(log, "w"),
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    procs.append(p)
    return p


def schedstat(pid):
    """(ns on the CPU, ns runnable but waiting for it) of the thread pid (the main lcore's
    thread, which runs the worker with -l N), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
            run_ns, wait_ns, _ = (int(x) for x in f.read().split())
        return run_ns, wait_ns
    except (OSError, ValueError):
        return None


def watch_pollers(procs, client):
    """Samples the pollers' schedstat until the client exits; returns each one's share of the
    elapsed time spent waiting for its core (first to last sample)."""
    first, last = {}, {}
    t0 = t1 = time.time()
    while client.poll() is None:
        for name, p in procs.items():
            s = schedstat(p.pid)
            if s:
                first.setdefault(name, s)
                last[name] = s
        t1 = time.time()
        time.sleep(0.2)
    elapsed_ns = max(1.0, (t1 - t0) * 1e9)
    return {name: (last[name][1] - first[name][1]) / elapsed_ns for name in last}


# (name, probes, client options): the cases of every load (--cases: some of them).
def run_files(kind, tag):
    """A run's JSON files and logs, master's then client's."""
    return ([f"/tmp/lr_{kind}_{tag}_{r}.json" for r in ("master", "client")],
            [f"/tmp/lr_{kind}_{tag}_{r}.log" for r in ("master", "client")])


def take_outputs(jsons, logs):
    """Reads and removes a run's files: (master JSON, client JSON, the logs' text); a JSON
    that is missing or unreadable is None."""
    mj, cj = (read_json(p) for p in jsons)
    texts = []
    for path in logs:
        if os.path.exists(path):
            with open(path) as f:
                texts.append(f.read())
            os.unlink(path)
    for path in jsons:
        if os.path.exists(path):
            os.unlink(path)
    return mj, cj, texts


def memif_pair(args, probes, flood, sock, prefixes, jsons, client_extra, master_extra=()):
    """The master's and the client's command lines, joined by net_memif on `sock`."""
    app = os.path.join(args.build, "apps", "clocksync", "clocksync")
    m_lcore, c_lcore = args.lcores
    master = (
        [app] + eal(m_lcore, prefixes[0], [f"net_memif0,role=server,socket={sock},{MEMIF_RING}"]) +
        ["--role", "master", "--stats-period", "0", "--link-wait", "30", "--json", jsons[0]] +
        list(master_extra))
    client = (
        [app] + eal(c_lcore, prefixes[1], [f"net_memif0,role=client,socket={sock},{MEMIF_RING}"]) +
        ["--role", "client", "--probes", str(probes), "--duration", str(args.duration),
         "--sync-period-ms", str(SYNC_PERIOD_MS), "--drift-bound-ppm", str(RHO_PPM),
         "--sim-offset-ns", "5000000", "--sim-drift-ppm", "8", "--stats-period", "0",
         "--json", jsons[1]] + list(client_extra) +
        (["--background-pps", str(args.flood_pps), "--background-size", str(FLOOD_FRAME_BYTES)]
         if flood else []))
    return master, client


def run_pair(args, master, client, logs, reader):
    """The master, then the client (and the reader) once the master's port is up; each
    stopped at the end. (The pollers' wait shares, the reader's output.)"""
    procs = []
    try:
        m = start_logged(master, logs[0], procs)
        must_see(logs[0], "port 0 started", m)  # the memif server's port: its client may connect
        c = start_logged(client, logs[1], procs)
        r = subprocess.Popen(reader, stdout=subprocess.PIPE, text=True) if reader else None
        wait_share = watch_pollers({"master": m, "client": c}, c)
        c.wait(timeout=args.duration + 60)
        reader_out = r.communicate(timeout=60)[0] if r else None
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(2)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return wait_share, reader_out


def run_figures(args, cj, mj, wait_share):
    """A run's figures from the client's and the master's JSON."""
    floor = cj["rtt_ns"]["min"] / 2 + RHO_PPM * 1e-6 * SYNC_PERIOD_MS * 1e6 / 2
    run = {
        "epsilon_ns": cj["epsilon_ns"], "rtt_ns": cj["rtt_ns"], "syncs": cj["syncs"],
        "violations": cj["violations"], "timeouts": cj["timeouts"],
        "one_way_ns": cj.get("one_way_ns"), "rounds_kept": cj.get("rounds_kept"),
        "warmups_sent": cj.get("warmups_sent"), "warmup_echoes": cj.get("warmup_echoes"),
        "max_abs_error_ns": cj.get("max_abs_error_ns"), "floor_ns": floor,
        "mean_over_floor": cj["epsilon_ns"]["mean"] / floor if floor else None,
        "poller_wait_share": wait_share,
        "contended": max(wait_share.values(), default=0) > args.max_wait_share,
        "master_rx_packets": mj["rx_packets"] if mj else None,
        "master_not_clocksync": mj["drops"]["not_clocksync"] if mj else None,
        "master_duration_s": mj["duration_s"] if mj else None,
    }
    return run


def flood_figures(cj, mj):
    """The flood as the master's port saw it: frames it received and dropped as background
    during the client's run, and what the client's TX ring refused (master too slow)."""
    out = {"flood_sent": cj.get("background_frames"), "flood_refused": cj.get("background_refused")}
    if mj:
        out["flood_master_mpps"] = mj["drops"]["not_clocksync"] / cj["duration_s"] / 1e6
    return out


def one_run(args, probes, flood, tag, client_extra=(), reader=None, master_extra=()):
    """Runs master + client once; returns the figures of the run and the command lines.
    `client_extra`, `master_extra`: more options; `reader`: a command started with the client
    and waited for, whose last stdout line (JSON) becomes the run's "reader"."""
    sock = f"/tmp/lr_csb_{tag}.sock"
    prefixes = [f"csbm{tag}", f"csbc{tag}"]
    jsons, logs = run_files("csb", tag)
    master, client = memif_pair(args, probes, flood, sock, prefixes, jsons, client_extra,
                                master_extra)
    try:
        wait_share, reader_out = run_pair(args, master, client, logs, reader)
    finally:
        for prefix in prefixes:
            shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
        if os.path.exists(sock):
            os.unlink(sock)
    mj, cj, texts = take_outputs(jsons, logs)
    if not cj or not cj.get("syncs"):
        sys.exit("clocksync client: no JSON or no sync\n" + "\n".join(texts))
    run = run_figures(args, cj, mj, wait_share)
    if reader:
        lines = (reader_out or "").strip().splitlines()
        run["reader"] = json.loads(lines[-1]) if lines else None
    if flood:
        run.update(flood_figures(cj, mj))
    return run, {"master": master, "client": client}


def bench_run_options(args, max_repeats):
    """What bench/run's --seconds and --runs stand for in a clocksync script: seconds x 1.5 a
    run (at least 4), runs repeats (at most max_repeats)."""
    return ["--build", BUILD, "--duration", str(max(4.0, args.seconds * 1.5)),
            "--repeats", str(max(1, min(args.runs, max_repeats)))]
