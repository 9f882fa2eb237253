#!/usr/bin/env python3
"""docs_examples: every shell example of the documentation runs, as written.

    run_examples.py --source SRC --build BUILD [--only PATH[:LINE]]

Scope: README.md, docs/**/*.md, bench/*/README.md, examples/*/README.md. Every fenced block
there must name its language; ```sh (bash, shell) blocks are the shell examples. Each is split
into commands (`\\` continuations joined, comment lines dropped) and each command runs as
written, with `bash -c`, one after the other, with this convention (nothing is substituted in the
text):

- Directory: a scratch copy of the source tree root (BUILD/docs-run/<file>/; every top-level entry
  of SRC is a symlink, `build` links to BUILD, whatever its name). Outputs (result.json, kv.pcap)
  land there; a file's blocks share it, so a later block uses what an earlier one wrote.
- Inputs: in.pcap (linerate-gen's CheckIPHeader mix, 1000 frames of 128 B), requests.pcap
  (100 clocksync requests) and empty.pcap (no record) exist there before the file's first block.
- Bare program names (`nfv`, `kvagg`, `linerate-gen`, `linerate-tt`, `linerate-regions`,
  `kvagg_load`) are the build's binaries: their directories come first on PATH.
- `NAME=value` lines set a variable for the block's later commands; `CMD &` runs in the
  background, `wait` waits for those; everything else must end before the next command starts.
- An app that runs until stopped (an app command without --duration, --pcap, --write-pcap, or
  `linerate-tt --watch` without --count) gets SIGINT RUN_S seconds after it printed `APP:
  running` (its ports up, its workers polling; at once if it ends before), not after it was
  started, which a loaded machine can spend on start-up: how users stop it (Ctrl-C). One in the
  background gets it at `wait`, once running. Every command must then exit 0; one that ends by
  itself must do so within END_S.
- Outputs are checked: a --json file is a JSON object of the app (`app`), without `error`, no mbuf
  in use at exit, with the identities the docs state (dropped = the sum of drops by reason;
  l2reflect, nfv: rx = tx + dropped; kvagg: rx = aggregated + requests + dropped); a --dump/--expect file has `key,value` lines sorted by key; pcaps written
  (--pcap IN:OUT, tx_pcap=, --write-pcap) are whole pcap files; dpdk-telemetry.py prints a JSON
  answer to its command. Each written by the command itself (modified after it started).
- Afterwards the EAL runtime directories of the block's --file-prefix names are removed.

Tags: HTML comments on the lines right before a block's fence, readable in the source:

    <!-- docs-run: skip (REASON) -->              the whole block does not run here
    <!-- docs-run: skip "TEXT" (REASON) -->       its commands containing TEXT do not
    <!-- docs-run: env NAME -->                   it runs in the environment NAME (ENVIRONMENTS)
    <!-- docs-run: needs hugepages (REASON) -->   it runs when 64 2 MiB hugepages are free (the
                                                   setup reserves 512), is skipped otherwise
    <!-- docs-run: pending FIX (REASON) -->       expected to fail until FIX (e.g. "issue 22 item
                                                   1") lands: failures are PENDING, not failures
                                                   of this test; a pass is XPASS, a reminder to
                                                   remove the tag once the fix is in

Environments (namespaces and veth pairs are created here and removed afterwards, with whatever the
block left running in them; their loopback is up):

- netns: the block runs in a network namespace with a veth end named `eth1` (2 queues) and two
  more, `veth-a` and `veth-b`; their peers are in a second namespace, where kvagg frames of
  linerate-gen (4 tuples each, UDP port 9000, 64 streams: flows on both of eth1's queues) are
  sent into each peer end every 5 ms, from before the block's first command on. An app
  command on eth1 or veth-a that writes a JSON must have received frames (rx_packets > 0), a
  kvagg --dump on eth1 must hold sums.
- kvagg-service: kvagg on `eth1` (net_af_packet, 10.0.0.1/24, `--allow 10.0.0.0/24`; a UDP
  socket bound on its port in its namespace, as docs/kvagg.md says) and the block in the peer
  namespace (10.0.0.2/24).
- kvagg-telemetry: kvagg on net_null with --file-prefix=PREFIX while the block runs (from its
  first answer to /linerate/kvagg/key on: before its table exists, the command answers null).
- clocksync-telemetry: a clocksync master and client over memif, the client with
  --file-prefix=csc, while the block runs.
- l2reflect-memif: l2reflect as memif server on /tmp/lr.sock while the block runs.
Each of their apps is stopped with SIGINT afterwards and must exit 0.

At the end: every command that ran (file:line, PASS/FAIL/PENDING) and every tagged one
(file:line, reason). Exit 0 when none failed, 1 otherwise, 77 (skip) without root.
"""
import argparse
import contextlib
import dataclasses
import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

