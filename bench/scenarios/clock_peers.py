#!/usr/bin/env python3
"""bench/run clock-peers: clocksync beside chrony and linuxptp's ptp4l, on one veth pair.

Each system runs its server (master) in one network namespace and its client in the other,
joined by one default veth pair the bench creates: both ends read the same kernel clock, so the
true offset is 0 and every offset a client reports is its error. Per run: --settle seconds to
converge, then --sample seconds read at --hz; |error| p50/p99/max, the bound p50/p99 (where the
system has one) and the samples whose |error| exceeds their bound. Idle, then under a UDP flood
(iperf3, --flood-pps 64-byte datagrams from the client's namespace to the server's, on the same
link). The daemons sleep between packets while clocksync busy-polls both cores: the daemons also
run with an idle-priority spinner on each core (the `_busy` variants), so both are reported.

  clocksync_default  C++ master on AF_XDP, the default client (CLOCK_MONOTONIC_RAW, 100 ms)
  clocksync_best     XDP master (native), client --xdp-tx --xdp-turn with receive stamps,
                     CLOCK_MONOTONIC, 1 ms sync period (docs/clocksync.md's closest configuration
                     to the wire: every stamp in an XDP program, both legs NAPI to NAPI)
  clocksync_xdp_tx   the same without --xdp-turn (the request leaves from the test run's send
                     path); only when named: the A/B of --xdp-turn, e.g. --variants
                     clocksync_best,clocksync_xdp_tx --result-name clock-turn
                     error = θ, bound = ε, read from the client's telemetry (/linerate/clocksync)
  chrony             chronyd -x server and client (never touching the clock), minpoll/maxpoll -7,
                     xleave, maxclockerror = ρ; error = `System time` of `chronyc tracking`
                     (its virtual clock minus the kernel's), bound = root dispersion + root
                     delay / 2 (what AWS ClockBound derives from chrony)
  ptp4l              software timestamps, L2, E2E, logSyncInterval -10, free_running 1 on both
                     ends; error = offsetFromMaster through pmc; no bound

Installs nothing: a peer whose programs are missing is skipped with the reason. The host clock
is checked with adjtimex before and after (frequency, offset, tick, status): no daemon may have
adjusted it. Standalone: bench/scenarios/clock_peers.py [--quick] [--settle S] [--sample S].
"""
import argparse
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import benchkit as bk  # noqa: E402
import clocksync_pair as csb  # noqa: E402  (EAL arguments, logged starts, readiness)

TAKES_OPTIONS = True  # bench/run clock-peers --quick ...: parser() below
RHO_PPM = csb.RHO_PPM  # the drift allowance of every bound (chrony: maxclockerror)
MASTER_IP, CLIENT_IP = "192.168.0.2", "192.168.0.1"  # clocksync's defaults
FLOOD_BYTES = 64
CLOCKSYNC_CASES = {
    "clocksync_default": ([], []),
    "clocksync_best": (["--datapath", "xdp", "--xdp-mode", "native"],
                       ["--master-clock", "monotonic", "--xdp-tx", "--xdp-turn",
                        "--sync-period-ms", "1"]),
    # The best configuration before --xdp-turn: the request leaves from the test run's send path.
    "clocksync_xdp_tx": (["--datapath", "xdp", "--xdp-mode", "native"],
                         ["--master-clock", "monotonic", "--xdp-tx", "--sync-period-ms", "1"]),
}
BPF_OBJECT = os.path.join(bk.BUILD, "bpf", "clocksync.bpf.o")
CHRONY_INSTALL = ("apt-get install chrony (it replaces systemd-timesyncd), then "
                  "systemctl disable --now chrony: the bench runs its own chronyd -x")


class Timex(ctypes.Structure):
    """struct timex of <sys/timex.h> (64-bit Linux), the fields read and padding to its size."""
    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long),
                ("status", ctypes.c_int), ("constant", ctypes.c_long),
                ("precision", ctypes.c_long), ("tolerance", ctypes.c_long),
                ("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long), ("tick", ctypes.c_long),
                ("rest", ctypes.c_byte * 112)]


def host_clock():
    """The kernel clock's discipline (adjtimex with modes 0: reads, changes nothing)."""
    tx = Timex()
    libc = ctypes.CDLL(None, use_errno=True)
    state = libc.adjtimex(ctypes.byref(tx))
    return {"state": state, "freq": tx.freq, "offset": tx.offset, "tick": tx.tick,
            "status": tx.status}


