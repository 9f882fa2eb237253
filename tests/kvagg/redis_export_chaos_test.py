#!/usr/bin/env python3
"""Two kvagg instances exporting to one real Redis Cluster, on the veth pairs of
kvagg_redis_export_test.cpp (namespaces it creates and passes in): A and B as shard_chaos_test.py
runs them (a namespace each, net_af_packet, --state; A on 10.213.0.1, B on 10.213.1.1), both
with --export to six redis-server processes (three primaries, three replicas, `redis-cli
--cluster create`) on 10.213.0.2 in the clients' namespace (B's namespace has a route to it over
B's pair), in a scratch directory, killed at the end whatever happens.

  1. A Redis without cluster mode at start: kvagg exits 2 with one "--export:" line.
  2. A and B (--state, --export every 300 ms) start before any Redis runs: one line each, they
     aggregate, their epochs wait in the backlog; then the cluster is created and takes them.
  3. Three sharded clients over A and B (two Python ShardedClient, shard_chaos_test.py's `send`;
     one C++ kvagg_load --endpoints --durable) send while A is killed with SIGKILL and restarted
     on its --state (the clients hold A's share meanwhile), the primary serving partition 0 is
     killed with SIGKILL (its replica takes over; the node restarts as a replica), every node is
     stopped (SIGSTOP) for 3 s, and one field of partition 3 is replaced by a string for 2 s
     (another writer's), so that its deltas are held apart in kvagg:{p3}:held while the rest of
     every batch applies, before its value is put back (the held deltas then added).
  4. The clients end with wait_durable(); once Redis holds their sums (the exporters catch up
     with their backlogs; at most 30 s), A and B stop on SIGINT (their last epochs exported):
     the sums in Redis, read with redis-cli, equal everything sent, key by key, exactly (A and
     B add into the same hashes); every partition's markers are A's and B's instances; the JSON
     has no backlog left, counted the held deltas, and docs/json.md lists its `export` keys.

    redis_export_chaos_test.py run --kvagg K --load L --kv-ns NA --kv-ns2 NB --cl-ns CL
                                   --kv-if IA --kv-if2 IB
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import service_test as st  # noqa: E402  (the namespaces, sums files)
import shard_chaos_test as shard  # noqa: E402  (kvagg instances, a namespace each; the clients)

MASK = 2**64 - 1
PORTS = range(7000, 7006)  # the cluster's nodes; 6999 the plain Redis of the bad-input check
PARTITIONS = 16
# The cluster's address: the clients' end of instance A's veth pair (kvagg_redis_export_test.cpp
# routes B's namespace to it over B's pair), so that both instances reach the same nodes and the
# nodes announce an address both can follow.
HOST = st.CLIENT_IP


class Redis:
    """redis-server processes on HOST in the clients' namespace, one directory each under tmp."""

    def __init__(self, ns, tmp, procs):
        self.ns, self.tmp, self.procs, self.nodes = ns, tmp, procs, {}

    def start(self, port, cluster=True):
        d = os.path.join(self.tmp, f"redis{port}")
        os.makedirs(d, exist_ok=True)
        argv = ["redis-server", "--port", str(port), "--bind", HOST, "--dir", d,
                "--save", "", "--appendonly", "no", "--logfile", os.path.join(d, "log"),
                # HOST is not a loopback address; it exists in this test's namespaces only.
                "--protected-mode", "no"]
        if cluster:
            argv += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--cluster-node-timeout", "1000"]
        p = self.ns.run(self.ns.cl, *argv)
        self.procs.append(p)
        self.nodes[port] = p
        end = time.time() + 10
        while self.cli(port, "PING") != "PONG":
            if time.time() > end:
                raise SystemExit(f"redis-server on {port} did not answer in 10 s")
            time.sleep(0.05)

    def cli(self, port, *args):
        r = subprocess.run(["ip", "netns", "exec", self.ns.cl, "redis-cli", "-h", HOST, "-p",
                            str(port), *args], capture_output=True, text=True)
        return r.stdout.strip()

    def create_cluster(self):
        for port in PORTS:
            self.start(port)
        r = subprocess.run(["ip", "netns", "exec", self.ns.cl, "redis-cli", "--cluster", "create",
                            *[f"{HOST}:{p}" for p in PORTS], "--cluster-replicas", "1",
                            "--cluster-yes"], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"redis-cli --cluster create failed:\n{r.stdout}{r.stderr}")
        self.wait_ok(PORTS)
        self.wait_synced()
        print(f"redis: cluster of 3 primaries and 3 replicas on {HOST}:7000-7005")

    def wait_ok(self, ports):
        end = time.time() + 30
        while not all("cluster_state:ok" in self.cli(p, "CLUSTER", "INFO") for p in ports):
            if time.time() > end:
                raise SystemExit("the cluster is not ok after 30 s")
            time.sleep(0.1)

    def wait_synced(self):
        """Until every replica has its primary's data (a replica still in its first sync is not
        one that can take over)."""
        end = time.time() + 30
        while sum("master_link_status:up" in self.cli(p, "INFO", "replication")
                  for p in PORTS) < 3:
            if time.time() > end:
                raise SystemExit("the replicas are not in sync after 30 s")
            time.sleep(0.1)

    def primary_of(self, key, ask):
        """The port of the primary serving key's slot, as node `ask` sees it."""
        slot = int(self.cli(ask, "CLUSTER", "KEYSLOT", key))
        for line in self.cli(ask, "CLUSTER", "NODES").splitlines():
            f = line.split()
            if "master" not in f[2] or "fail" in f[2]:
                continue
            for r in f[8:]:
                lo, _, hi = r.partition("-")
                if r[0] != "[" and int(lo) <= slot <= int(hi or lo):
                    return int(f[1].split(":")[1].split("@")[0])
        return None

    def fail_over(self, key):
        """SIGKILL of the primary serving key; waits for its replica to serve the slot, then
        starts the node again (it comes back as a replica)."""
        port = self.primary_of(key, PORTS[0])
        self.nodes[port].send_signal(signal.SIGKILL)
        self.nodes[port].wait()
        others = [p for p in PORTS if p != port]
        end = time.time() + 30
        while self.primary_of(key, others[0]) in (None, port):
            if time.time() > end:
                raise SystemExit(f"no replica took over from {port} in 30 s")
            time.sleep(0.1)
        new = self.primary_of(key, others[0])
        self.wait_ok(others)
        self.start(port)
        self.wait_ok(PORTS)
        self.wait_synced()
        print(f"redis: primary {port} killed, replica {new} took over, {port} back as replica")

    def pause(self, seconds):
        for p in self.nodes.values():
            p.send_signal(signal.SIGSTOP)
        time.sleep(seconds)
        for p in self.nodes.values():
            p.send_signal(signal.SIGCONT)
        self.wait_ok(PORTS)
        print(f"redis: every node stopped (SIGSTOP) for {seconds} s")

    def wait_exported(self):
        """Until an epoch newer than the one partition 0 holds now is applied: the exporter
        succeeds again (its next failure is told on a line of its own)."""
        def marker():
            m = self.cli(PORTS[0], "-c", "HGETALL", "kvagg:{p0}:epochs").split()
            return max((int(v) for v in m[1::2]), default=0)
        now, end = marker(), time.time() + 30
        while marker() <= now:
            if time.time() > end:
                raise SystemExit("no epoch exported within 30 s")
            time.sleep(0.05)

    def wait_sums(self, sent, deadline_s):
        """Until Redis holds what the clients sent: the clients are durable in kvagg, whose
        exporter catches up with its backlog (a backlog left at the stop would stay in --state)."""
        end = time.time() + deadline_s
        while self.sums()[0] != sent:
            if time.time() > end:
                return print(f"redis: the sums not all exported after {deadline_s} s")
            time.sleep(0.5)

    def sums(self):
        """Every partition's hash, read with redis-cli -c (it follows MOVED)."""
        got, markers = {}, []
        for p in range(PARTITIONS):
            flat = self.cli(PORTS[0], "-c", "HGETALL", f"kvagg:{{p{p}}}:sums").split()
            for k, v in zip(flat[::2], flat[1::2]):
                got[int(k)] = int(v) & MASK
            markers.append(self.cli(PORTS[0], "-c", "HGETALL", f"kvagg:{{p{p}}}:epochs").split())
        return got, markers


