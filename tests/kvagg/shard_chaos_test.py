#!/usr/bin/env python3
"""Sharded clients (docs/scale-out.md "Sharded clients") against real kvagg instances, on the veth
pairs of kvagg_shard_chaos_test.cpp (namespaces it creates and passes in): each kvagg instance
in a namespace of its own, on a veth end (net_af_packet, --state): A on 10.213.0.1, B on
10.213.1.1, C on 10.213.2.1; three sharded clients in a fourth namespace (two Python
linerate_kvagg.ShardedClient, one C++ kvagg_load --endpoints), each following the endpoints file
the driver writes (one line, "A,B" at first). While they send:

  1. A is killed with SIGKILL and started again with its --state 2 s later (the clients hold A's
     share and go on with B meanwhile: B's sums must grow while A is down);
  2. C is started and added to the file: the keys C now owns go to it;
  3. C is killed and started again the same way;
  4. B is taken out of the file: each client drains what it holds for B, flushes B with reset and
     adds those sums to A and C (a key split across owners still reads right).
Then each client ends with wait_durable(), and: a sharded read over A and C of every key sent
equals collections.Counter of everything sent, exactly; B holds nothing (every key reads 0); and
the instances' JSON (after SIGINT) agrees: A's and C's aggregated_sum add up to the sum sent, B's
is 0 and its flushed_sum what was moved off it.

A namespace each: a packet socket takes every interface's frames between its creation and its
bind to one, and DPDK's net_af_packet binds after setting up its ring, so a kvagg (re)started
beside another one's traffic would aggregate a few of that one's datagrams (kvagg takes any
IPv4/UDP datagram to its port, whatever the destination address).

    shard_chaos_test.py run --kvagg K --load L --kv-ns NA --kv-ns2 NB --kv-ns3 NC --cl-ns CL
                            --kv-if IA --kv-if2 IB --kv-if3 IC
"""
import argparse
import collections
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
import service_test as st  # noqa: E402  (the namespaces, the client module, sums files)
import state_chaos_test as chaos  # noqa: E402  (kvagg restarted with its --state)

MASK = 2**64 - 1
IPS = {"A": "10.213.0.1", "B": "10.213.1.1", "C": "10.213.2.1"}
PATIENT = chaos.PATIENT  # requests that wait out a restart
DEADLINE_S = 100  # kvagg_shard_chaos_test.cpp waits 110 s


def endpoints(*names):
    return ",".join(f"{IPS[n]}:9000" for n in names)


def read_endpoints(path):
    try:
        with open(path) as f:
            return [e for e in f.readline().strip().split(",") if e]
    except FileNotFoundError:
        return []


def follow(c, path):
    """The endpoints file's instances: new ones added, dropped ones removed (their sums moved);
    a removal the instance does not answer is tried again next time. Returns the removals."""
    kv = st.client_module()
    want = [kv.endpoint_name(e) for e in read_endpoints(path)]
    if not want:
        return 0
    for e in want:
        if e not in c.shards:
            c.add_endpoint(e)
    removed = 0
    for e in [e for e in c.endpoints() if e not in want]:
        try:
            c.remove_endpoint(e)
            removed += 1
        except kv.KvaggTimeout:
            pass
    return removed


def cmd_send(a):
    """A sharded Python client: paced random tuples until --stop exists, following the endpoints
    file, then wait_durable(). Writes the sums it sent."""
    kv = st.client_module()
    rng = random.Random(a.seed)
    sent = collections.Counter()
    removed = 0
    # A status per instance every 20 datagrams (these clients send about a hundred a second):
    # the kills are seen while sending, as outages (status_patience) and new instance ids.
    with kv.ShardedClient(read_endpoints(a.endpoints_file), seed=a.seed, status_every=20,
                          **PATIENT) as c:
        for i in range(a.tuples):
            if i % 100 == 0:
                if os.path.exists(a.stop):
                    break
                removed += follow(c, a.endpoints_file)
            k, v = rng.randrange(a.keys), rng.getrandbits(40)
            c.add(k, v)
            sent[k] += v
            if i % 100 == 99:
                time.sleep(0.005)
        c.wait_durable(patience=60)
        print(f"python sharded client: endpoints {','.join(c.endpoints())}, {c.sent_datagrams} "
              f"sent, {c.retransmitted} resent, {c.restarts_seen} restarts seen, {c.outages} "
              f"outages, {removed} removed")
    st.write_sums(a.sums_out, sent)


