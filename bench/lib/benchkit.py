"""What bench/run's scenarios share: paths, running a program for a while, rates from its output,
alternated measurements, the machine's description, traffic pcaps, veth namespaces, and the
command lines of the programs measured against (dpdk-testpmd). One copy of each, imported by
every scenario (bench/run puts bench/lib on the path; a scenario script that also runs alone
puts it there itself)."""
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import time

from netns_pair import NamespacePair

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("LINERATE_BUILD", os.path.join(ROOT, "build"))
RESULTS = os.path.join(ROOT, "bench", "results")
TESTPMD = os.environ.get("TESTPMD", "dpdk-testpmd")
GEN = os.path.join(BUILD, "bench", "gen", "linerate-gen")
TMP = os.environ.get("LINERATE_BENCH_TMP", "/tmp/linerate-bench")
# kvagg's arguments for a trace replayed forever (infinite_rx): the replay repeats the trace's
# sequence numbers, so with the duplicate window on every frame after the first pass would be a
# duplicate, dropped before it is aggregated (what capacity and builds measured before 29 Nov).
KVAGG_REPLAY = ["--dup-window", "0"]


def app_path(app, build=BUILD):
    """An app's binary in a build directory."""
    return os.path.join(build, "apps", app, app)


def hugepages_free():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("HugePages_Free:"):
                return int(line.split()[1])
    return 0


def memory_args(huge, prefix):
    # --no-huge implies legacy memory: no --in-memory with it, --no-shconf instead.
    if huge:
        return ["-m", "512", "--in-memory", f"--file-prefix={prefix}"]
    return ["--no-huge", "-m", "512", "--no-shconf"]


def run_for(cmd, seconds):
    """Runs cmd for `seconds`, then SIGINT; returns its output."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, text=True)
    try:
        out, _ = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.send_signal(2)
        try:
            out, _ = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
    return out


def stop(proc, timeout=20):
    """SIGINT, then SIGKILL if it has not exited within `timeout` seconds."""
    proc.send_signal(2)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_for(ready, timeout, interval=0.05):
    """Polls ready() until it is true (True) or `timeout` seconds have passed (False)."""
    end = time.time() + timeout
    while time.time() < end:
        if ready():
            return True
        time.sleep(interval)
    return False


def log_has(path, text):
    with open(path) as f:
        return text in f.read()


def wait_for_line(path, text, proc=None, timeout=30):
    """Waits until the log at `path` holds `text`; False on timeout or once `proc` has exited."""
    return wait_for(lambda: log_has(path, text) or (proc is not None and proc.poll() is not None),
                    timeout) and log_has(path, text)


def steady(samples, skip=1):
    """Per-second samples without the start-up and warm-up ones: the leading zeros first (testpmd
    prints a stats line before it forwards; kept, that 0 halved the median of a run with two
    samples), then `skip` more where enough are left. A run of zeros only stays one: its rate
    is 0 (a variant that never forwarded shows as such in a sweep, not as an abort)."""
    start = next((i for i, x in enumerate(samples) if x != 0), 0)
    samples = samples[start:]
    return samples[skip:] if len(samples) > skip + 1 else samples


def median_of(items, *path):
    """Median of item[path[0]][path[1]]... over items, leaving out the missing ones (None when
    none is there); with no path, the median of the items that are not None."""
    values = []
    for v in items:
        for key in path:
            v = v.get(key) if isinstance(v, dict) else None
        if v is not None:
            values.append(v)
    return statistics.median(values) if values else None


def testpmd_mpps(out):
    """Rx-pps of port 0 from testpmd's --stats-period lines."""
    return [int(m) / 1e6 for m in re.findall(r"Rx-pps:\s+(\d+)", out)]


def linerate_mpps(app, out, direction="rx"):
    """Per-second Mpps from an app's (or gen's) stats lines, received or sent."""
    if direction == "rx":
        return [float(m) for m in re.findall(rf"\[{app}\] rx ([\d.]+) Mpps", out)]
    return [float(m) for m in re.findall(rf"\[{app}\] .*\| tx ([\d.]+) Mpps", out)]


def json_rate(path, key="mtuples_per_s"):
    """A parser for measure_alternating that reads a run's --json file (written at its
    --duration's end) for its rate, and removes the file."""
    def parse(_out):
        with open(path) as f:
            j = json.load(f)
        os.unlink(path)
        return [j[key]]

    return parse


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine():
    return {"host": platform.node(), "cpu": cpu_model(), "cores": os.cpu_count(),
            "kernel": platform.release(), "arch": platform.machine()}


def thread_times(pid):
    """tid -> (name, ns on a CPU, ns waiting for one) of every thread of pid (empty if gone)."""
    out = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run_ns, wait_ns, _ = map(int, f.read().split())
            out[int(tid)] = (name, run_ns, wait_ns)
    except (OSError, ValueError):
        pass
    return out