def missing_programs(system):
    """Why `system` cannot run here (None when it can)."""
    need = {"chrony": ["chronyd", "chronyc"], "ptp4l": ["ptp4l", "pmc"]}.get(system, [])
    absent = [p for p in need if not shutil.which(p)]
    if system == "chrony" and absent:
        return f"{', '.join(absent)} not installed ({CHRONY_INSTALL})"
    if absent:
        return f"{', '.join(absent)} not installed (scripts/setup installs linuxptp)"
    if system.startswith("clocksync") and not os.access(bk.app_path("clocksync"), os.X_OK):
        return f"{bk.app_path('clocksync')} not built (scripts/build clocksync)"
    if system in ("clocksync_best", "clocksync_xdp_tx") and not os.path.exists(BPF_OBJECT):
        return f"{BPF_OBJECT} not built (scripts/build linerate_bpf)"
    return None


def sampled(read, settle_s, sample_s, hz, alive):
    """Waits settle_s, then calls read() at hz for sample_s: the (error ns, bound ns or None)
    pairs it gave (None readings left out); stops early once alive() is false."""
    end_settle = time.monotonic() + settle_s
    while time.monotonic() < end_settle and alive():
        time.sleep(0.2)
    samples, period = [], 1.0 / hz
    start = time.monotonic()
    for i in range(int(sample_s * hz)):
        if not alive():
            break
        value = read()
        if value is not None:
            samples.append(value)
        time.sleep(max(0.0, start + (i + 1) * period - time.monotonic()))
    return samples


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else None


def figures(samples):
    """|error| p50/p99/max, bound p50/p99 and the samples over their bound."""
    errors = [abs(e) for e, _ in samples]
    bounds = [b for _, b in samples if b is not None]
    return {"samples": len(samples),
            "error_abs_ns": {"p50": pct(errors, 0.5), "p99": pct(errors, 0.99),
                             "max": max(errors, default=None),
                             "mean_signed": statistics.fmean(e for e, _ in samples)
                             if samples else None},
            "bound_ns": {"p50": pct(bounds, 0.5), "p99": pct(bounds, 0.99)} if bounds else None,
            "error_over_bound": sum(abs(e) > b for e, b in samples if b is not None)
            if bounds else None}


def clocksync_run(net, case, opts, tag):
    """clocksync master (server namespace, core 0) and client (client namespace, core 1), no
    simulated offset: θ is the error. Returns (samples, configuration)."""
    master_args, client_args = CLOCKSYNC_CASES[case]
    app = bk.app_path("clocksync")
    seconds = opts.settle + opts.sample + 5
    prefixes = [f"cpm{tag}", f"cpc{tag}"]
    master = net.exec(net.dut_ns, [app] + csb.eal(0, prefixes[0], []) + [
        "--af-xdp", net.dut_if, "master", "--stats-period", "0",
        "--duration", str(seconds + 5)] + master_args)
    summary = os.path.join(opts.tmp, f"{case}_client.json")
    if os.path.exists(summary):
        os.unlink(summary)  # a run's summary, never the one before it
    # Verification mode at offset 0 (the true offset on one host): the client also counts its
    # violations and measures each exchange's legs, up t2 - t1 and down t4 - t3.
    client = net.exec(net.gen_ns, [app] + csb.eal(1, prefixes[1], []) + [
        "--af-xdp", net.gen_if, "client", "--stats-period", "0", "--duration", str(seconds),
        "--drift-bound-ppm", str(RHO_PPM), "--sim-offset-ns", "0", "--json", summary] +
        client_args + opts.client_args)
    logs = [os.path.join(opts.tmp, f"{case}_{r}.log") for r in ("master", "client")]
    procs = []
    try:
        m = csb.start_logged(master, logs[0], procs)
        csb.must_see(logs[0], "running", m)
        c = csb.start_logged(client, logs[1], procs)
        samples = sampled(lambda: clocksync_reading(prefixes[1]), opts.settle, opts.sample,
                          opts.hz, lambda: c.poll() is None)
    finally:
        for p in reversed(procs):
            bk.stop(p)
        for prefix in prefixes:
            shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
    return samples, {"master": " ".join(master), "client": " ".join(client),
                     "client_summary": client_legs(csb.read_json(summary))}


