#!/usr/bin/env python3
"""kvagg's service ops end to end, on a veth pair between two network namespaces that
kvagg_service_test.cpp creates with tests/support/netns.hpp and passes in (--kv-ns, --cl-ns,
--kv-if): kvagg on the first (net_af_packet), clients with ordinary UDP sockets in the second.

  1. The word-count example (Python client, 5 % of datagrams dropped on purpose): exact.
  2. Two C++ clients (kvagg_load) and two Python clients at once, each its own stream, 5 % of
     datagrams dropped before sending: after status()-driven retransmission, read() and flush()
     give exactly the sums sent.
  3. flush(reset) every 50 ms while a C++ and a Python client send: the flushed sums plus the sums
     read afterwards equal everything sent, key by key.
  4. Malformed requests: no response, each dropped under its reason (exact counts in the JSON),
     kvagg still answers afterwards.
With --key FILE (run) kvagg gets --key FILE instead of --allow and every client signs with it
(Python key_file, kvagg_load --key): the scenarios above but 1 (the example takes no key) and 4
(unsigned requests draw error replies there: integration_kvagg_access), and no datagram of the
clients fails its MAC (drops.bad_auth 0).
Then kvagg stops on SIGINT: exit 0, no mbuf in use, every frame accounted for. With --xdp-prog
kvagg runs on net_af_xdp with the steering program (bpf/steer.bpf.o): only its UDP port reaches
it, the kernel keeps ARP.
"""
import argparse
import collections
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KV_IP, CLIENT_IP = "10.213.0.1", "10.213.0.2"
# Request timeouts that ride out a few seconds of a starved kvagg on a loaded 2-CPU CI machine;
# the key file of `run --key`, which the client subcommands find in their environment.
KEY_ENV = "LINERATE_KVAGG_TEST_KEY"
PATIENT = dict(timeout=1.0, retries=10, key_file=os.environ.get(KEY_ENV))


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


class Namespaces:
    """The two namespaces the caller made: kvagg's (`kv`, interface `kv_if`) and the clients'."""

    def __init__(self, kv, cl, kv_if):
        self.kv, self.cl, self.kv_if = kv, cl, kv_if

    def run(self, ns, *cmd, **kw):
        return subprocess.Popen(["ip", "netns", "exec", ns, *cmd], **kw)


# ---- client-side subcommands, run inside the client namespace ----

def client_module():
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    import linerate_kvagg
    return linerate_kvagg


def write_sums(path, sent):
    """A client's sums file (`key,sum` lines, ascending keys, sums mod 2^64), as read_sums reads
    it back."""
    with open(path, "w") as f:
        for k, v in sorted(sent.items()):
            f.write(f"{k},{v % 2**64}\n")


def read_sums(paths):
    total = collections.Counter()
    for p in paths:
        with open(p) as f:
            for line in f:
                k, v = line.split(",")
                total[int(k)] = (total[int(k)] + int(v)) % 2**64
    return total


def cmd_send(a):
    """Python client: random tuples over a key space shared with the other Python clients."""
    kv = client_module()
    rng = random.Random(a.seed)
    sent = collections.Counter()
    with kv.Client(KV_IP, drop_share=0.05, seed=a.seed, **PATIENT) as c:
        for _ in range(a.tuples):
            k, v = rng.randrange(a.keys), rng.getrandbits(40)
            c.add(k, v)
            sent[k] += v
        st = c.status()
        print(f"python client {c.stream:#x}: {c.sent_datagrams} sent, {c.dropped_datagrams} "
              f"dropped, {st['retransmitted']} resent, {st['rounds']} rounds")
        if c.dropped_datagrams == 0:
            raise SystemExit("no datagram was dropped: the loss path was not exercised")
    write_sums(a.sums_out, sent)


def cmd_check(a):
    """read() and flush() against the sums the clients wrote."""
    kv = client_module()
    want = read_sums(a.sums)
    with kv.Client(KV_IP, **PATIENT) as c:
        got = c.read(list(want))
        flushed = c.flush(reset=a.reset)
    bad = [k for k in want if got.get(k) != want[k]]
    if bad:
        raise SystemExit(f"read: {len(bad)} of {len(want)} keys differ, e.g. key {bad[0]}: "
                         f"{got.get(bad[0])} != {want[bad[0]]}")
    if flushed != {k: v for k, v in want.items() if v}:
        raise SystemExit(f"flush: {len(flushed)} keys, {len(want)} expected, or sums differ")
    print(f"check: {len(want)} keys exact by read and flush")