def cmd_held(a):
    """The sum of every sum kvagg at --ip holds (a flush without reset)."""
    kv = st.client_module()
    with kv.Client(a.ip, **PATIENT) as c:
        print(sum(c.flush().values()))


def cmd_check(a):
    """A sharded read over --endpoints of every key sent against the sums the clients sent; each
    of --empty holds nothing."""
    kv = st.client_module()
    want = st.read_sums(a.sums)
    with kv.ShardedClient(a.endpoints.split(","), **PATIENT) as c:
        got = c.read(list(want))
        extra = c.flush()
    bad = [k for k in want if got[k] != want[k]]
    if bad:
        for name in a.endpoints.split(",") + [a.empty]:  # where the difference is
            with kv.Client(*kv.parse_endpoint(name), **PATIENT) as one:
                part = one.read(bad[:8])
            print(f"{name} holds (key, its part, read - sent): "
                  f"{[(k, part[k], (got[k] - want[k]) & MASK) for k in bad[:8]]}")
        raise SystemExit(f"{len(bad)} of {len(want)} keys differ, e.g. {bad[0]}: read "
                         f"{got[bad[0]]} != sent {want[bad[0]]}")
    if not set(extra) <= set(want):
        raise SystemExit("the instances hold keys nobody sent")
    with kv.Client(a.empty, **PATIENT) as c:
        left = {k: v for k, v in c.read(list(want)).items() if v}
    if left:
        raise SystemExit(f"the removed instance still holds {len(left)} keys")
    print(f"check: sharded read == sent for all {len(want)} keys over {a.endpoints}; "
          f"{a.empty} holds none")


def wait_for_file(path, what, timeout_s=60):
    end = time.time() + timeout_s
    while not os.path.exists(path):
        if time.time() > end:
            raise SystemExit(f"no {what} after {timeout_s} s")
        time.sleep(0.05)


def instances(a, ns, tmp, procs, where):
    """A chaos.Kvagg (not started) for each name in `where` (name: its namespace, its interface),
    A on CPU 0, B on CPU 1, C on CPU 0; a directory of its own under tmp, its port held also
    while it is down. redis_export_chaos_test.py runs A and B the same way."""
    kvs = {}
    for n, cpu in (("A", "0"), ("B", "1"), ("C", "0")):
        if n not in where:
            continue
        d = os.path.join(tmp, n)
        os.mkdir(d)
        kv_ns = st.Namespaces(where[n][0], ns.cl, where[n][1])
        procs.append(st.hold_port(kv_ns))  # also while it is down
        kvs[n] = chaos.Kvagg(a, kv_ns, d, procs, ip=IPS[n], cpu=cpu)
    return kvs


