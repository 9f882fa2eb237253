#!/usr/bin/env python3
"""kvagg --state under SIGKILL, on the veth pair(s) of kvagg_state_chaos_test.cpp (namespaces
it creates and passes in, as service_test.py's): kvagg (net_af_packet, or --af-xdp with --af-xdp) in one namespace, three
clients in the other. With --workers 2 kvagg has two ports, one veth pair each (--kv-if2, the
second pair's address 10.213.1.1), and a worker per port: a stream stays on its worker across
restarts (af_packet's fanout over the queues of one port may move a flow to another socket when
a ring fills, which splits a stream between workers). The clients: two Python (linerate_kvagg), one C++ (kvagg_load --durable), each
its own stream, sending until the driver is done with kvagg: killed with SIGKILL 5 times at
seeded random moments, once while a checkpoint is being written (FILE.tmp exists:
LINERATE_TEST_CHECKPOINT_PAUSE_MS holds each checkpoint 20 ms between its fsync and its rename),
and started again each time with the same --state; after the third restart one Python client
does a flush(reset). Each client then ends with wait_durable(). Then: what was flushed plus what read() returns equals collections.Counter of
everything sent, key by key, exactly; and kvagg's JSON (after SIGINT) agrees: aggregated_sum +
flushed_sum (over every run on the file) is the sum of everything sent.

With --refusals no socket holds kvagg's port in its namespace: the kernel there answers every
datagram to it with ICMP port unreachable (the caller turns its rate limit off), while kvagg is
down (and, on net_af_packet, while it runs: the kernel sees the frames too), and the clients get
ECONNREFUSED on their sends and receives. They must ride through as through silence: no
exception but the documented ones (a client that raises anything else exits non-zero), sums
exact; each reports how many refusals it saw, and every one must have seen some. With --af-xdp
kvagg runs on --af-xdp KV_IF (its steering program) instead of net_af_packet, and every start
after a kill must be steered.

With --kvagg-before OLD the first start is OLD (a kvagg built from an older commit) on the same
command line; under the clients' load it is stopped (--upgrade-by term: SIGTERM, as an upgrade
does; the new kvagg must load the checkpoint OLD's JSON says it wrote last) or killed (kill:
SIGTERM's last checkpoint never written; the new kvagg must load one), and --kvagg starts on the
same --state at once, before the 5 kills; the sums stay exact. net_af_packet only: OLD may predate
the BPF link that lets --af-xdp start again after a kill.

    state_chaos_test.py run --kvagg K --load L --kv-ns A --cl-ns B --kv-if I [--workers 2 | --af-xdp]
                            [--refusals] [--kvagg-before OLD [--upgrade-by term|kill]]
"""
import re
import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import service_test as st  # noqa: E402  (the namespaces, the client module, sums files)

MASK = 2**64 - 1
KV_IP2 = "10.213.1.1"  # kvagg's second port with --workers 2
KILLS = 5
# Requests that wait out a restart (kvagg takes about a second to come back).
PATIENT = dict(timeout=0.5, retries=40)


def cmd_send(a):
    """A Python client: paced random tuples until --stop exists, a flush(reset) once --flush-now
    exists (with --flush-out), then wait_durable(). Writes the sums it sent (and what its flush
    took)."""
    kv = st.client_module()
    rng = random.Random(a.seed)
    sent = collections.Counter()
    # A status every 300 datagrams: confirmed datagrams wait for durability, and restarts are
    # seen by the instance id while sending (a status blocks until kvagg is back).
    with kv.Client(st.KV_IP, seed=a.seed, status_every=300, **PATIENT) as c:
        flushed = False
        for i in range(a.tuples):
            if a.flush_out and not flushed and i % 100 == 0 and os.path.exists(a.flush_now):
                flushed = True  # asked before the stop: done before stopping
                with open(a.flush_out, "w") as f:
                    for fk, fv in sorted(c.flush(reset=True).items()):
                        f.write(f"{fk},{fv}\n")
            if i % 100 == 0 and os.path.exists(a.stop):
                break
            k, v = rng.randrange(a.keys), rng.getrandbits(40)
            try:
                c.add(k, v)
            except kv.KvaggTimeout:
                pass  # kvagg down during an automatic status: the datagram is kept
            sent[k] += v
            if i % 100 == 99:
                time.sleep(0.005)
        if a.flush_out and not flushed:
            raise SystemExit("stopped before the flush was asked for")
        done = c.wait_durable(patience=60)
        print(f"python client {c.stream:#x}: {c.sent_datagrams} sent, {c.retransmitted} resent, "
              f"{c.restarts_seen} restarts seen, {c.refused} refused, "
              f"durable through {done['durable_through']}")
    st.write_sums(a.sums_out, sent)