def not_cluster(kv, redis):
    """A plain Redis as --export's seed: exit 2, one line."""
    redis.start(6999, cluster=False)
    argv = kv.argv()
    argv[argv.index("--export") + 1] = f"redis://{HOST}:6999"
    p = kv.ns.run(kv.ns.kv, *argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=60)
    lines = [ln for ln in err.splitlines() if "--export" in ln]
    if p.returncode != 2 or len(lines) != 1:
        raise SystemExit(f"a non-cluster Redis: exit {p.returncode}, stderr:\n{err}")
    print(f"bad input: non-cluster Redis at start: exit 2, '{lines[0]}'")


def hold_partition3(redis, seconds):
    """Key 2995's field (partition 3, sent by every client) swapped for a string (atomically: a
    script), so that its deltas are held apart; then its value put back, exactly as it was."""
    key = "kvagg:{p3}:sums"
    swap = "local v = redis.call('HGET', KEYS[1], ARGV[1]); " \
           "redis.call('HSET', KEYS[1], ARGV[1], 'not-a-number'); return v"
    was = redis.cli(PORTS[0], "-c", "EVAL", swap, "1", key, "2995")
    time.sleep(seconds)
    redis.cli(PORTS[0], "-c", "HSET", key, "2995", was or "0")
    print(f"redis: partition 3's field 2995 not an integer for {seconds} s (its deltas held)")