# The namespaces and veth pairs, as bench/ makes them (bench/lib/netns_pair.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                                "lib"))
from netns_pair import NamespacePair  # noqa: E402

DOC_GLOBS = ["README.md", "docs/**/*.md", "bench/*/README.md", "examples/*/README.md"]
SHELL_LANGS = {"sh", "bash", "shell"}
APPS = {"l2reflect", "nfv", "kvagg", "clocksync", "linerate-gen", "linerate-tt"}
BIN_DIRS = ["apps/l2reflect", "apps/nfv", "apps/kvagg", "apps/clocksync", "apps/regions",
            "bench/gen", "examples"]
NEEDED = ["apps/l2reflect/l2reflect", "apps/nfv/nfv", "apps/kvagg/kvagg",
          "apps/clocksync/clocksync", "apps/clocksync/linerate-tt", "bench/gen/linerate-gen",
          "apps/regions/linerate-regions", "examples/kvagg_load", "bpf/steer.bpf.o"]
RUN_S = 3.0    # an app that runs until stopped gets SIGINT this long after it is running
READY = ": running"  # what an app prints once its ports are up and its workers poll
PORT_STARTED = "waiting up to"  # a memif server's port started, its client may connect
END_S = 60.0   # a command that ends by itself must within this
STOP_S = 20.0  # after SIGINT, the exit must come within this
TAG = re.compile(r"<!--\s*docs-run:\s*(.*?)\s*-->$")
TAG_FORMS = {"skip": re.compile(r'skip(?:\s+"([^"]+)")?\s*\((.+)\)$'),
             "env": re.compile(r"env\s+([A-Za-z0-9_-]+)(?:\s*\((.*)\))?$"),
             "pending": re.compile(r"(pending\s+[^()\"]+?)\s*\((.+)\)$"),
             "needs": re.compile(r"needs\s+([A-Za-z0-9_-]+)\s*\((.+)\)$")}
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S*)$")
U64_LINE = re.compile(r"^(\d{1,20}),(\d{1,20})$")


@dataclasses.dataclass
class Tag:
    kind: str        # "skip", "env", "needs" or "pending FIX"
    text: str        # skip: the commands containing it ("" = all); env, needs: the name
    reason: str
    where: str


@dataclasses.dataclass
class Block:
    path: str
    line: int                 # of the opening fence
    lang: str
    body: list                # (line number, text)
    tags: list


@dataclasses.dataclass
class Command:
    where: str                # "file:line" of its first line
    text: str
    background: bool = False
    skip: str = ""            # reason, when a tag skips it


@dataclasses.dataclass
class Result:
    where: str
    status: str               # PASS, FAIL, PENDING (failed as expected), XPASS, SKIP
    text: str
    detail: str = ""


# ---- reading the docs ----

def doc_files(src):
    found = set()
    for pattern in DOC_GLOBS:
        found.update(glob.glob(os.path.join(src, pattern), recursive=True))
    return sorted(os.path.relpath(p, src) for p in found)


def parse_tag(text, where):
    m = TAG.match(text.strip())
    body = m.group(1) if m else ""
    form = TAG_FORMS.get(body.split(" ", 1)[0])
    parts = form.match(body) if form else None
    if not parts:
        raise ValueError(f"{where}: unreadable docs-run tag (skip, env or pending, each with a "
                         f"(reason); env with a name): {text.strip()}")
    kind = body.split(" ", 1)[0]
    if kind == "env" and parts.group(1) not in ENVIRONMENTS:
        raise ValueError(f"{where}: unknown environment {parts.group(1)!r}")
    if kind == "needs" and parts.group(1) not in NEEDS:
        raise ValueError(f"{where}: unknown need {parts.group(1)!r} ({', '.join(NEEDS)})")
    if kind == "pending":
        return Tag(parts.group(1), "", parts.group(2), where)
    return Tag(kind, parts.group(1) or "", parts.group(2) or "", where)