def client_legs(cj):
    """What the client's summary adds to the samples: its violations over the whole run and its
    legs (ns), with half their p50 and min difference: the bias θ has where the legs differ."""
    if not cj:
        return None
    up, down = (cj.get("one_way_ns") or {}).get("up"), (cj.get("one_way_ns") or {}).get("down")
    half = (lambda k: (up[k] - down[k]) / 2) if up and down else (lambda k: None)
    return {"violations": cj.get("violations"), "syncs": cj.get("syncs"),
            "one_way_ns": cj.get("one_way_ns"),
            "leg_bias_ns": {"p50": half("p50"), "min": half("min")}}


def clocksync_reading(prefix):
    """(θ, ε) of the client's sync in force, from its telemetry; None before its first sync."""
    t = (bk.telemetry(prefix, "/linerate/clocksync") or {}).get("/linerate/clocksync") or {}
    if not t.get("synced"):
        return None
    return float(t["theta_ns"]), float(t["epsilon_ns"])


def chrony_confs(d, opts):
    """The server's and the client's chrony.conf in the directory d."""
    server = (f"local stratum 1\nallow all\ncmdport 0\npidfile {d}/server.pid\n"
              f"bindcmdaddress {d}/server.sock\n")
    client = (f"server {MASTER_IP} iburst minpoll {opts.chrony_poll} "
              f"maxpoll {opts.chrony_poll} xleave\nmaxclockerror {RHO_PPM}\nport 0\n"
              f"cmdport 0\npidfile {d}/client.pid\nbindcmdaddress {d}/client.sock\n")
    for name, text in (("server", server), ("client", client)):
        with open(os.path.join(d, name + ".conf"), "w") as f:
            f.write(text)
    return server, client