def start_clients(a, ns, tmp, procs, stop):
    """Three sharded clients over A and B: two Python (shard_chaos_test.py's `send`, with an
    endpoints file that stays "A,B"), one C++ kvagg_load --endpoints --durable."""
    ep_file = os.path.join(tmp, "endpoints")
    with open(ep_file, "w") as f:
        f.write(shard.endpoints("A", "B") + "\n")
    me = [sys.executable, os.path.join(HERE, "shard_chaos_test.py")]
    sums = [os.path.join(tmp, f"sent{i}.csv") for i in range(3)]
    cmds = [me + ["send", "--seed", "41", "--sums-out", sums[0], "--stop", stop,
                  "--endpoints-file", ep_file],
            me + ["send", "--seed", "42", "--sums-out", sums[1], "--stop", stop,
                  "--endpoints-file", ep_file],
            [a.load, "--endpoints", shard.endpoints("A", "B"), "--tuples", "100000000", "--until",
             stop, "--keys", "4000", "--seed", "43", "--pace", "300", "--timeout-ms", "500",
             "--status-every", "300", "--durable", "--sums-out", sums[2]]]
    clients = []
    for cmd in cmds:
        clients.append(ns.run(ns.cl, *cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True))
        procs.append(clients[-1])
    return clients, sums


def end_clients(clients):
    for p in clients:
        print(p.communicate(timeout=120)[0], end="")
        if p.returncode != 0:
            raise SystemExit(f"client {p.args[3:]} failed with {p.returncode}")


def exporters(a, ns, tmp, procs):
    """kvagg A and B (shard_chaos_test.py's instances, a namespace each), both exporting to the
    cluster."""
    kvs = shard.instances(a, ns, tmp, procs, {"A": (a.kv_ns, a.kv_if), "B": (a.kv_ns2, a.kv_if2)})
    for kv in kvs.values():
        kv.extra = ["--export", f"redis://{HOST}:7000,{HOST}:7001", "--export-ms", "300",
                    "--export-timeout-ms", "500"]
    return kvs