def drive(a, ns, tmp, procs):
    me = [sys.executable, os.path.abspath(__file__)]
    where = {"A": (a.kv_ns, a.kv_if), "B": (a.kv_ns2, a.kv_if2), "C": (a.kv_ns3, a.kv_if3)}
    kvs = instances(a, ns, tmp, procs, where)
    kvs["A"].start()
    kvs["B"].start()
    ep_file = os.path.join(tmp, "endpoints")
    with open(ep_file, "w") as f:
        f.write(endpoints("A", "B") + "\n")
    stop = os.path.join(tmp, "stop")
    sums = [os.path.join(tmp, f"sent{i}.csv") for i in range(3)]

    def client(*args, tool=None):
        cmd = [tool] + list(args) if tool else me + list(args)
        p = ns.run(ns.cl, *cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(p)
        return p

    clients = [client("send", "--seed", "51", "--sums-out", sums[0], "--stop", stop,
                      "--endpoints-file", ep_file),
               client("send", "--seed", "52", "--sums-out", sums[1], "--stop", stop,
                      "--endpoints-file", ep_file),
               client("--endpoints", endpoints("A", "B"), "--endpoints-file", ep_file,
                      "--tuples", "100000000", "--until", stop, "--keys", "4000", "--seed", "53",
                      "--pace", "100", "--timeout-ms", "500", "--status-every", "100",
                      "--durable", "--sums-out", sums[2], tool=a.load)]
    def held_by(n):
        p = client("held", "--ip", IPS[n])
        out = p.communicate(timeout=60)[0]
        if p.returncode != 0:
            raise SystemExit(f"no flush answer from {n}: {out}")
        return int(out)

    scenario(kvs, clients, ep_file, random.Random(a.seed), held_by)
    open(stop, "w").close()
    outs = []
    for p in clients:
        outs.append(p.communicate(timeout=150)[0])
        print(outs[-1], end="")
        if p.returncode != 0:
            raise SystemExit(f"client {p.args[3:6]} failed with {p.returncode}")
    check = client("check", "--endpoints", endpoints("A", "C"), "--empty", IPS["B"], *sums)
    print(check.communicate(timeout=120)[0], end="")
    if check.returncode != 0:
        raise SystemExit("check failed")
    check_clients(outs)
    return check_json(kvs, st.read_sums(sums))


def write_endpoints(path, names):
    with open(path + ".tmp", "w") as f:
        f.write(endpoints(*names) + "\n")
    os.rename(path + ".tmp", path)  # the clients read a whole line or the old one


def alive(clients, step):
    if any(p.poll() is not None for p in clients):
        raise SystemExit(f"a client ended before {step}: make them send longer")


def scenario(kvs, clients, ep_file, rng, held_by):
    time.sleep(rng.uniform(1.0, 1.5))
    alive(clients, "the kill of A")
    kvs["A"].kill()
    before = held_by("B")
    time.sleep(2.0)  # the clients go on with B while A is down
    after = held_by("B")
    if after == before:
        raise SystemExit(f"B got nothing while A was down ({before}): the clients stalled")
    kvs["A"].start()
    print("chaos: A killed (SIGKILL) and started again with its --state; B's sums grew "
          "meanwhile")
    kvs["C"].start()
    write_endpoints(ep_file, ["A", "B", "C"])
    time.sleep(rng.uniform(1.0, 1.5))
    alive(clients, "the kill of C")
    kvs["C"].kill()
    time.sleep(0.5)
    kvs["C"].start()
    print("chaos: C added, killed (SIGKILL) and started again with its --state")
    time.sleep(rng.uniform(0.8, 1.2))
    alive(clients, "the removal of B")
    write_endpoints(ep_file, ["A", "C"])
    time.sleep(2.0)  # each client takes B out at its next look at the file
    alive(clients, "the stop")
    print("chaos: B removed from the endpoints")


def check_clients(outs):
    """Every client found an instance down while sending (an outage: A is down for 2 s), ended
    with A and C only, and moved B's sums once (the Python clients print "N outages", "N removed"
    and the endpoints; kvagg_load's JSON has them as keys). The restarts a client saw by a new
    instance id are reported, not required: on a loaded machine a client may get no answer from
    an instance between its start and the kill, and then has no id to compare."""
    figures = []
    for out in outs:
        f = {}
        for key in ("outages", "restarts seen", "removed"):
            json_key = key.replace(" ", "_")
            m = re.search(rf"(\d+) {key}", out) or re.search(rf'"{json_key}":(\d+)', out)
            if not m:
                raise SystemExit(f"a client did not report {key}:\n{out}")
            f[key] = int(m.group(1))
        if not f["outages"] or f["removed"] != 1:
            raise SystemExit(f"a client's figures {f}: the outage or the removal was not seen")
        if IPS["B"] in out.split("endpoints", 1)[-1].splitlines()[0]:
            raise SystemExit(f"a client still sends to B:\n{out}")
        figures.append(f)
    print(f"clients: every one held a down instance's share and went on (outages "
          f"{[f['outages'] for f in figures]}), saw the restarts "
          f"{[f['restarts seen'] for f in figures]}, and removed B once")


def interrupt(kvs):
    """SIGINT to each instance, which must exit 0 (its JSON written); returns each one's output
    of every run, the last one's included."""
    outputs = {}
    for n, kv in kvs.items():
        kv.proc.send_signal(signal.SIGINT)
        out = kv.proc.communicate(timeout=60)[0]
        if kv.proc.returncode != 0:
            raise SystemExit(f"kvagg {n} exit {kv.proc.returncode}:\n{out[-3000:]}")
        outputs[n] = [*kv.outputs, out]
    return outputs


def check_json(kvs, sent):
    interrupt(kvs)
    js = {}
    for n, kv in kvs.items():
        with open(kv.json) as f:
            js[n] = json.load(f)
    total = sum(sent.values()) & MASK
    held = (js["A"]["aggregated_sum"] + js["C"]["aggregated_sum"]) & MASK
    if held != total:
        raise SystemExit(f"JSON: A + C aggregated_sum = {held}, sent {total}")
    if js["B"]["aggregated_sum"] != 0 or js["B"]["service"]["flushed_sum"] == 0:
        raise SystemExit(f"JSON: B aggregated_sum {js['B']['aggregated_sum']}, flushed_sum "
                         f"{js['B']['service']['flushed_sum']}")
    for n, j in js.items():
        if j["state"]["failures"] or j["overflow"]:
            raise SystemExit(f"JSON {n}: state {j['state']}, overflow {j['overflow']}")
    moved = js["B"]["service"]["flushed_sum"]
    print(f"kvagg JSON: A + C aggregated_sum == sum sent, B empty ({moved} moved off it by "
          f"flush(reset)); A started {kvs['A'].starts} times, C {kvs['C'].starts}")
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd")
    d = sub.add_parser("run")
    for opt in ("--kvagg", "--load", "--kv-ns", "--kv-ns2", "--kv-ns3", "--cl-ns", "--kv-if",
                "--kv-if2", "--kv-if3"):
        d.add_argument(opt, required=True)
    d.add_argument("--seed", type=int, default=1)
    s = sub.add_parser("send")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--tuples", type=int, default=10**7)  # at most
    s.add_argument("--stop", required=True)
    s.add_argument("--keys", type=int, default=3000)
    s.add_argument("--endpoints-file", required=True)
    s.add_argument("--sums-out", required=True)
    h = sub.add_parser("held")
    h.add_argument("--ip", required=True)
    c = sub.add_parser("check")
    c.add_argument("--endpoints", required=True)
    c.add_argument("--empty", required=True)
    c.add_argument("sums", nargs="+")
    a = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # what happened so far, if the caller kills it
    if a.cmd == "send":
        return cmd_send(a)
    if a.cmd == "check":
        return cmd_check(a)
    if a.cmd == "held":
        return cmd_held(a)
    # Kvagg's options that this scenario does not vary.
    a.af_xdp, a.workers = False, 1
    signal.signal(signal.SIGALRM, deadline)
    signal.alarm(DEADLINE_S)
    return st.in_namespaces(a, "kvshard", lambda ns, tmp, procs: drive(a, ns, tmp, procs))


def deadline(*_):
    """Ends the run before the caller's timeout kills it: the processes it started are stopped
    on the way out (in_namespaces), none outlives it."""
    raise SystemExit(f"the scenario did not finish within {DEADLINE_S} s")


if __name__ == "__main__":
    sys.exit(main())