def parse_blocks(src, rel):
    """The fenced blocks of one file with the tags right before each."""
    blocks, tags, fence = [], [], None
    with open(os.path.join(src, rel), encoding="utf-8") as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if fence is not None:
            if stripped == "```":
                blocks.append(fence)
                fence = None
            else:
                fence.body.append((n, line))
        elif stripped.startswith("```"):
            fence = Block(rel, n, stripped[3:].strip(), [], tags)
            tags = []
        elif "docs-run:" in stripped and stripped.startswith("<!--"):
            tags.append(parse_tag(stripped, f"{rel}:{n}"))
        elif tags:
            raise ValueError(f"{tags[0].where}: a docs-run tag must come right before a fence")
    if fence is not None:
        raise ValueError(f"{rel}:{fence.line}: fence not closed")
    return blocks


def split_commands(block):
    """Commands of a shell block: continuations joined, comment and blank lines dropped."""
    commands, pending, first = [], "", 0
    for n, line in block.body:
        s = line.strip()
        if not pending and (not s or s.startswith("#")):
            continue
        if not pending:
            first = n
        if s.endswith("\\"):
            pending += s[:-1] + " "
            continue
        text = pending + s
        pending = ""
        bg = re.search(r"\s&\s*(#.*)?$", text)
        if bg:
            text = text[:bg.start()]
        commands.append(Command(f"{block.path}:{first}", text.strip(), background=bool(bg)))
    for c in commands:
        for t in block.tags:
            if t.kind == "skip" and t.text in c.text:
                c.skip = t.reason
    return commands


# ---- what a command is ----

def words(text):
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def app_of(text):
    """The app a command starts: the program of one of its pipeline's commands."""
    for part in re.split(r"\|\||&&|[|;]", text):
        ws = [w for w in words(part) if not ASSIGNMENT.match(w)]
        if ws and os.path.basename(ws[0]) in APPS:
            return os.path.basename(ws[0])
    return None


def runs_until_stopped(text):
    app, ws = app_of(text), words(text)
    if app is None:
        return False
    if app == "linerate-tt":
        return "--watch" in ws and "--count" not in ws
    bounded = ("--duration", "--pcap", "--write-pcap", "--help")
    return not any(w == b or w.startswith(b + "=") for w in ws for b in bounded)


def option_values(text, name):
    ws, values = words(text), []
    for i, w in enumerate(ws):
        if w == name and i + 1 < len(ws):
            values.append(ws[i + 1])
        elif w.startswith(name + "="):
            values.append(w[len(name) + 1:])
    return values


def outputs_of(text):
    """(kind, path) of the files the command writes, as its options name them."""
    out = [("json", p) for p in option_values(text, "--json")]
    out += [("csv", p) for p in option_values(text, "--dump") + option_values(text, "--expect")]
    out += [("pcap", p) for p in option_values(text, "--write-pcap")]
    out += [("pcap", p.split(":", 1)[1]) for p in option_values(text, "--pcap") if ":" in p]
    out += [("pcap", p) for p in re.findall(r"tx_pcap=([^,\s]+)", text) if p != "/dev/null"]
    return out


# ---- checking what a command wrote ----

def check_json(path, app):
    with open(path) as f:
        d = json.load(f)
    if not isinstance(d, dict):
        return "not a JSON object"
    if app and d.get("app") != app:
        return f"app is {d.get('app')!r}, not {app!r}"
    if "error" in d:
        return f"error: {d['error']}"
    if d.get("mempool_in_use_at_exit", 0) != 0:
        return f"mempool_in_use_at_exit {d['mempool_in_use_at_exit']}"
    return conservation(d, app)


def conservation(d, app):
    """The identities the docs state for every run (README, docs/nfv.md, docs/kvagg.md)."""
    if app in ("l2reflect", "nfv", "kvagg", "clocksync") and \
            sum(d["drops"].values()) != d["dropped"]:
        return f"dropped {d['dropped']} != the sum of drops by reason"
    if app in ("l2reflect", "nfv") and d["rx_packets"] != d["tx_packets"] + d["dropped"]:
        return f"rx_packets {d['rx_packets']} != tx_packets + dropped"
    if app == "kvagg" and d["rx_packets"] != d["aggregated_packets"] + d["requests"] + d["dropped"]:
        return f"rx_packets {d['rx_packets']} != aggregated_packets + requests + dropped"
    return ""


def check_csv(path):
    last = -1
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = U64_LINE.match(line.rstrip("\n"))
            if not m or int(m.group(1)) <= last or int(m.group(2)) >= 2**64:
                return f"line {n} is no `key,value` line in key order: {line.strip()!r}"
            last = int(m.group(1))
    return ""