def chrony_run(net, opts, tag):
    """chronyd -x server and client; chronyc tracking (CSV) at hz: error = System time, bound =
    root dispersion + root delay / 2. Returns (samples, configuration)."""
    d = tempfile.mkdtemp(prefix="lr_peers_chrony_", dir=opts.tmp)
    server_conf, client_conf = chrony_confs(d, opts)
    procs = []
    try:
        for ns, name in ((net.dut_ns, "server"), (net.gen_ns, "client")):
            cmd = net.exec(ns, ["chronyd", "-x", "-d", "-u", "root", "-f", f"{d}/{name}.conf"])
            csb.start_logged(cmd, f"{d}/{name}.log", procs)
        # chronyc gives up at once without the socket: it starts once chronyd has made it.
        bk.wait_for(lambda: os.path.exists(f"{d}/client.sock"), 10)
        ctl = subprocess.Popen(["chronyc", "-c", "-n", "-h", f"{d}/client.sock"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               stderr=subprocess.DEVNULL, bufsize=1)
        procs.append(ctl)
        samples = sampled(lambda: chrony_reading(ctl), opts.settle, opts.sample, opts.hz,
                          lambda: all(p.poll() is None for p in procs))
    finally:
        for p in reversed(procs):
            bk.stop(p)
        logs = log_tails(d, samples)
    return samples, {**logs, "server": "chronyd -x -d -u root", "server_conf": server_conf,
                     "client_conf": client_conf}


def log_tails(d, samples):
    """Removes the run's directory d; when the run gave no sample, the tails of its logs (why)
    as {"logs": {name: tail}}, else {}."""
    tails = {}
    if not samples:
        for name in sorted(os.listdir(d)):
            if name.endswith(".log"):
                with open(os.path.join(d, name), errors="replace") as f:
                    tails[name] = f.read()[-1500:]
    shutil.rmtree(d, ignore_errors=True)
    return {"logs": tails} if tails else {}


def chrony_reading(ctl):
    """One `tracking` in chronyc's CSV: refid,name,stratum,ref time,system time,last offset,
    rms offset,freq,residual freq,skew,root delay,root dispersion,...; None before a sync."""
    ctl.stdin.write("tracking\n")
    fields = ctl.stdout.readline().strip().split(",")
    if len(fields) < 12 or fields[0] in ("00000000", "7F7F0101"):
        return None
    error_s, delay_s, dispersion_s = float(fields[4]), float(fields[10]), float(fields[11])
    return error_s * 1e9, (dispersion_s + delay_s / 2) * 1e9


def ptp_conf(d, name, opts):
    text = ("[global]\nfree_running 1\nnetwork_transport L2\ndelay_mechanism E2E\n"
            f"time_stamping software\nlogSyncInterval {opts.ptp_log_sync}\n"
            f"logMinDelayReqInterval {opts.ptp_log_sync}\nlogAnnounceInterval -3\n"
            "summary_interval 10\n"
            f"uds_address {d}/{name}.sock\n" + ("slaveOnly 1\n" if name == "client" else ""))
    with open(os.path.join(d, name + ".conf"), "w") as f:
        f.write(text)
    return text


def ptp4l_run(net, opts, tag):
    """ptp4l master and slave, both free running; pmc's offsetFromMaster at hz. Returns
    (samples, configuration)."""
    d = tempfile.mkdtemp(prefix="lr_peers_ptp_", dir=opts.tmp)
    confs = {name: ptp_conf(d, name, opts) for name in ("master", "client")}
    procs = []
    try:
        for ns, dev, name in ((net.dut_ns, net.dut_if, "master"),
                              (net.gen_ns, net.gen_if, "client")):
            cmd = net.exec(ns, ["ptp4l", "-i", dev, "-f", f"{d}/{name}.conf", "-m", "-q"])
            csb.start_logged(cmd, f"{d}/{name}.log", procs)
        reader = PmcReader(f"{d}/client.sock")
        procs.append(reader.proc)
        samples = sampled(reader.read, opts.settle, opts.sample, opts.hz,
                          lambda: all(p.poll() is None for p in procs))
    finally:
        for p in reversed(procs):
            bk.stop(p)
        logs = log_tails(d, samples)
    return samples, {**logs, "master_conf": confs["master"], "client_conf": confs["client"],
                     "command": "ptp4l -i IF -f CONF -m -q"}


class PmcReader:
    """pmc in interactive mode on ptp4l's UDS: each read asks CURRENT_DATA_SET and returns
    (offsetFromMaster ns, None) from the answer (ptp4l has no bound), None without one or
    while the client follows no master (stepsRemoved 0, offset 0)."""

    def __init__(self, uds):
        self.proc = subprocess.Popen(["pmc", "-u", "-b", "0", "-s", uds], text=True, bufsize=1,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.latest, self.answers = None, threading.Semaphore(0)
        threading.Thread(target=self._lines, daemon=True).start()

    def _lines(self):
        steps = 0
        for line in self.proc.stdout:
            parts = line.split()
            if len(parts) == 2 and parts[0] == "stepsRemoved":
                steps = int(parts[1])
            if len(parts) == 2 and parts[0] == "offsetFromMaster":
                self.latest = float(parts[1]) if steps > 0 else None
                self.answers.release()

    def read(self):
        self.proc.stdin.write("GET CURRENT_DATA_SET\n")
        if not self.answers.acquire(timeout=0.5) or self.latest is None:
            return None
        return self.latest, None


def clocksync_case(case):
    return lambda net, opts, tag: clocksync_run(net, case, opts, tag)


# variant -> (system, runner, keep the cores busy with idle-priority spinners)
VARIANTS = {
    "clocksync_default": ("clocksync_default", clocksync_case("clocksync_default"), False),
    "clocksync_best": ("clocksync_best", clocksync_case("clocksync_best"), False),
    "clocksync_xdp_tx": ("clocksync_xdp_tx", clocksync_case("clocksync_xdp_tx"), False),
    "chrony": ("chrony", chrony_run, False),
    "chrony_busy": ("chrony", chrony_run, True),
    "ptp4l": ("ptp4l", ptp4l_run, False),
    "ptp4l_busy": ("ptp4l", ptp4l_run, True),
}
# Not run unless named: the A/B of --xdp-turn (bench/run clock-peers --variants
# clocksync_best,clocksync_xdp_tx --result-name clock-turn).
DEFAULT_VARIANTS = [v for v in VARIANTS if v != "clocksync_xdp_tx"]
SPIN = ("import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])}); "
        "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\nwhile True: pass")


def spinners(busy):
    """One SCHED_IDLE busy loop per core (none when not `busy`): a core is never idle, as under
    clocksync's pollers, but any runnable task takes it at once."""
    if not busy:
        return []
    return [subprocess.Popen([sys.executable, "-c", SPIN, str(c)])
            for c in range(os.cpu_count())]


def flood(net, opts, seconds):
    """iperf3: a server in the server's namespace, a UDP client in the client's, FLOOD_BYTES
    datagrams at opts.flood_pps for `seconds`. (processes, the client's command)."""
    server = subprocess.Popen(net.exec(net.dut_ns, ["iperf3", "-s", "-1", "-B", MASTER_IP]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bk.wait_for(lambda: subprocess.run(net.exec(net.dut_ns, ["ss", "-ltnH", "sport = :5201"]),
                                       capture_output=True, text=True).stdout.strip() != "", 10)
    cmd = ["iperf3", "-c", MASTER_IP, "-u", "-l", str(FLOOD_BYTES), "-t", str(int(seconds)),
           "-b", str(int(opts.flood_pps * FLOOD_BYTES * 8))]
    client = subprocess.Popen(net.exec(net.gen_ns, cmd), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    return [client, server], " ".join(cmd)


def veth_packets(net):
    """Frames the server's end received so far (the flood's and the protocols')."""
    out = subprocess.run(["ip", "-n", net.dut_ns, "-s", "-j", "link", "show", net.dut_if],
                         capture_output=True, text=True).stdout
    return json.loads(out)[0]["stats64"]["rx"]["packets"] if out else None


def one_run(variant, load, opts, tag):
    """One variant under one load on a veth pair of its own: its figures."""
    system, runner, busy = VARIANTS[variant]
    with bk.VethNamespaces(f"p{tag}", (MASTER_IP, CLIENT_IP)) as net:
        before = host_clock()
        spin = spinners(busy)
        extra, flood_cmd = flood(net, opts, opts.settle + opts.sample + 10) \
            if load == "flood" else ([], None)
        rx0, t0 = veth_packets(net), time.time()
        try:
            samples, config = runner(net, opts, tag)
        finally:
            for p in extra + spin:
                p.kill()
                p.wait()
        rx_pps = (veth_packets(net) - rx0) / (time.time() - t0)
        after = host_clock()
    out = {"variant": variant, "system": system, "load": load, "cores_busy": busy,
           **figures(samples), "server_end_rx_pps": round(rx_pps), "flood": flood_cmd,
           "host_clock_untouched": before == after, "loadavg_1_5_15": list(os.getloadavg()),
           "client_summary": config.pop("client_summary", None), "configuration": config}
    legs = (out["client_summary"] or {}).get("leg_bias_ns")
    print(f"{variant} {load}: |error| {out['error_abs_ns']} bound {out['bound_ns']} over "
          f"{out['error_over_bound']} ({out['samples']} samples, {rx_pps:.0f} rx pps)"
          + (f" leg bias {legs}" if legs else ""), flush=True)
    return out


def measure(opts):
    """Every variant idle, then under the flood (skipped ones said why): the result document."""
    os.makedirs(opts.tmp, exist_ok=True)
    loadavg, clock_before = list(os.getloadavg()), host_clock()
    runs, skipped = [], {}
    for load in opts.loads:
        for n, variant in enumerate(opts.variants):
            why = missing_programs(VARIANTS[variant][0])
            if why:
                skipped[variant] = why
                continue
            runs.append(one_run(variant, load, opts, f"{os.getpid() % 10000}{load[0]}{n}"))
    clock_after = host_clock()
    untouched = clock_before == clock_after and all(r["host_clock_untouched"] for r in runs)
    return {
        "description": __doc__.split("\n\n")[0],
        "settings": {"settle_s": opts.settle, "sample_s": opts.sample, "sample_hz": opts.hz,
                     "drift_bound_ppm": RHO_PPM, "flood_pps": opts.flood_pps,
                     "flood_datagram_bytes": FLOOD_BYTES, "loads": opts.loads,
                     "link": "one default veth pair, each end in its own namespace, IPv6 off",
                     "cores": {"clocksync master": 0, "clocksync client": 1,
                               "daemons": "unpinned"},
                     "clocksync_client_args": opts.client_args,
                     "versions": versions(), "scheduling": csb.scheduling()},
        "skipped": skipped,
        "host_clock": {"before": clock_before, "after": clock_after, "untouched": untouched,
                       "how": "adjtimex(modes 0) before and after every run and the whole "
                              "bench: frequency, offset, tick and status unchanged"},
        "loadavg_1_5_15_at_start": loadavg, "loadavg_1_5_15_at_end": list(os.getloadavg()),
        "table": table(runs), "runs": runs,
    }


def versions():
    """The peers' versions (first line of -v), None where missing."""
    out = {}
    for prog in ("chronyd", "ptp4l", "iperf3"):
        try:
            r = subprocess.run([prog, "-v"], capture_output=True, text=True, timeout=5)
            out[prog] = (r.stdout or r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            out[prog] = None
    return out


def table(runs):
    """The headline: variant/load -> |error| p50/p99/max, bound p50/p99, over bound."""
    return {f"{r['variant']}/{r['load']}": {
        "error_p50_p99_max_ns": [r["error_abs_ns"][k] for k in ("p50", "p99", "max")],
        "bound_p50_p99_ns": [r["bound_ns"][k] for k in ("p50", "p99")] if r["bound_ns"] else None,
        "error_over_bound": r["error_over_bound"], "samples": r["samples"]} for r in runs}


def plot(runs, name="clock-peers"):
    """bench/results/NAME.png: |error| p50 and p99 and the bound p50 per variant and load, on a
    log scale (ns)."""
    if not runs:
        return None
    data = os.path.join(bk.TMP, name + ".dat")
    with open(data, "w") as f:
        for r in runs:
            e, b = r["error_abs_ns"], r["bound_ns"] or {}
            f.write(f"{r['variant']}/{r['load']} {max(e['p50'] or 0, 1)} {max(e['p99'] or 0, 1)} "
                    f"{b.get('p50') or '-'}\n")
    return bk.plot(os.path.join(bk.RESULTS, name + ".png"), f"""
set title 'clocksync, chrony, ptp4l on one veth pair (true offset 0)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'ns'
set yrange [1:*]
set xtics rotate by -35
set datafile missing '-'
set key top left
plot '{data}' using 2:xtic(1) title '|error| p50', '' using 3 title '|error| p99', \\
     '' using 4 title 'bound p50'
""", size="1100,550")


def parser():
    ap = argparse.ArgumentParser(prog="bench/run clock-peers",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--settle", type=float, default=30, help="seconds before sampling (30)")
    ap.add_argument("--sample", type=float, default=60, help="seconds sampled (60)")
    ap.add_argument("--hz", type=float, default=50, help="readings per second (50)")
    ap.add_argument("--quick", action="store_true", help="development: 5 s settle, 10 s sample")
    ap.add_argument("--flood-pps", type=float, default=1e5, help="iperf3 datagrams/s (1e5)")
    ap.add_argument("--no-flood", action="store_true", help="idle runs only")
    ap.add_argument("--variants", type=lambda s: s.split(","), default=DEFAULT_VARIANTS,
                    help="comma-separated, of: " + ", ".join(VARIANTS) + " (all but "
                         "clocksync_xdp_tx)")
    ap.add_argument("--result-name", default="clock-peers",
                    help="bench/results/NAME.json and NAME.png (clock-peers)")
    ap.add_argument("--chrony-poll", type=int, default=-7, help="chrony minpoll = maxpoll (-7)")
    ap.add_argument("--ptp-log-sync", type=int, default=-10,
                    help="ptp4l logSyncInterval = logMinDelayReqInterval (-10)")
    ap.add_argument("--client-args", type=str.split, default=[],
                    help="more options of both clocksync clients, e.g. '--keep-sync-rounds 100'")
    ap.add_argument("--runs", type=int, default=1,
                    help="whole measurements, one after the other, in one JSON with how many "
                         "met each acceptance criterion (1)")
    ap.add_argument("--tmp", default=os.path.join(bk.TMP, "clock-peers"))
    return ap


def options(argv):
    """The parsed options; exits 2 on a bad one."""
    ap = parser()
    opts = ap.parse_args(argv)
    bad = [v for v in opts.variants if v not in VARIANTS]
    if bad:
        ap.error(f"unknown variant {', '.join(bad)}")
    if opts.runs < 1:
        ap.error("--runs must be at least 1")
    if opts.quick:
        opts.settle, opts.sample = 5.0, 10.0
    opts.loads = ["idle"] + ([] if opts.no_flood else ["flood"])
    return opts


def figure(run, variant, load, key, q):
    """run's figure `key` ("error_abs_ns" or "bound_ns") at `q` for variant/load; None if absent."""
    r = next((r for r in run["runs"] if r["variant"] == variant and r["load"] == load), None)
    return ((r or {}).get(key) or {}).get(q)


def best_criteria(run, load):
    """Issue 39's criteria of clocksync's best configuration under one load."""
    out = {}
    cs = lambda key, q: figure(run, "clocksync_best", load, key, q)  # noqa: E731
    bound, p99 = cs("bound_ns", "p50"), cs("error_abs_ns", "p99")
    # Each peer as it runs by itself, and with the cores kept busy (where measured).
    for peer in ("chrony", "chrony_busy"):
        chrony = figure(run, peer, load, "bound_ns", "p50")
        if peer == "chrony" or chrony is not None:
            out[f"{load}: clocksync bound p50 <= 0.1x {peer}'s"] = \
                None if None in (bound, chrony) else bound <= 0.1 * chrony
    for peer in ("ptp4l", "ptp4l_busy"):
        ptp = figure(run, peer, load, "error_abs_ns", "p99")
        if peer == "ptp4l" or ptp is not None:
            out[f"{load}: clocksync |error| p99 <= 0.5x {peer}'s"] = \
                None if None in (p99, ptp) else p99 <= 0.5 * ptp
    return out


def criteria(run, loads, variants=None):
    """The acceptance criteria in one measure(): name -> True, False, or None where a figure is
    missing (a peer skipped). Those of a clocksync variant only where it was asked for
    (`variants`; None: those with a row in the run): issue 39's of the best configuration, issue
    47's of the defaults (|error| p99 against chrony's of the same run), each load apart."""
    ran = set(variants) if variants is not None else {r["variant"] for r in run["runs"]}
    out = {}
    for load in loads:
        if "clocksync_best" in ran:
            out.update(best_criteria(run, load))
        if "clocksync_default" in ran:
            mine = figure(run, "clocksync_default", load, "error_abs_ns", "p99")
            chrony = figure(run, "chrony", load, "error_abs_ns", "p99")
            out[f"{load}: clocksync_default |error| p99 <= chrony's"] = \
                None if None in (mine, chrony) else mine <= chrony
        over = [r["error_over_bound"] for r in run["runs"]
                if r["load"] == load and r["system"].startswith("clocksync")]
        out[f"{load}: 0 clocksync errors beyond its bound"] = \
            None if not over or None in over else sum(over) == 0
    if "clocksync_best" in ran:
        p50 = figure(run, "clocksync_best", "idle", "error_abs_ns", "p50")
        out["idle: clocksync |error| p50 <= 15 ns"] = None if p50 is None else p50 <= 15
    return out


def measure_runs(opts):
    """opts.runs measure()s: the one run's document, or with more than one every run's and, per
    criterion, in how many runs it held."""
    if opts.runs == 1:
        result = measure(opts)
        result["criteria"] = criteria(result, opts.loads, opts.variants)
        return result
    each = []
    for n in range(opts.runs):
        print(f"run {n + 1} of {opts.runs}", flush=True)
        each.append(measure(opts))
        each[-1]["criteria"] = criteria(each[-1], opts.loads, opts.variants)
    summary = {name: {"passed": sum(r["criteria"][name] is True for r in each),
                      "failed": sum(r["criteria"][name] is False for r in each),
                      "runs": opts.runs} for name in each[0]["criteria"]}
    return {"description": each[0]["description"], "settings": each[0]["settings"],
            "runs_of_the_bench": opts.runs, "criteria": summary,
            "table": [r["table"] for r in each], "measurements": each,
            "runs": each[-1]["runs"]}


def runs_given(args):
    """bench/run's own --runs (its alternations, default 5) where its command line gave one:
    bench/run takes the option before the scenario sees it. Only a given one counts: each run
    here is a whole measurement of minutes."""
    given = any(a == "--runs" or a.startswith("--runs=") for a in sys.argv[1:])
    return getattr(args, "runs", None) if given else None


def run(args):
    """bench/run clock-peers [options after the name, see --help; --runs N too]."""
    if os.geteuid() != 0:
        return {"skipped": "needs root (network namespaces, XDP, chronyd -u root)"}
    extra = list(getattr(args, "extra", []))
    if runs_given(args) is not None:
        extra += ["--runs", str(runs_given(args))]
    opts = options(extra)
    result = measure_runs(opts)
    result["plot"] = plot(result["runs"], opts.result_name)
    if opts.result_name != "clock-peers":
        result["result_name"] = opts.result_name
    return result


if __name__ == "__main__":
    res = measure_runs(options(sys.argv[1:]))
    print(json.dumps({"table": res["table"], "criteria": res["criteria"]}, indent=2))
