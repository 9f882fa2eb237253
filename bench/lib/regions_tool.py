"""linerate-regions run once with its JSON read back: what the regions scenarios share
(bench/scenarios/regions.py, regions_advise.py)."""
import json
import os
import subprocess
import tempfile

import benchkit as bk

TOOL = os.path.join(bk.BUILD, "apps", "regions", "linerate-regions")


def measure(tool_args, eal=None):
    """linerate-regions with `tool_args` (its own EAL defaults unless `eal`): its JSON and the
    command line."""
    with tempfile.TemporaryDirectory(prefix="regions_") as tmp:
        out = os.path.join(tmp, "regions.json")
        cmd = [TOOL] + (eal + ["--"] if eal else []) + ["--json", out] + tool_args
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
        with open(out) as f:
            return json.load(f), cmd, p.stdout