def check_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24 or struct.unpack("<I", data[:4])[0] not in (0xA1B2C3D4, 0xA1B23C4D):
        return "no little-endian pcap header"
    pos = 24
    while pos + 16 <= len(data):
        pos += 16 + struct.unpack("<I", data[pos + 8:pos + 12])[0]
    return "" if pos == len(data) else "ends inside a record"


def check_outputs(cmd, cwd, started, out_text):
    """Problems with what the command wrote (empty list: none)."""
    problems, app = [], app_of(cmd.text)
    for kind, name in outputs_of(cmd.text) if app != "linerate-tt" else []:
        path = os.path.join(cwd, name)
        if not os.path.exists(path) or os.path.getmtime(path) < started:
            problems.append(f"{name}: not written")
            continue
        checker = {"json": lambda p: check_json(p, app), "csv": check_csv, "pcap": check_pcap}
        try:
            why = checker[kind](path)
        except (ValueError, OSError, KeyError, TypeError) as e:
            why = f"unreadable: {e}"
        if why:
            problems.append(f"{name}: {why}")
    if "dpdk-telemetry.py" in cmd.text:
        asked = re.search(r"echo\s+(/[^\s,|]+)", cmd.text)
        try:
            answer = json.loads(out_text.strip().splitlines()[-1])
        except (ValueError, IndexError):
            answer = None
        if not isinstance(answer, dict) or not asked or answer.get(asked.group(1)) is None:
            problems.append("dpdk-telemetry.py gave no answer to the command")
    return problems


def netns_traffic_checks(cmd, cwd):
    """netns environment: an app on an interface the peer feeds must have received frames."""
    fed = re.search(r"\b(eth1|veth-a)\b", cmd.text)
    if not fed or app_of(cmd.text) not in ("l2reflect", "nfv", "kvagg"):
        return []
    problems = []
    for name in option_values(cmd.text, "--json"):
        path = os.path.join(cwd, name)
        if os.path.exists(path) and json.load(open(path)).get("rx_packets", 0) == 0:
            problems.append(f"{name}: rx_packets 0, although the peer sent frames")
    if app_of(cmd.text) == "kvagg":
        for name in option_values(cmd.text, "--dump"):
            path = os.path.join(cwd, name)
            if os.path.exists(path) and os.path.getsize(path) == 0:
                problems.append(f"{name}: no sums, although the peer sent kvagg frames")
    return problems


# ---- processes ----

class Proc:
    """A child in its own process group, output to a log file."""
    started_groups = []  # every one, killed at exit if still there (SIGTERM from a ctest timeout)

    def __init__(self, argv, log, cwd, env):
        self.log = log
        with open(log, "wb") as out:
            self.p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        self.started = time.time()
        Proc.started_groups.append(self.p)

    @staticmethod
    def kill_leftovers():
        for p in Proc.started_groups:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    def output(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def wait_for(self, text, timeout_s):
        end = time.time() + timeout_s
        while time.time() < end and self.p.poll() is None:
            if text in self.output():
                return True
            time.sleep(0.1)
        return text in self.output()

    def interrupt(self):
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGINT)

    def finish(self, timeout_s):
        """Exit status, or a reason it has none (killed after the time ran out)."""
        try:
            return self.p.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
            return f"still running after {timeout_s:.0f} s: killed"

    def stop(self, run_s):
        """Runs until it ends or run_s passed, then SIGINT; the exit status."""
        try:
            return self.p.wait(run_s)
        except subprocess.TimeoutExpired:
            self.interrupt()
            return self.finish(STOP_S)


def tail(text, n=12):
    return "\n".join("      | " + line for line in text.rstrip().splitlines()[-n:])


# ---- environments ----

class Context:
    """Where a file's blocks run: the scratch tree, PATH, logs; `ns` for the current block."""

    def __init__(self, src, build, rel):
        self.src, self.build = src, build
        self.dir = os.path.join(build, "docs-run", rel.replace("/", "_"))
        self.fixtures = os.path.join(build, "docs-run", "fixtures")
        self.env = dict(os.environ)
        self.env["PATH"] = ":".join([os.path.join(build, d) for d in BIN_DIRS] +
                                    [os.environ.get("PATH", "/usr/bin:/bin")])
        self.ns = None
        self.env_name = None
        self.problems = []   # of the environment's own processes
        self.logs = 0

    def log(self, what):
        self.logs += 1
        return os.path.join(self.dir, f".log{self.logs:02d}-{what}")

    def argv(self, argv, ns=None):
        ns = ns or self.ns
        return ["ip", "netns", "exec", ns, *argv] if ns else argv

    def binary(self, rel):
        return os.path.join(self.build, rel)


