"""FastClick as bench/run nfv-fastclick runs it: the configuration, what its build was, and its
rates and drops read from its output. FastClick is built by hand outside this repository
(FASTCLICK=TREE/bin/click; docs/perf-notes/nfv-fastclick.md)."""
import os
import re
import subprocess

FASTCLICK = os.environ.get("FASTCLICK", "")

# One forwarding thread on lcore 1, as nfv's worker: with --dpdk each click thread runs on one
# EAL lcore (thread 1 = lcore 1); the Script (thread 0, lcore 0, asleep between its timers)
# prints the RX count and CheckIPHeader's drops every second.
CONFIG = """\
fd :: FromDPDKDevice(0, BURST {burst}, MAXTHREADS 1, THREADOFFSET 1);
fd {check} -> EtherMirror -> ToDPDKDevice(0);
Script(TYPE ACTIVE, label loop, wait 1s, print "fcstat $(now) $(fd.count) {drops}", goto loop);
"""
# nfv's checks by default: CheckIPHeader's documented default CHECKSUM true (its configure()
# sets false when the keyword is absent) and nfv's default bad sources (FastClick's is none).
# Left apart: FastClick does not read the EtherType (nfv drops frames that are not IPv4).
AS_NFV = "CHECKSUM true, BADSRC 0.0.0.0 255.255.255.255"
BURSTS = (32, 64, 128, 256)


def config(check, burst, checker_args):
    """check: offset (CheckIPHeader(OFFSET 14)), strip (Strip(14) -> CheckIPHeader ->
    Unstrip(14)) or io (no check: FastClick's I/O loop alone)."""
    args = ", ".join(a for a in ("OFFSET 14" if check == "offset" else "", checker_args) if a)
    path = {"offset": f"-> chk :: CheckIPHeader({args})",
            "strip": f"-> Strip(14) -> chk :: CheckIPHeader({args}) -> Unstrip(14)",
            "io": ""}[check]
    return CONFIG.format(burst=burst, check=path, drops="0" if check == "io" else "$(chk.drops)")


def build():
    """FastClick's commit and configure line, read from the tree the binary was built in
    (FASTCLICK=TREE/bin/click): recorded, never assumed."""
    tree = os.path.dirname(os.path.dirname(os.path.realpath(FASTCLICK)))
    git = subprocess.run(["git", "-C", tree, "log", "-1", "--format=%H %cs"],
                         capture_output=True, text=True)
    configure = ""
    try:
        with open(os.path.join(tree, "config.log")) as f:
            configure = next((l.strip()[2:] for l in f if l.strip().startswith("$ ")), "")
    except OSError:
        pass
    return {"binary": FASTCLICK, "tree": tree, "commit": git.stdout.strip() or "unknown",
            "configure": configure}


def mpps(out):
    """Per-second RX Mpps from the Script's `fcstat NOW COUNT DROPS` lines, the first second
    (start to the first line) included as the apps' stats lines include theirs."""
    stats = [(float(t), int(c)) for t, c in re.findall(r"^fcstat ([\d.]+) (\d+) \d+$", out, re.M)]
    first = [stats[0][1] / 1e6] if stats else []
    return first + [(c1 - c0) / (t1 - t0) / 1e6 for (t0, c0), (t1, c1) in zip(stats, stats[1:])]


def drop_share(out):
    """CheckIPHeader's drops over frames received, from the last `fcstat` line."""
    last = re.findall(r"^fcstat [\d.]+ (\d+) (\d+)$", out, re.M)
    return int(last[-1][1]) / int(last[-1][0]) if last and int(last[-1][0]) else None