def measure_alternating(variants, runs, seconds):
    """variants: name -> (cmd, parser) or (cmd, parser, check), `check` reading one more figure
    per run from the output (kept as per_run_check). Alternates them `runs` times."""
    samples = {name: [] for name in variants}
    per_run = {name: [] for name in variants}
    checks = {name: [] for name in variants}
    for _ in range(runs):
        for name, (cmd, parse, *check) in variants.items():
            out = run_for(cmd, seconds)
            s = steady(parse(out))
            if not s:  # a start-up slowed by a busy machine: once more, twice as long
                out = run_for(cmd, 2 * seconds)
                s = steady(parse(out))
            if not s:
                raise RuntimeError(f"{name}: no rate samples from {' '.join(cmd)}:\n{out[-2000:]}")
            samples[name].append(s)
            per_run[name].append(statistics.median(s))
            checks[name] += [c(out) for c in check]
    return {name: {"median_mpps": statistics.median(per_run[name]), "per_run_mpps": per_run[name],
                   "samples_mpps": samples[name], "command": " ".join(variants[name][0]),
                   **({"per_run_check": checks[name]} if checks[name] else {})}
            for name in variants}


def testpmd_macswap(eal, nb_cores=None, mbufs=8191, flush_rx=False):
    """dpdk-testpmd forwarding with --forward-mode=macswap after `eal` (EAL arguments), its
    per-second stats on; nb_cores: that many forwarding cores, one queue each."""
    cores = [f"--nb-cores={nb_cores}", f"--rxq={nb_cores}", f"--txq={nb_cores}"] if nb_cores else []
    return ([TESTPMD] + eal + ["--", "--forward-mode=macswap", "--stats-period=1"] + cores +
            [f"--total-num-mbufs={mbufs}"] + ([] if flush_rx else ["--no-flush-rx"]) +
            ["--burst=32"])


def forwarders_on_vdev(vdev_spec, apps, huge, runs, seconds):
    """apps: name -> app args; plus testpmd macswap. One vdev port, one forwarding lcore."""
    vdev = "--vdev=" + vdev_spec
    variants = {"testpmd_macswap": (
        testpmd_macswap(["-l", "0,1", "--no-pci", vdev, "--log-level=lib.eal:warning"] +
                        memory_args(huge, "bench_tp")), testpmd_mpps)}
    for app, args in apps.items():
        variants[app] = (
            [app_path(app), "-l", "0,1", "--no-pci", vdev, "--log-level=lib.eal:warning"] +
            memory_args(huge, "bench_" + app) + ["--", "--stats-period", "1"] + args,
            lambda out, app=app: linerate_mpps(app, out))
    res = measure_alternating(variants, runs, seconds)
    base = res["testpmd_macswap"]["median_mpps"]
    for app in apps:
        res[app]["ratio_to_testpmd"] = res[app]["median_mpps"] / base
    return {"memory": "huge" if huge else "nohuge", "results": res}


def write_pcap(name, *gen_args):
    """A traffic pcap made by bench/gen (cached per argument list within a run)."""
    os.makedirs(TMP, exist_ok=True)
    path = os.path.join(TMP, name + ".pcap")
    subprocess.run([GEN, "--write-pcap", path] + list(gen_args), check=True,
                   stdout=subprocess.DEVNULL)
    return path


_tag = [0]


def next_tag():
    """A name part unique to this process and call (sockets, file prefixes, namespaces)."""
    _tag[0] += 1
    return f"{os.getpid()}_{_tag[0]}"


def memif_run(dut_cmd, ready, gen_cmd, sock, tag, seconds):
    """gen and a DUT over net_memif: starts the DUT (memif server, its output to dut{tag}.log,
    `ready` the line that says it polls) first, then gen (client, writing gen{tag}.json in TMP);
    returns (the DUT's output, gen's JSON)."""
    os.makedirs(TMP, exist_ok=True)
    log = os.path.join(TMP, f"dut{tag}.log")
    with open(log, "w") as f:
        dut = subprocess.Popen(dut_cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.PIPE)
    wait_for_line(log, ready)
    gen_out = subprocess.run(gen_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=seconds + 60).stdout
    stop(dut)
    with open(log) as f:
        out = f.read()
    for d in (f"/var/run/dpdk/bdut{tag}", f"/var/run/dpdk/bgen{tag}"):
        subprocess.run(["rm", "-rf", d])
    if os.path.exists(sock):
        os.unlink(sock)
    try:
        with open(os.path.join(TMP, f"gen{tag}.json")) as f:
            gen_json = json.load(f)
    except (OSError, ValueError):
        raise RuntimeError(f"gen wrote no JSON: {gen_out[-2000:]}\nDUT: {out[-2000:]}")
    return out, gen_json