def cmd_flusher(a):
    """flush(reset) in a loop until `stop` exists, then read what is left; flushed + left must
    equal the sums sent."""
    kv = client_module()
    flushed = collections.Counter()
    n = 0
    with kv.Client(KV_IP, **PATIENT) as c:
        while not os.path.exists(a.stop):
            for k, v in c.flush(reset=True).items():
                flushed[k] = (flushed[k] + v) % 2**64
            n += 1
            time.sleep(0.05)
        # kvagg's flushes: without a key each page of a flush(reset) is one, reset on its own.
        resets = c.requests_sent
        want = read_sums(a.sums)
        left = c.read(list(want))
        extra = c.flush()  # nothing but the keys sent may remain
    if not set(extra) <= set(want):
        raise SystemExit("flush after: keys nobody sent")
    bad = [k for k in want if (flushed[k] + left[k]) % 2**64 != want[k]]
    if bad:
        raise SystemExit(f"flushed + read after != sent for {len(bad)} of {len(want)} keys")
    taken = sum(1 for k in want if flushed[k])
    if resets < 3 or taken == 0:
        raise SystemExit(f"only {resets} flush requests ({n} flush(reset)) took {taken} keys: the "
                         f"race was not exercised")
    print(f"flusher: {n} flush(reset) while sending ({resets} requests); flushed + read after == "
          f"sent for all {len(want)} keys ({taken} had flushed amounts)")


MALFORMED = {
    # name: (datagram, reason)
    "read, count 0": (struct.pack("!HBBHIQI", 0x4B56, 1, 1, 0, 1, 1, 0), "bad_request"),
    "read, 5 keys announced, 2 sent": (
        struct.pack("!HBBHIQI", 0x4B56, 1, 1, 5, 1, 2, 0) + bytes(16), "bad_request"),
    "status with a body count": (
        struct.pack("!HBBHIQI", 0x4B56, 1, 2, 1, 1, 3, 0) + bytes(16), "bad_request"),
    "flush, unknown flag": (struct.pack("!HBBHIQI", 0x4B56, 1, 3, 0, 1, 4, 6), "bad_request"),
    "flush, range lo > hi": (
        struct.pack("!HBBHIQIQQ", 0x4B56, 1, 3, 1, 1, 5, 0, 9, 3), "bad_request"),
    "a response sent to kvagg": (struct.pack("!HBBHIQI", 0x4B56, 1, 0x81, 0, 1, 6, 0),
                                 "bad_op"),
    "op 9": (struct.pack("!HBBHIQI", 0x4B56, 1, 9, 0, 1, 7, 0), "bad_op"),
    "bad magic": (struct.pack("!HBBHIQI", 0x4B57, 1, 1, 1, 1, 8, 0) + bytes(8), "bad_magic"),
    "shorter than the header": (b"KV\x01\x01", "malformed"),
}


def cmd_malformed(a):
    kv = client_module()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((KV_IP, 9000))
    s.settimeout(0.3)
    for name, (d, _) in MALFORMED.items():
        s.send(d)
        try:
            r = s.recv(65536)
            raise SystemExit(f"{name}: kvagg answered ({len(r)} bytes)")
        except socket.timeout:
            pass
    with kv.Client(KV_IP, **PATIENT) as c:  # still serving
        c.read([1, 2, 3])
    print(f"malformed: {len(MALFORMED)} requests unanswered, kvagg still answers")


# ---- the driver ----