class Netns(NamespacePair):
    """Two namespaces of this run: `app` (the interfaces the docs name) and `peer`, their
    loopbacks up (127.0.0.1 of the namespace: a Redis Cluster's)."""

    def __init__(self, tag):
        self.app, self.peer = f"lrdoc{os.getpid()}{tag}", f"lrdoc{os.getpid()}{tag}peer"
        super().__init__(self.app, self.peer, lo_up=True)


class Service:
    """An app the environment runs beside the block: started, ready, stopped with SIGINT."""

    def __init__(self, ctx, name, argv, ns, ready, paths=()):
        self.ctx, self.name = ctx, name
        self.proc = Proc(ctx.argv(argv, ns), ctx.log(name), ctx.dir, ctx.env)
        ok = self.proc.wait_for(ready, 20)
        end = time.time() + 10
        while ok and not all(os.path.exists(p) for p in paths) and time.time() < end:
            time.sleep(0.1)
        if not ok or not all(os.path.exists(p) for p in paths):
            self.stop()
            raise RuntimeError(f"{name} did not start:\n{tail(self.proc.output())}")

    def stop(self):
        self.proc.interrupt()
        rc = self.proc.finish(STOP_S)
        if rc != 0:
            self.ctx.problems.append(f"{self.name}: exit {rc} after SIGINT\n"
                                     f"{tail(self.proc.output())}")


def telemetry_answers(prefix, command, timeout_s):
    """True once dpdk-telemetry.py gets an answer (not null) to `command` from the app."""
    end = time.time() + timeout_s
    while time.time() < end:
        r = subprocess.run(["dpdk-telemetry.py", "-f", prefix], input=command + "\n",
                           capture_output=True, text=True)
        try:
            if json.loads(r.stdout.strip().splitlines()[-1]).get(command.split(",")[0]):
                return True
        except (ValueError, IndexError, AttributeError):
            pass
        time.sleep(0.2)
    return False


def no_huge(lcores="0"):
    return ["-l", lcores, "--no-huge", "-m", "512", "--no-pci"]


def env_netns(ctx):
    ns = Netns("n")
    try:
        ns.veth("eth1", "peer1", queues=2)
        ns.veth("veth-a", "peer-a")
        ns.veth("veth-b", "peer-b")
        inject = Proc(ctx.argv([sys.executable, os.path.abspath(__file__), "inject",
                                os.path.join(ctx.fixtures, "inject.pcap"), "peer1", "peer-a",
                                "peer-b"], ns.peer), ctx.log("inject"), ctx.dir, ctx.env)
        if not inject.wait_for("sending", 20):
            raise RuntimeError(f"the frame injector did not start:\n{tail(inject.output())}")
        ctx.ns = ns.app
        try:
            yield
        finally:
            inject.interrupt()
            inject.finish(5)
    finally:
        ns.close()


def env_kvagg_service(ctx):
    ns = Netns("s")
    binder = None
    try:
        ns.veth("eth1", "peer1", addresses=("10.0.0.1/24", "10.0.0.2/24"))
        # Without a socket on kvagg's port the kernel, which sees the datagrams too, would answer
        # ICMP port unreachable (docs/kvagg.md says to bind one).
        binder = Proc(ctx.argv([sys.executable, "-c", "import socket, time; s = socket.socket("
                                "socket.AF_INET, socket.SOCK_DGRAM); s.bind(('10.0.0.1', 9000)); "
                                "print('bound', flush=True); time.sleep(1e6)"], ns.app),
                      ctx.log("bind"), ctx.dir, ctx.env)
        if not binder.wait_for("bound", 20):
            raise RuntimeError(f"no socket bound on 10.0.0.1:9000:\n{tail(binder.output())}")
        kvagg = Service(ctx, "kvagg on eth1", [ctx.binary("apps/kvagg/kvagg"), *no_huge(),
                        "--no-shconf", "--no-telemetry", "--vdev=net_af_packet0,iface=eth1", "--",
                        "--stats-period", "0", "--allow", "10.0.0.0/24"], ns.app, READY)
        ctx.ns = ns.peer
        try:
            yield
        finally:
            kvagg.stop()
    finally:
        if binder:
            binder.interrupt()
            binder.finish(5)
        ns.close()