def plot(png, body, size="900,500", font_pt=10):
    """Draws `png` with gnuplot: a pngcairo terminal of `size` pixels, then `body` (the script's
    settings and plot commands). The PNG's path relative to the tree, or None when gnuplot
    failed (or is missing)."""
    script = (f"set terminal pngcairo size {size} font ',{font_pt}' noenhanced\n"
              f"set output '{png}'\n" + body)
    try:
        ok = subprocess.run(["gnuplot"], input=script, text=True).returncode == 0
    except OSError:
        ok = False
    return os.path.relpath(png, ROOT) if ok else None


def telemetry(prefix, command):
    """One DPDK telemetry command over the app's socket (v2 protocol) of the app started with
    --file-prefix=prefix: its answer, or None if it fails."""
    path = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.settimeout(2)
            s.connect(path)
            json.loads(s.recv(16384))  # the greeting
            s.send(command.encode())
            return json.loads(s.recv(1 << 20))
    except (OSError, ValueError):
        return None


def write_json(path, result):
    """A result document, indented, with a final newline."""
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")


class VethNamespaces(NamespacePair):
    """Two network namespaces joined by a veth pair (unique names, IPv6 off: the kernel sends
    nothing of its own into the measurement), removed on exit. `addresses`: (DUT end's IPv4,
    gen end's IPv4), /24, for benchmarks through the kernel's sockets."""

    def __init__(self, tag, addresses=None):
        self.dut_ns, self.gen_ns = f"lrb{tag}d", f"lrb{tag}g"
        self.dut_if, self.gen_if = f"lrb{tag}d", f"lrb{tag}g"
        super().__init__(self.dut_ns, self.gen_ns, ipv6=False)
        try:
            self.veth(self.dut_if, self.gen_if,
                      addresses=[f"{a}/24" for a in addresses] if addresses else None)
        except Exception:
            self.close()
            raise

    def exec(self, ns, cmd):
        return ["ip", "netns", "exec", ns] + cmd


VETH_EAL = ["--no-huge", "-m", "512", "--no-pci", "--no-shconf", "--log-level=lib.eal:warning",
            "--log-level=pmd.net.af_xdp:warning"]


def af_xdp_dut(net, dut, seconds):
    """A DUT on the veth pair's DUT end through AF_XDP (testpmd_macswap, xdp_reflect or an app):
    (command, line that says it is ready, parser of its rx Mpps)."""
    vdev = f"--vdev=net_af_xdp0,iface={net.dut_if}"
    if dut == "testpmd_macswap":
        # testpmd needs a forwarding lcore besides its main one: both on core 0.
        return (testpmd_macswap(["--lcores=0@0,1@0", vdev] + VETH_EAL, flush_rx=True),
                "start packet forwarding", testpmd_mpps)
    if dut == "xdp_reflect":
        cmd = [os.path.join(BUILD, "bench", "xdp_reflect"), net.dut_if, "--duration",
               str(seconds + 30)]
        return cmd, "attached to", lambda out: linerate_mpps("xdp_reflect", out)
    cmd = [app_path(dut), "-l", "0", vdev] + VETH_EAL + ["--", "--stats-period", "1"]
    return cmd, ": running", lambda out: linerate_mpps(dut, out)


def veth_run(net, dut_spec, gen_args, seconds, tag):
    """One run: the DUT (dut_spec: command, ready line, rx parser) on the DUT end (core 0), gen
    (AF_XDP, core 1, gen_args) on the other. Returns (gen rx Mpps samples, DUT rx Mpps samples,
    gen tx Mpps samples)."""
    cmd, ready, parse = dut_spec
    gen_cmd = ([GEN, "-l", "1", f"--vdev=net_af_xdp0,iface={net.gen_if}"] + VETH_EAL +
               ["--"] + gen_args + ["--duration", str(seconds), "--stats-period", "1"])
    os.makedirs(TMP, exist_ok=True)
    log = os.path.join(TMP, f"veth_dut{tag}.log")
    with open(log, "w") as f:
        p = subprocess.Popen(net.exec(net.dut_ns, cmd), stdout=f, stderr=subprocess.STDOUT,
                             stdin=subprocess.PIPE)
    wait_for_line(log, ready)
    gen_out = subprocess.run(net.exec(net.gen_ns, gen_cmd), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=seconds + 60).stdout
    stop(p)
    with open(log) as f:
        out = f.read()
    gen = [x for x in linerate_mpps("linerate-gen", gen_out) if x > 0]
    dut_rx = [x for x in parse(out) if x > 0]
    if not gen:
        raise RuntimeError(f"{cmd[0]}: gen saw nothing back:\n{gen_out[-2000:]}\nDUT:\n{out[-2000:]}")
    gen_tx = [x for x in linerate_mpps("linerate-gen", gen_out, "tx") if x > 0]
    return steady(gen), steady(dut_rx), steady(gen_tx)