def cmd_durable(a):
    """Waits until kvagg's state file holds datagrams of the Python clients' streams (their
    seeds), as a status answers (durable_through); the C++ client, a native process started with
    them, is ahead of both."""
    kv = st.client_module()
    end = time.time() + 30
    with kv.Client(st.KV_IP, **PATIENT) as c:
        streams = [kv.Client(st.KV_IP, seed=s).stream for s in a.seeds]  # a seed's stream id
        while not all(c.stream_status(s)["durable_through"] for s in streams):
            if time.time() > end:
                raise SystemExit("the clients' streams not in kvagg's state file after 30 s")
            time.sleep(0.05)


def cmd_check(a):
    """read() of every key sent, plus what flushes took, against the sums the clients sent."""
    kv = st.client_module()
    want = st.read_sums(a.sums)
    flushed = st.read_sums([a.flushed])
    with kv.Client(st.KV_IP, **PATIENT) as c:
        got = c.read(list(want))
        extra = c.flush()
    bad = [k for k in want if (flushed[k] + got.get(k, 0)) & MASK != want[k]]
    if bad:
        k = bad[0]
        raise SystemExit(f"{len(bad)} of {len(want)} keys differ, e.g. {k}: flushed "
                         f"{flushed[k]} + read {got.get(k)} != sent {want[k]}")
    if not set(extra) <= set(want):
        raise SystemExit("kvagg holds keys nobody sent")
    print(f"check: flushed + read == sent for all {len(want)} keys "
          f"({sum(1 for k in want if flushed[k])} with flushed amounts)")


