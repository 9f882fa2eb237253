"""kvagg on one end of a veth pair and the C++ client (build/examples/kvagg_load) in the peer
namespace, what the kvagg service scenarios share (bench/scenarios/kvagg_service.py,
kvagg_state.py)."""
import json
import os
import subprocess
import sys

import benchkit as bk

sys.path.insert(0, os.path.join(bk.ROOT, "tests", "kvagg"))
from service_test import KV_IP, CLIENT_IP, Namespaces, wait_ready  # noqa: E402

BUILD = bk.BUILD


class VethPair:
    """bench's veth namespaces with kvagg's address on the DUT end and the client's on the other,
    seen as service_test's Namespaces (kvagg's `kv`, interface `kv_if`; the clients' `cl`)."""

    def __enter__(self):
        self.net = bk.VethNamespaces(f"kvsb{os.getpid() % 100000}", (KV_IP, CLIENT_IP))
        return Namespaces(self.net.dut_ns, self.net.gen_ns, self.net.dut_if)

    def __exit__(self, *exc):
        self.net.__exit__(*exc)


def load(ns, *args):
    cmd = ["taskset", "-c", "1", os.path.join(BUILD, "examples", "kvagg_load"), "--host", KV_IP,
           *map(str, args)]
    return ns.run(ns.cl, *cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result(p, timeout=300):
    out, err = p.communicate(timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"kvagg_load failed: {err.strip()}")
    return json.loads(out.strip().splitlines()[-1])


def kvagg_port(ns, port):
    """The vdev for kvagg's end, and a process that must run beside it (or None)."""
    if port == "af_xdp":
        # The steering program hands kvagg its UDP port only; the kernel keeps ARP.
        prog = os.path.join(BUILD, "bpf", "steer.bpf.o")
        return f"--vdev=net_af_xdp0,iface={ns.kv_if},xdp_prog={prog}", None
    # af_packet: the kernel sees the datagrams too; a bound socket keeps it from answering
    # ICMP port-unreachable.
    blocker = ns.run(ns.kv, sys.executable, "-c",
                     "import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM);"
                     "s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096);"
                     "s.bind(('0.0.0.0', 9000)); time.sleep(3600)")
    return f"--vdev=net_af_packet0,iface={ns.kv_if}", blocker


def with_kvagg(ns, port, json_path, extra, body):
    """kvagg on `port` (with `extra` app options), body() once it answers, kvagg stopped;
    (body's result, kvagg JSON, kvagg's command line)."""
    kvagg = os.path.join(BUILD, "apps", "kvagg", "kvagg")
    vdev, blocker = kvagg_port(ns, port)
    cmd = [kvagg, "-l", "0", "--no-huge", "-m", "1024", "--no-pci", f"--file-prefix={ns.kv}",
           vdev, "--", "--keys", "1M", "--stats-period", "0", "--json", json_path,
           "--allow", CLIENT_IP, *extra]
    app = ns.run(ns.kv, *cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if not wait_ready(ns, 30):
            raise RuntimeError(f"kvagg on {port} did not answer within 30 s")
        r = body()
    finally:
        app.send_signal(2)
        out = app.communicate(timeout=60)[0]
        if blocker:
            blocker.kill()
            blocker.wait()
    if app.returncode != 0:
        raise RuntimeError(f"kvagg on {port} exit {app.returncode}: {out[-2000:]}")
    with open(json_path) as f:
        return r, json.load(f), " ".join(cmd)