def wait_ready(ns, deadline_s, ip=KV_IP):
    probe = ("import sys; sys.path.insert(0, %r); import linerate_kvagg as k; "
             "c = k.Client(%r, timeout=0.2, retries=1, key_file=%r); c.read([0])") % (
        os.path.join(HERE, "..", "..", "python"), ip, os.environ.get(KEY_ENV))
    end = time.time() + deadline_s
    while time.time() < end:
        if ns.run(ns.cl, sys.executable, "-c", probe, stderr=subprocess.DEVNULL).wait() == 0:
            return True
        time.sleep(0.3)
    return False


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd")
    d = sub.add_parser("run")
    d.add_argument("--kvagg", required=True)
    d.add_argument("--load", required=True)
    d.add_argument("--kv-ns", required=True)
    d.add_argument("--cl-ns", required=True)
    d.add_argument("--kv-if", required=True)
    d.add_argument("--xdp-prog", help="kvagg on net_af_xdp with this steering program "
                                      "(default: net_af_packet)")
    d.add_argument("--key", help="kvagg --key FILE (not --allow); every client signs with it")
    s = sub.add_parser("send")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--tuples", type=int, default=20000)
    s.add_argument("--keys", type=int, default=3000)
    s.add_argument("--sums-out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--reset", action="store_true")
    c.add_argument("sums", nargs="+")
    f = sub.add_parser("flusher")
    f.add_argument("--stop", required=True)
    f.add_argument("sums", nargs="+")
    sub.add_parser("malformed")
    a = ap.parse_args()
    if a.cmd == "send":
        return cmd_send(a)
    if a.cmd == "check":
        return cmd_check(a)
    if a.cmd == "flusher":
        return cmd_flusher(a)
    if a.cmd == "malformed":
        return cmd_malformed(a)
    return drive(a)