def env_kvagg_telemetry(ctx):
    kvagg = Service(ctx, "kvagg --file-prefix=PREFIX",
                    [ctx.binary("apps/kvagg/kvagg"), *no_huge(), "--file-prefix", "PREFIX",
                     "--vdev=net_null0", "--", "--stats-period", "0"], None, READY,
                    ["/var/run/dpdk/PREFIX/dpdk_telemetry.v2"])
    try:
        if not telemetry_answers("PREFIX", "/linerate/kvagg/key,0", 20):
            raise RuntimeError("kvagg --file-prefix=PREFIX: /linerate/kvagg/key unanswered")
        yield
    finally:
        kvagg.stop()
        shutil.rmtree("/var/run/dpdk/PREFIX", ignore_errors=True)


def env_clocksync_telemetry(ctx):
    sock, csm = f"/tmp/lrdoc{os.getpid()}-cs.sock", f"lrdoc{os.getpid()}csm"
    cs = ctx.binary("apps/clocksync/clocksync")
    master = Service(ctx, "clocksync master", [cs, *no_huge("0"), "--file-prefix", csm,
                     f"--vdev=net_memif0,role=server,socket={sock}", "--", "--role", "master",
                     "--stats-period", "0"], None, PORT_STARTED)
    client = None
    try:
        # Started on the master's "port 0 started" line: a memif client connects once.
        client = Service(ctx, "clocksync client --file-prefix=csc", [cs, *no_huge("1"),
                         "--file-prefix", "csc", f"--vdev=net_memif0,role=client,socket={sock}",
                         "--", "--role", "client", "--stats-period", "0"], None, READY,
                         ["/var/run/dpdk/csc/dpdk_telemetry.v2"])
        if not telemetry_answers("csc", "/linerate/clocksync", 20):
            raise RuntimeError("clocksync client --file-prefix=csc: /linerate/clocksync unanswered")
        yield
    finally:
        if client:
            client.stop()
        master.stop()
        for d in (f"/var/run/dpdk/{csm}", "/var/run/dpdk/csc"):
            shutil.rmtree(d, ignore_errors=True)
        if os.path.exists(sock):
            os.unlink(sock)


def env_l2reflect_memif(ctx):
    l2 = Service(ctx, "l2reflect memif server", [ctx.binary("apps/l2reflect/l2reflect"),
                 *no_huge("0"), "--no-shconf", "--no-telemetry",
                 "--vdev=net_memif0,role=server,socket=/tmp/lr.sock", "--", "--stats-period",
                 "0"], None, PORT_STARTED)
    try:
        yield
    finally:
        l2.stop()
        if os.path.exists("/tmp/lr.sock"):
            os.unlink("/tmp/lr.sock")


def free_hugepages():
    """Why a block that needs hugepages cannot run here ("" when it can)."""
    with open("/proc/meminfo") as f:
        free = [int(line.split()[1]) for line in f if line.startswith("HugePages_Free:")]
    return "" if free and free[0] >= 64 else "fewer than 64 free 2 MiB hugepages here"


NEEDS = {"hugepages": free_hugepages}
ENVIRONMENTS = {"netns": env_netns, "kvagg-service": env_kvagg_service,
                "kvagg-telemetry": env_kvagg_telemetry,
                "clocksync-telemetry": env_clocksync_telemetry,
                "l2reflect-memif": env_l2reflect_memif}


# ---- running ----

def short(text, n=90):
    return text if len(text) <= n else text[:n - 3] + "..."


def judge(ctx, cmd, proc, rc):
    out = proc.output()
    if rc != 0:
        return Result(cmd.where, "FAIL", cmd.text, f"exit {rc}\n{tail(out)}")
    problems = check_outputs(cmd, ctx.dir, proc.started, out)
    if ctx.env_name == "netns" and not problems:
        problems += netns_traffic_checks(cmd, ctx.dir)
    if problems:
        return Result(cmd.where, "FAIL", cmd.text, "; ".join(problems) + "\n" + tail(out))
    took = time.time() - proc.started
    how = f"SIGINT after {RUN_S:.0f} s" if runs_until_stopped(cmd.text) else "ended by itself"
    return Result(cmd.where, "PASS", cmd.text, f"{how}, exit 0, {took:.1f} s")


def stop_app(cmd, proc, run_s):
    """An app that runs until stopped: SIGINT run_s after it is running, not after a start-up a
    loaded machine stretches; the exit status. linerate-tt has no such line: run_s after start."""
    if app_of(cmd.text) != "linerate-tt":
        proc.wait_for(READY, END_S)
    return proc.stop(run_s)


def finish_background(ctx, background):
    results = []
    for cmd, proc in background:
        rc = stop_app(cmd, proc, 0) if runs_until_stopped(cmd.text) else proc.finish(END_S)
        results.append(judge(ctx, cmd, proc, rc))
    background.clear()
    return results


