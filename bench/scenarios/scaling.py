"""bench/run scaling: every app from one worker to every core but one (issue 38).

For each worker count N in 1, 2, 4, ... and the machine's cores - 1 (lcore 0 is the main lcore,
lcores 1..N the workers; one queue per worker on the port):
  - l2reflect against dpdk-testpmd macswap on net_null (N queues);
  - nfv against l2reflect on one net_pcap port replaying a valid 64 B CheckIPHeader trace on N
    queues (`rx_pcap=F` once per queue, infinite_rx, TX dropped: no tx_pcap);
  - kvagg --agg per-worker and --agg shared at 1 and 32 tuples a packet, on the same kind of
    port, and l2reflect on kvagg's 1-tuple trace: the I/O floor kvagg's rate is read against.
Rates are medians of steady per-second samples (l2reflect, nfv, testpmd) or of the run's JSON
(kvagg: Mtuples/s and Mpps), each the median over --runs alternated runs. Hugepages when enough
are free (HugePages_Free >= 256 per run), else --no-huge; the JSON says which. On a 2-core
machine only N = 1 is measured, and the JSON says so. Writes bench/results/scaling.json
(SCALING_TAG=x: scaling-x.json, for a result from another machine) and a plot of rate against
workers with each curve's linear line (N x its one-worker rate).
"""
import os
import tempfile

import benchkit as bk

# Goals of issue 47 (issue 38 item 3 before it, kvagg at 1 tuple 0.7 then): ratio name ->
# (numerator case, denominator case, minimum).
GOALS = {
    "l2reflect_over_testpmd": ("null/l2reflect", "null/testpmd_macswap", 1.0),
    "nfv_over_l2reflect": ("pcap/nfv", "pcap/l2reflect", 0.9),
    "kvagg_1tuple_over_l2reflect": ("kvagg1/kvagg_per_worker", "kvagg1/l2reflect", 0.9),
    "kvagg_shared_over_per_worker_32": ("kvagg32/kvagg_shared", "kvagg32/kvagg_per_worker", 0.7),
}


def worker_counts(cores):
    """1, 2, 4, ... below `cores` (one core stays the main lcore's), and cores - 1 itself."""
    top = max(1, cores - 1)
    counts, n = [], 1
    while n < top:
        counts.append(n)
        n *= 2
    return counts + [top]


class Scaling:
    """One scenario run: its arguments and a temporary folder for the runs' JSON."""

    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp

    def app(self, name):
        return bk.app_path(name)

    def eal(self, n, vdev, tag):
        huge = bk.hugepages_free() >= 256
        return (["-l", f"0-{n}", "--no-pci", "--no-telemetry", vdev,
                 "--log-level=lib.eal:warning"] + bk.memory_args(huge, "scaling_" + tag)), huge

    def forwarder(self, app, n, vdev, extra=()):
        eal, huge = self.eal(n, vdev, app)
        cmd = [self.app(app)] + eal + ["--", "--stats-period", "1"] + list(extra)
        return (cmd, lambda out, a=app: bk.linerate_mpps(a, out)), huge

    def testpmd(self, n, vdev):
        eal, huge = self.eal(n, vdev, "testpmd")
        return (bk.testpmd_macswap(eal, nb_cores=n, mbufs=16383), bk.testpmd_mpps), huge

    def kvagg(self, n, vdev, agg, keys):
        """kvagg as a variant of measure_alternating: its rate is the run's JSON Mtuples/s (the
        parser reads the file the run wrote; --duration stops it before run_for's SIGINT)."""
        out = os.path.join(self.tmp, f"kvagg_{agg}_{n}.json")
        eal, huge = self.eal(n, vdev, "kvagg_" + agg)
        cmd = ([self.app("kvagg")] + eal +
               ["--", "--agg", agg, "--keys", str(keys)] + bk.KVAGG_REPLAY + ["--stats-period", "1",
                "--duration", str(self.args.seconds), "--mbufs", "32767", "--json", out])
        return (cmd, bk.json_rate(out)), huge

    def measure(self, variants):
        """variants: name -> ((cmd, parse, ...), huge). Median rates and the memory used."""
        res = bk.measure_alternating({k: v[0] for k, v in variants.items()}, self.args.runs,
                                         self.args.seconds + 2)
        for name, (_, huge) in variants.items():
            res[name]["memory"] = "huge" if huge else "nohuge"
            res[name].pop("samples_mpps", None)
            res[name].pop("per_run_check", None)
        return res


def replay_vdev(pcap, n):
    return "--vdev=net_pcap0," + ",".join([f"rx_pcap={pcap}"] * n) + ",infinite_rx=1"