def drive(a, ns, tmp, procs):
    kvs = exporters(a, ns, tmp, procs)
    redis = Redis(ns, tmp, procs)
    not_cluster(kvs["A"], redis)
    for kv in kvs.values():
        kv.start()  # no cluster yet
    stop = os.path.join(tmp, "stop")
    clients, sums = start_clients(a, ns, tmp, procs, stop)
    rng = random.Random(a.seed)
    time.sleep(1)
    redis.create_cluster()
    time.sleep(rng.uniform(0.5, 1.5))
    kvs["A"].kill()
    kvs["A"].start()
    print("kvagg: A killed (SIGKILL) and restarted on its --state")
    time.sleep(rng.uniform(0.5, 1.5))
    redis.fail_over("kvagg:{p0}:sums")
    time.sleep(rng.uniform(0.5, 1.5))
    redis.pause(3)
    redis.wait_exported()
    hold_partition3(redis, 2)
    time.sleep(1)
    open(stop, "w").close()
    end_clients(clients)
    redis.wait_sums(st.read_sums(sums), 30)
    return check(kvs, shard.interrupt(kvs), redis, st.read_sums(sums))


def check(kvs, outputs, redis, sent):
    """The sums in Redis against what was sent; each instance's JSON and lines."""
    for n, outs in outputs.items():
        if "aggregating, epochs wait in the backlog" not in outs[0]:
            raise SystemExit(f"{n}: no line for the cluster not answering at start:\n"
                             f"{outs[0][-3000:]}")
    print("bad input: no Redis at start: one line, kvagg A and B aggregated, the backlog waited")
    got, markers = redis.sums()
    js = {n: json.load(open(kv.json))["export"] for n, kv in kvs.items()}
    bad = [k for k in sent if got.get(k, 0) != sent[k]]
    if bad or set(got) - set(sent):
        k = bad[0] if bad else min(set(got) - set(sent))
        raise SystemExit(f"{len(bad)} of {len(sent)} keys differ in Redis, e.g. {k}: "
                         f"{got.get(k)} != sent {sent.get(k)}; export {js}; "
                         f"kvagg A's last run:\n{outputs['A'][-1][-2000:]}")
    print(f"check: the sums in Redis (redis-cli) == sent for all {len(sent)} keys, "
          f"added by A and B")
    check_json(js, outputs, markers)
    return 0


def check_json(js, outputs, markers):
    """Each partition's markers are A's and B's instances; no backlog left; the held deltas of
    partition 3 (one instance owns key 2995) counted, told and applied."""
    ids = {e["instance"] for e in js.values()}
    if len(ids) != 2 or any(set(m[::2]) != ids for m in markers):
        raise SystemExit(f"markers: {markers}: instances {sorted(ids)} expected in each partition")
    told = sum("field 2995 of kvagg:{p3}:sums is not an integer" in o
               for outs in outputs.values() for o in outs)
    held = sum(e["held"] for e in js.values())
    if any(e["backlog"] != 0 or e["held_fields"] != 0 for e in js.values()) or not held \
            or not told:
        raise SystemExit(f"JSON export {js}, {told} runs told the held field")
    errors = sum(e["errors"] for e in js.values())
    documented = json_md_keys("export")
    for e in js.values():
        if set(e) - documented:
            raise SystemExit(f"docs/json.md's `export` row lacks {sorted(set(e) - documented)}")
    print(f"kvagg JSON: backlog 0 in A and B, {held} deltas held and applied, "
          f"{errors} failed tries retried, "
          f"{sum(e['already_applied'] for e in js.values())} batches found applied before, "
          f"epochs {[e['epochs'] for e in js.values()]}")


def json_md_keys(row):
    """The names in backquotes on docs/json.md's row for `row`."""
    with open(os.path.join(HERE, "..", "..", "docs", "json.md")) as f:
        line = next(ln for ln in f if ln.startswith(f"| `{row}` |"))
    return set(re.findall(r"`([a-z_]+)`", line))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("run")
    for opt in ("--kvagg", "--load", "--kv-ns", "--kv-ns2", "--cl-ns", "--kv-if", "--kv-if2"):
        d.add_argument(opt, required=True)
    d.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    a.workers, a.af_xdp = 1, False  # state_chaos_test.Kvagg's options
    return st.in_namespaces(a, "kvredis", lambda ns, tmp, procs: drive(a, ns, tmp, procs))


if __name__ == "__main__":
    sys.exit(main())