def in_namespaces(a, prefix, body):
    """body(ns, tmp, procs) with the caller's namespaces and a scratch directory; every process
    it puts in `procs` is killed at the end, whatever happened."""
    ns = Namespaces(a.kv_ns, a.cl_ns, a.kv_if)
    tmp = tempfile.mkdtemp(prefix=prefix)
    procs = []
    try:
        return body(ns, tmp, procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def hold_port(ns):
    """A socket bound to kvagg's port in its namespace: net_af_packet shares the interface with
    the kernel, which would otherwise answer kvagg's port with ICMP port-unreachable."""
    return ns.run(ns.kv, sys.executable, "-c",
                  "import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM);"
                  "s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096);"
                  "s.bind(('0.0.0.0', 9000)); time.sleep(600)")


def drive(a):
    return in_namespaces(a, "kvservice", lambda ns, tmp, procs: scenarios(a, ns, tmp, procs))


def scenarios(a, ns, tmp, procs):
    me = [sys.executable, os.path.abspath(__file__)]
    json_path = os.path.join(tmp, "kvagg.json")
    if a.xdp_prog:
        # The steering program hands kvagg its UDP port only; ARP stays with the kernel.
        vdev = f"--vdev=net_af_xdp0,iface={ns.kv_if},xdp_prog={a.xdp_prog}"
    else:
        vdev = f"--vdev=net_af_packet0,iface={ns.kv_if}"
        procs.append(hold_port(ns))
    if a.key:
        os.environ[KEY_ENV] = os.path.abspath(a.key)  # for every client started below
    access = ["--key", a.key] if a.key else ["--allow", CLIENT_IP]
    load_key = ["--key", a.key] if a.key else []
    kvagg = ns.run(ns.kv, a.kvagg, "-l", "0", "--no-huge", "-m", "512", "--no-pci",
                   f"--file-prefix={ns.kv}", vdev, "--",
                   "--keys", "64K", "--stats-period", "0", "--duration", "240", *access,
                   "--json", json_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    procs.append(kvagg)
    if not wait_ready(ns, 30):
        kvagg.kill()
        print(kvagg.communicate()[0])
        raise SystemExit("kvagg did not answer a read within 30 s")

    def client(*args, tool=None):
        cmd = [tool] + list(args) if tool else me + list(args)
        p = ns.run(ns.cl, *cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(p)
        return p

    def finish(*ps):
        for p in ps:
            out = p.communicate(timeout=180)[0]
            print(out, end="")
            if p.returncode != 0:
                raise SystemExit(f"client {p.args[3:]} failed with {p.returncode}")

    # 1. word count (its flush resets, so kvagg is empty afterwards).
    if not a.key:
        finish(client(os.path.join(HERE, "..", "..", "examples", "wordcount.py"), "--host",
                      KV_IP, "--drop-share", "0.05", "--reset", tool=sys.executable))
    # 2. four clients at once, 5 % loss each.
    sums = [os.path.join(tmp, f"sent{i}.csv") for i in range(4)]
    finish(client("--host", KV_IP, "--tuples", "200000", "--keys", "5000", "--seed", "11",
                  "--drop-share", "0.05", "--timeout-ms", "1000", "--sums-out", sums[0],
                  *load_key, tool=a.load),
           client("--host", KV_IP, "--tuples", "200000", "--keys", "5000", "--seed", "12",
                  "--drop-share", "0.05", "--timeout-ms", "1000", "--sums-out", sums[1],
                  *load_key, tool=a.load),
           client("send", "--seed", "21", "--sums-out", sums[2]),
           client("send", "--seed", "22", "--sums-out", sums[3]))
    finish(client("check", "--reset", *sums))
    # 3. flush(reset) while sending.
    stop = os.path.join(tmp, "stop")
    race = [os.path.join(tmp, f"race{i}.csv") for i in range(2)]
    flusher = client("flusher", "--stop", stop, *race)
    time.sleep(0.3)
    finish(client("--host", KV_IP, "--tuples", "300000", "--keys", "2000", "--seed", "31",
                  "--drop-share", "0.05", "--timeout-ms", "1000", "--sums-out", race[0],
                  *load_key, tool=a.load),
           client("send", "--seed", "32", "--tuples", "30000", "--keys", "2000",
                  "--sums-out", race[1]))
    open(stop, "w").close()
    finish(flusher)
    # 4. malformed requests.
    if not a.key:
        finish(client("malformed"))
    # 5. ICMP is the kernel's: the steering program passes it, the kernel answers. (The clients'
    # ARP may have been answered before the program was attached, so it proves nothing.)
    pings = 3
    if a.xdp_prog:
        ping = ns.run(ns.cl, "ping", "-c", str(pings), "-i", "0.2", "-W", "2", KV_IP,
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = ping.communicate(timeout=30)[0]
        if ping.returncode != 0:
            raise SystemExit(f"ping to the kernel beside kvagg failed:\n{out}")

    kvagg.send_signal(signal.SIGINT)
    out = kvagg.communicate(timeout=60)[0]
    print(out[-3000:])
    j = json.load(open(json_path))
    if (a.xdp_prog and kvagg.returncode == 1 and "pmd_held" not in j
            and "still in use at exit (leak)" in out):
        # The scenarios passed; what fails is the exit check of a runtime that cannot yet tell
        # the mbufs net_af_xdp keeps in its fill ring from a leak (issue 11's pmd_held).
        print("SKIP: scenarios passed on AF_XDP, but this runtime counts the mbufs net_af_xdp "
              "keeps as a leak (no pmd_held accounting): exit status not checked")
        return 77
    if kvagg.returncode != 0:
        raise SystemExit(f"kvagg exit {kvagg.returncode}")
    drops = j["drops"]
    want = collections.Counter(reason for _, reason in MALFORMED.values() if not a.key)
    if drops["bad_auth"] != 0:
        raise SystemExit(f"drops[bad_auth] = {drops['bad_auth']}: a client's MAC did not verify")
    for reason in ("bad_request", "bad_op", "bad_magic", "malformed"):
        if drops[reason] != want[reason]:
            raise SystemExit(f"drops[{reason}] = {drops[reason]}, sent {want[reason]}")
    w = j["workers"][0]
    accounted = w["aggregated_packets"] + w["requests"] + j["workers"][0]["dropped"]
    problems = []
    if j["rx_packets"] != accounted:
        problems.append(f"rx {j['rx_packets']} != aggregated + requests + dropped {accounted}")
    if j["mempool_in_use_at_exit"] != 0:
        problems.append(f"{j['mempool_in_use_at_exit']} mbufs in use at exit")
    if drops["control_busy"] or w["responses_dropped"]:
        problems.append("requests refused or responses lost")
    if w["responses"] != j["tx_packets"] or w["responses"] == 0:
        problems.append("tx_packets != responses")
    if j["service"]["flushes"] < 4 or j["service"]["flushed_sum"] == 0:
        problems.append("flushes not counted")
    if a.xdp_prog:
        # Every frame kvagg saw came through the steering program; the kernel got the rest
        # (the echo requests at least).
        # Redirected frames the socket had no room for are the port's drops (rx_ring_full).
        x = j["xdp"]
        port = j["port_drops"]["0"]
        if (x["redirected"] != j["rx_packets"] + port["total"] or x["passed"] < pings
                or x["unclaimed"] != 0):
            problems.append(f"xdp counters {x} vs rx {j['rx_packets']}")
    if problems:
        raise SystemExit("; ".join(problems))
    print(f"port drops {j['port_drops']}")
    print(f"kvagg: exit 0, {j['rx_packets']} frames = {w['aggregated_packets']} aggregated + "
          f"{w['requests']} requests + {w['dropped']} dropped; {w['responses']} responses; "
          f"service {j['service']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