def traces():
    keys = 1 << 16
    return {
        "nfv": bk.write_pcap("scaling_nfv64", "--count", "1024", "--kind", "nfv-mix", "--size", "64"),
        "kvagg1": bk.write_pcap("scaling_kv1", "--kind", "kvagg", "--count", "4096", "--tuples", "1",
                               "--keys", str(keys), "--streams", "16"),
        "kvagg32": bk.write_pcap("scaling_kv32", "--kind", "kvagg", "--count", "2048", "--tuples",
                                "32", "--keys", str(keys), "--streams", "16"),
    }, keys


def point(s, n, pcaps, keys):
    """Every case at N workers: {case group: measure_alternating's result}."""
    null = "--vdev=net_null0"
    groups = {
        "null": {"l2reflect": s.forwarder("l2reflect", n, null), "testpmd_macswap": s.testpmd(n, null)},
        "pcap": {"l2reflect": s.forwarder("l2reflect", n, replay_vdev(pcaps["nfv"], n)),
                 "nfv": s.forwarder("nfv", n, replay_vdev(pcaps["nfv"], n))},
    }
    for t in ("kvagg1", "kvagg32"):
        vdev = replay_vdev(pcaps[t], n)
        g = {"kvagg_per_worker": s.kvagg(n, vdev, "per-worker", keys),
             "kvagg_shared": s.kvagg(n, vdev, "shared", keys)}
        if t == "kvagg1":
            g["l2reflect"] = s.forwarder("l2reflect", n, vdev)
        groups[t] = g
    return {name: s.measure(g) for name, g in groups.items()}


def ratios(p):
    out = {}
    for name, (num, den, goal) in GOALS.items():
        a, b = (p[c.split("/")[0]][c.split("/")[1]]["median_mpps"] for c in (num, den))
        out[name] = {"ratio": round(a / b, 3) if b else None, "goal": goal,
                     "met": bool(b) and a / b >= goal}
    # kvagg's Mtuples/s at 1 tuple is its Mpps: the same unit as l2reflect's.
    return out


def plot(result, png):
    """Rate against workers, a line per case and its linear scaling (dashed)."""
    data = os.path.join(os.path.dirname(png), ".scaling.dat")
    cases = [(g, c) for g in ("null", "pcap", "kvagg1", "kvagg32")
             for c in sorted(result["points"][0]["results"][g])]
    with open(data, "w") as f:
        for p in result["points"]:
            row = [str(p["workers"])] + [str(p["results"][g][c]["median_mpps"]) for g, c in cases]
            f.write(" ".join(row) + "\n")
    first = result["points"][0]
    plots = []
    for i, (g, c) in enumerate(cases):
        one = first["results"][g][c]["median_mpps"] / first["workers"]
        plots.append(f"'{data}' using 1:{i + 2} with linespoints lc {i + 1} title '{g} {c}'")
        plots.append(f"{one}*x with lines dashtype 2 lc {i + 1} notitle")
    script = f"""set title 'rate against workers ({result["machine_note"]}); dashed: linear from one worker'
set xlabel 'workers'
set ylabel 'Mpps (kvagg: Mtuples/s)'
set key outside right
set grid
plot [0.5:{result["points"][-1]["workers"] + 0.5}] {", ".join(plots)}
"""
    drawn = bk.plot(png, script, size="1000,600")
    os.unlink(data)
    return drawn


def run(args):
    cores = os.cpu_count() or 1
    counts = worker_counts(cores)
    with tempfile.TemporaryDirectory(prefix="linerate-scaling-") as tmp:
        s = Scaling(args, tmp)
        pcaps, keys = traces()
        points = []
        for n in counts:
            p = point(s, n, pcaps, keys)
            points.append({"workers": n, "results": p, "ratios": ratios(p)})
            print(f"scaling: {n} worker(s) done", flush=True)
    tag = os.environ.get("SCALING_TAG", "")
    name = "scaling" + (f"-{tag}" if tag else "")
    result = {
        "description": __doc__, "runs": args.runs, "seconds_per_run": args.seconds,
        "worker_counts": counts, "keys": keys,
        "machine_note": f"{bk.cpu_model()}, {cores} cores",
        "one_worker_only": len(counts) == 1 and counts[0] == 1,
        "points": points,
        "goals_met_everywhere": {g: all(p["ratios"][g]["met"] for p in points) for g in GOALS},
        "result_name": name,
    }
    if result["one_worker_only"]:
        result["note"] = (f"{cores} cores: one worker and the main lcore only; the curve needs a "
                          "machine with more cores (docs/capacity.md)")
    png = os.path.join(bk.RESULTS, name + ".png")
    result["plot"] = plot(result, png)
    return result