def run_commands(ctx, commands):
    results, background = [], []
    for cmd in commands:
        if cmd.skip:
            results.append(Result(cmd.where, "SKIP", cmd.text, cmd.skip))
            continue
        ws = words(cmd.text)  # without its comment
        m = ASSIGNMENT.match(ws[0]) if len(ws) == 1 else None
        if m:
            ctx.env[m.group(1)] = subprocess.run(
                ["bash", "-c", f"{ws[0]}; printf %s \"${m.group(1)}\""], env=ctx.env,
                capture_output=True, text=True).stdout
            continue
        if ws == ["wait"]:
            results += finish_background(ctx, background)
            continue
        name = re.sub(r"[^A-Za-z0-9]+", "_", cmd.where)
        proc = Proc(ctx.argv(["bash", "-c", cmd.text]), ctx.log(name), ctx.dir, ctx.env)
        if cmd.background:
            background.append((cmd, proc))
            continue
        rc = stop_app(cmd, proc, RUN_S) if runs_until_stopped(cmd.text) else proc.finish(END_S)
        results.append(judge(ctx, cmd, proc, rc))
    return results + finish_background(ctx, background)


def clean_runtime_dirs(commands):
    """The EAL leaves /var/run/dpdk/PREFIX behind (docs/clocksync.md): remove what ran made."""
    for cmd in commands:
        for prefix in option_values(cmd.text, "--file-prefix"):
            if re.fullmatch(r"[A-Za-z0-9_-]+", prefix):
                shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)


def run_block(ctx, block):
    commands = split_commands(block)
    envs = [t.text for t in block.tags if t.kind == "env"]
    pending = [t for t in block.tags if t.kind.startswith("pending")]
    ctx.env_name, ctx.ns, ctx.problems = (envs[0] if envs else None), None, []
    where = f"{block.path}:{block.line}"
    for t in block.tags:
        unmet = NEEDS[t.text]() if t.kind == "needs" else ""
        for c in commands if unmet else []:
            c.skip = c.skip or f"needs {t.text} ({t.reason}): {unmet}"
    if all(c.skip for c in commands):
        results = [Result(c.where, "SKIP", c.text, c.skip) for c in commands]
        return results or [Result(where, "FAIL", "", "a shell block without a command")]
    saved = dict(ctx.env)
    try:
        env = contextlib.contextmanager(ENVIRONMENTS[envs[0]]) if envs else contextlib.nullcontext
        with env(ctx):
            results = run_commands(ctx, commands)
    except (RuntimeError, OSError) as e:
        results = [Result(where, "FAIL", f"environment {envs[0] if envs else ''}", str(e))]
    finally:
        ctx.env = saved
        clean_runtime_dirs(commands)
    results += [Result(where, "FAIL", f"environment {envs[0]}", p) for p in ctx.problems]
    return apply_pending(results, pending, where)


def apply_pending(results, pending, where):
    if not pending:
        return results
    tag = pending[0]
    failed = [r for r in results if r.status == "FAIL"]
    if not failed:  # a race the fix removes may not strike every run: no failure for this
        return results + [Result(tag.where, "XPASS", "", f"marked `{tag.kind}` ({tag.reason}) "
                                 "but every command passed: remove the tag once the fix landed")]
    for r in failed:
        r.status = "PENDING"
        r.detail = f"fails as expected until {tag.kind} ({tag.reason}): {r.detail}"
    return results


# ---- the files, fixtures, the report ----