class Kvagg:
    """kvagg in its namespace, started again with the same --state after each kill. Several
    instances (shard_chaos_test.py: a namespace each) differ in `ns`, `ip` (the address on its
    interface), `tmp` and `cpu`."""

    def __init__(self, a, ns, tmp, procs, ip=st.KV_IP, cpu="0"):
        self.a, self.ns, self.tmp, self.procs = a, ns, tmp, procs  # procs: killed at the end
        self.ip, self.cpu = ip, cpu
        self.state = os.path.join(tmp, "kvagg.state")
        self.json = os.path.join(tmp, "kvagg.json")
        self.proc, self.starts, self.outputs = None, 0, []
        self.extra = []  # options added to every start

    def start(self, kvagg=None):
        self.proc = self.ns.run(self.ns.kv, *self.argv(kvagg), env=self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.procs.append(self.proc)
        self.starts += 1
        if not st.wait_ready(self.ns, 30, self.ip):
            self.proc.kill()
            raise SystemExit("kvagg did not answer within 30 s:\n" + self.proc.communicate()[0])

    @staticmethod
    def env():
        return dict(os.environ, LINERATE_TEST_CHECKPOINT_PAUSE_MS="20")

    def argv(self, kvagg=None):
        """The command line of every start (self.extra appended: the caller's options)."""
        vdevs = [f"--vdev=net_af_packet0,iface={self.ns.kv_if}"]
        port = []
        if self.a.af_xdp:
            # --af-xdp: the steering program is attached with a BPF link, so a SIGKILL leaves
            # nothing on the interface and the same command line starts again at once.
            vdevs, port = [], ["--af-xdp", self.ns.kv_if]
        # Two workers on a 2-CPU machine: the main lcore and the first worker share CPU 0.
        lcores = self.cpu
        if self.a.workers == 2:
            vdevs.append(f"--vdev=net_af_packet1,iface={self.a.kv_if2}")
            lcores = "0@0,1@0,2@1"
        return [kvagg or self.a.kvagg, "--lcores", lcores, "--no-huge", "-m", "512", "--no-pci",
                f"--file-prefix={self.ns.kv}", *vdevs, "--", *port, "--keys", "64K",
                "--stats-period", "0", "--state", self.state, "--checkpoint-ms", "100",
                "--json", self.json,
                # Service ops from the test's addresses (a kvagg before issue 45 knows no --allow).
                *([] if kvagg else ["--allow", "10.213.0.0/16"]), *self.extra]

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.outputs.append(self.proc.communicate()[0])

    def stop(self):
        """SIGTERM, as an upgrade stops it: exit 0, a last checkpoint written. Returns that
        checkpoint's number (its JSON's)."""
        self.proc.send_signal(signal.SIGTERM)
        self.outputs.append(self.proc.communicate(timeout=60)[0])
        if self.proc.returncode != 0:
            raise SystemExit(f"kvagg exit {self.proc.returncode} after SIGTERM:\n"
                             f"{self.outputs[-1][-3000:]}")
        with open(self.json) as f:
            return json.load(f)["state"]["last_checkpoint"]

    def kill_in_checkpoint(self):
        """SIGKILL while FILE.tmp exists: between a checkpoint's write and its rename."""
        tmp = self.state + ".tmp"
        end = time.time() + 10
        while not os.path.exists(tmp):
            if time.time() > end:
                raise SystemExit("no checkpoint in progress seen in 10 s")
            time.sleep(0.001)
        self.kill()
        return os.path.exists(tmp)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd")
    d = sub.add_parser("run")
    for opt in ("--kvagg", "--load", "--kv-ns", "--cl-ns", "--kv-if"):
        d.add_argument(opt, required=True)
    d.add_argument("--workers", type=int, default=1, choices=(1, 2))
    d.add_argument("--kv-if2", help="with --workers 2: kvagg's second interface (10.213.1.1)")
    d.add_argument("--af-xdp", action="store_true",
                   help="kvagg on --af-xdp KV_IF (its steering program) instead of net_af_packet")
    d.add_argument("--seed", type=int, default=1)
    d.add_argument("--refusals", action="store_true",
                   help="no socket on kvagg's port: the kernel refuses its datagrams")
    d.add_argument("--kvagg-before", metavar="OLD",
                   help="the first start runs OLD (an older kvagg), upgraded to --kvagg under load")
    d.add_argument("--upgrade-by", choices=("term", "kill"), default="term",
                   help="with --kvagg-before: how OLD is stopped")
    s = sub.add_parser("send")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--tuples", type=int, default=10**7)  # at most
    s.add_argument("--stop", required=True)
    s.add_argument("--flush-now")
    s.add_argument("--keys", type=int, default=3000)
    s.add_argument("--sums-out", required=True)
    s.add_argument("--flush-out")
    c = sub.add_parser("check")
    c.add_argument("--flushed", required=True)
    c.add_argument("sums", nargs="+")
    w = sub.add_parser("durable")
    w.add_argument("--seeds", type=int, nargs="+", required=True)
    a = ap.parse_args()
    if a.cmd == "durable":
        return cmd_durable(a)
    if a.cmd == "send":
        return cmd_send(a)
    if a.cmd == "check":
        return cmd_check(a)
    if a.af_xdp and a.workers != 1:
        ap.error("--af-xdp runs one worker")
    if a.af_xdp and a.kvagg_before:
        ap.error("--kvagg-before runs on net_af_packet (an older kvagg may not restart on --af-xdp)")
    return st.in_namespaces(a, "kvchaos", lambda ns, tmp, procs: drive(a, ns, tmp, procs))


def upgrade(kv, rng, durable):
    """The first start (--kvagg-before) stopped under load, once its state file holds the
    clients' streams (the process `durable`), --kvagg started on that file. Returns the checkpoint
    the new kvagg must have loaded (None after a kill: any)."""
    if durable.wait(timeout=60) != 0:
        raise SystemExit(f"the old kvagg did not checkpoint the clients: {durable.communicate()[0]}")
    time.sleep(rng.uniform(0.1, 0.5))
    if kv.a.upgrade_by == "term":
        written = kv.stop()
    else:
        written = None
        kv.kill()
    kv.start()
    return written


def check_upgrade(a, kv, written):
    """The new kvagg's first run (ended by the first kill) resumed from the old one's state."""
    m = re.search(r"checkpoint (\d+) loaded \(\d+ keys, 3 streams\)", kv.outputs[1])
    if not m or (written is not None and int(m.group(1)) != written):
        raise SystemExit(f"the new kvagg did not load the old one's checkpoint {written}:\n"
                         f"{kv.outputs[1][-3000:]}")
    how = "SIGTERM" if a.upgrade_by == "term" else "SIGKILL"
    print(f"upgrade: {a.kvagg_before} stopped by {how} under load, {a.kvagg} loaded its "
          f"checkpoint {m.group(1)} (the 3 clients' streams) from the same --state")


def chaos(kv, clients, rng, flush_now):
    """KILLS SIGKILLs while the clients run, the second one in mid-checkpoint; the flush after
    the third restart."""
    in_checkpoint = False
    for n in range(KILLS):
        time.sleep(rng.uniform(0.3, 1.0))
        if all(p.poll() is not None for p in clients):
            raise SystemExit(f"the clients finished before kill {n + 1}: make them send longer")
        if n == 1:
            # The rename may win the race with the kill: then try the next checkpoint.
            for _ in range(5):
                in_checkpoint = kv.kill_in_checkpoint()
                kv.start()
                if in_checkpoint:
                    break
        else:
            kv.kill()
            kv.start()
        if n == 2:
            open(flush_now, "w").close()
    if not in_checkpoint:
        raise SystemExit("the mid-checkpoint kill found no FILE.tmp left behind")
    print(f"chaos: {KILLS} SIGKILLs, one in mid-checkpoint (FILE.tmp left behind), "
          f"{kv.starts} starts")


def drive(a, ns, tmp, procs):
    me = [sys.executable, os.path.abspath(__file__)]
    if not a.refusals:
        procs.append(st.hold_port(ns))  # also while kvagg is down
    kv = Kvagg(a, ns, tmp, procs)
    kv.start(a.kvagg_before)
    sums = [os.path.join(tmp, f"sent{i}.csv") for i in range(3)]
    flushed = os.path.join(tmp, "flushed.csv")

    def client(*args, tool=None):
        cmd = [tool] + list(args) if tool else me + list(args)
        p = ns.run(ns.cl, *cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(p)
        return p

    stop, flush_now = os.path.join(tmp, "stop"), os.path.join(tmp, "flush-now")
    clients = [client("send", "--seed", "41", "--sums-out", sums[0], "--stop", stop,
                      "--flush-now", flush_now, "--flush-out", flushed),
               client("send", "--seed", "42", "--sums-out", sums[1], "--stop", stop),
               client("--host", st.KV_IP if a.workers == 1 else KV_IP2, "--tuples", "100000000", "--until", stop,
                      "--keys", "4000", "--seed", "43", "--pace", "300", "--timeout-ms", "500",
                      "--status-every", "300", "--durable", "--sums-out", sums[2], tool=a.load)]
    rng = random.Random(a.seed)
    if a.kvagg_before:
        written = upgrade(kv, rng, client("durable", "--seeds", "41", "42"))
    chaos(kv, clients, rng, flush_now)
    if a.kvagg_before:
        check_upgrade(a, kv, written)
    time.sleep(0.5)  # the clients see the last restart while sending
    open(stop, "w").close()
    outs = []
    for p in clients:
        outs.append(p.communicate(timeout=120)[0])
        print(outs[-1], end="")
        if p.returncode != 0:
            raise SystemExit(f"client {p.args[3:]} failed with {p.returncode}")
    if a.refusals:
        check_refused(outs)
    check = client("check", "--flushed", flushed, *sums)
    print(check.communicate(timeout=60)[0], end="")
    if check.returncode != 0:
        raise SystemExit("check failed")
    kv.proc.send_signal(signal.SIGINT)
    out = kv.proc.communicate(timeout=60)[0]
    if kv.proc.returncode != 0:
        raise SystemExit(f"kvagg exit {kv.proc.returncode}:\n{out[-3000:]}")
    if a.af_xdp:
        runs = kv.outputs + [out]
        steered = sum(f"xdp steering on {ns.kv_if}" in o for o in runs)
        if steered != kv.starts:
            raise SystemExit(f"{steered} of {kv.starts} starts on AF_XDP with the steering "
                             f"program:\n{runs[-1][-3000:]}")
        print(f"af_xdp: all {kv.starts} starts steered (the same command line after each kill)")
    j = json.load(open(kv.json))
    j["kvagg_workers_wanted"] = a.workers
    return check_json(j, st.read_sums(sums))


def check_refused(outs):
    """Every client saw ICMP refusals (the Python clients print "N refused", kvagg_load's JSON
    has "refused") and came through them."""
    counts = []
    for out in outs:
        m = re.search(r"(\d+) refused,", out) or re.search(r'"refused":(\d+)', out)
        if not m:
            raise SystemExit(f"a client did not report its refusals:\n{out}")
        counts.append(int(m.group(1)))
    if not all(counts):
        raise SystemExit(f"refusals per client {counts}: the refusal path was not exercised")
    print(f"refusals: every client rode through ICMP refusals ({', '.join(map(str, counts))}), "
          f"no undocumented exception")


def check_json(j, sent):
    total = sum(sent.values()) & MASK
    got = (j["aggregated_sum"] + j["service"]["flushed_sum"]) & MASK
    if got != total:
        raise SystemExit(f"JSON: aggregated_sum + flushed_sum = {got}, sent {total}")
    if len(j["workers"]) != j["kvagg_workers_wanted"]:
        raise SystemExit(f"JSON: {len(j['workers'])} workers")
    if j["state"]["failures"] or j["state"]["loaded_checkpoint"] == 0 or j["overflow"]:
        raise SystemExit(f"JSON: state {j['state']}, overflow {j['overflow']}")
    w = j["workers"]
    if j["rx_packets"] != sum(x["aggregated_packets"] + x["requests"] + x["dropped"] for x in w):
        raise SystemExit("JSON: rx != aggregated + requests + dropped")
    print(f"kvagg JSON: aggregated_sum + flushed_sum == sum sent; {j['service']['flushes']} "
          f"flushes over the runs, last run resumed from checkpoint "
          f"{j['state']['loaded_checkpoint']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
