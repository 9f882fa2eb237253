"""bench/run xdp-cost: the per-packet cost of the apps' XDP programs, by the kernel."""
import json
import os
import subprocess

import benchkit as bk


def run(args):
    """Per-packet cost of nfv's and l2reflect's XDP programs against the bare XDP_TX reflector
    (lib/xdp/reflect/reflect.bpf.c), by the kernel: BPF_PROG_TEST_RUN with repeat (bench/xdp_cost, root),
    64 and 1518 B, the programs configured as on an interface of MTU 1500 (loaded single-buffer,
    serving IPv4 as --xdp-steer app does), alternated `runs` times; median ns per packet of a valid
    IPv4/UDP frame and the ratio to the reflector (issue 24's goal for nfv: at most 1.1). A run
    takes one frame, so the 10 % bad mix is computed: 0.9 x the valid frame's ns + 0.1 x the mean
    of a bad-checksum frame's and a bad-source frame's, each measured alone (ns_by_frame)."""
    tool = os.path.join(bk.BUILD, "bench", "xdp_cost")
    out = {"description": run.__doc__, "runs": args.runs, "sizes": {},
           "loadavg_1_5_15_at_start": list(os.getloadavg())}
    for size in (64, 1518):
        r = subprocess.run([tool, "--size", str(size), "--runs", str(max(args.runs, 3))],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            return {"skipped": r.stderr.strip() or f"xdp_cost exited {r.returncode}"}
        out["sizes"][f"{size}B"] = json.loads(r.stdout)
    out["loadavg_1_5_15_at_end"] = list(os.getloadavg())
    return out