def make_fixtures(build, fixtures):
    """Inputs the docs name (in.pcap, requests.pcap, empty.pcap) and the netns traffic."""
    os.makedirs(fixtures, exist_ok=True)
    gen = os.path.join(build, "bench/gen/linerate-gen")
    recipes = {"in.pcap": ["--count", "1000", "--kind", "nfv-mix", "--size", "128", "--bad", "0.1"],
               "requests.pcap": ["--count", "100", "--kind", "clocksync"],
               # 64 streams (source ports): a veth puts each flow on a TX queue, and so on the
               # app's RX queue, by the flow hash, whose seed is drawn at boot; 4 flows all fell
               # on queue 1 of eth1 on some boots (1 in 8), and an app on queue 0 got nothing.
               "inject.pcap": ["--count", "5000", "--kind", "kvagg", "--tuples", "4", "--keys",
                               "64", "--streams", "64"]}
    for name, args in recipes.items():
        subprocess.run([gen, "--write-pcap", os.path.join(fixtures, name), *args], check=True,
                       stdout=subprocess.DEVNULL)
    with open(os.path.join(fixtures, "empty.pcap"), "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))


def scratch_tree(ctx):
    """BUILD/docs-run/<file>: the source root's entries as symlinks, `build` -> BUILD, inputs."""
    shutil.rmtree(ctx.dir, ignore_errors=True)
    os.makedirs(ctx.dir)
    for entry in os.listdir(ctx.src):
        if not entry.startswith(".") and entry != "build":
            os.symlink(os.path.join(ctx.src, entry), os.path.join(ctx.dir, entry))
    os.symlink(ctx.build, os.path.join(ctx.dir, "build"))
    for name in ("in.pcap", "requests.pcap", "empty.pcap"):
        shutil.copy(os.path.join(ctx.fixtures, name), ctx.dir)


def selected(only, block, commands):
    if not only:
        return True
    path, _, line = only.partition(":")
    if path != block.path:
        return False
    return not line or int(line) == block.line or any(c.where.endswith(":" + line)
                                                        for c in commands)


def run_file(src, build, rel, only):
    results = []
    try:
        blocks = parse_blocks(src, rel)
    except ValueError as e:
        return [Result(rel, "FAIL", "", str(e))]
    ctx = Context(src, build, rel)
    ready = False
    for block in blocks:
        if block.lang == "":
            results.append(Result(f"{rel}:{block.line}", "FAIL", "", "a fence without a language "
                                  "(sh for shell examples, text, c, ... for the rest)"))
            continue
        if block.lang not in SHELL_LANGS or not selected(only, block, split_commands(block)):
            continue
        if not ready:
            scratch_tree(ctx)
            ready = True
        results += run_block(ctx, block)
    return results


def report(results):
    ran = [r for r in results if r.status != "SKIP"]
    print("\ndocs_examples: what ran (file:line of the command; of the block's fence for its "
          "environment and pending tag), then what the docs' tags skip, with the reason")
    for r in ran:
        print(f"  {r.status:7} {r.where}  {short(r.text)}")
        print(f"      {r.detail}")
    for r in results:
        if r.status == "SKIP":
            print(f"  SKIP    {r.where}  {short(r.text, 60)}  ({r.detail})")
    failed = [r for r in results if r.status == "FAIL"]
    counts = {s: sum(r.status == s for r in results)
              for s in ("PASS", "FAIL", "PENDING", "XPASS", "SKIP")}
    print("docs_examples: " + ", ".join(f"{n} {s.lower()}" for s, n in counts.items()))
    return 1 if failed else 0


def inject(pcap, ifaces):
    """netns environment: each frame of `pcap` into every interface, one round per 5 ms."""
    with open(pcap, "rb") as f:
        data = f.read()
    frames, pos = [], 24
    while pos + 16 <= len(data):
        n = struct.unpack("<I", data[pos + 8:pos + 12])[0]
        frames.append(data[pos + 16:pos + 16 + n])
        pos += 16 + n
    socks = []
    for name in ifaces:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((name, 0))
        socks.append(s)
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    for i in range(10**9):
        for s in socks:
            s.send(frames[i % len(frames)])
        if i == 0:
            print("sending", flush=True)  # the environment's readiness: frames are on their way
        time.sleep(0.005)


def unavailable(build):
    if os.geteuid() != 0:
        return "not root: the examples need network namespaces and DPDK apps"
    if not shutil.which("ip"):
        return "no `ip` (iproute2)"
    missing = [b for b in NEEDED if not os.path.exists(os.path.join(build, b))]
    return f"not built: {', '.join(missing)}" if missing else ""


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "inject":
        return inject(sys.argv[2], sys.argv[3:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--only", help="PATH or PATH:LINE (a block's fence or a command's line)")
    a = ap.parse_args()
    src, build = os.path.abspath(a.source), os.path.abspath(a.build)
    why = unavailable(build)
    if why.startswith("not built"):
        print(f"docs_examples: {why} (build everything: scripts/build)")
        return 1
    if why:
        print(f"docs_examples: skipped: {why}")
        return 77
    make_fixtures(build, os.path.join(build, "docs-run", "fixtures"))
    # A ctest timeout sends SIGTERM: unwind, so that namespaces go and no app is left polling.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = []
    try:
        for rel in doc_files(src):
            results += run_file(src, build, rel, a.only)
    finally:
        Proc.kill_leftovers()
    return report(results)


if __name__ == "__main__":
    sys.exit(main())
