"""bench/run memif-l2reflect: gen <-> l2reflect over net_memif, testpmd macswap as the baseline."""
import os
import statistics

import benchkit as bk


def run(args):
    """gen <-> l2reflect over net_memif, one core each; testpmd macswap as the same-run baseline."""
    sizes = [64, 256, 512, 1024, 1518]
    runs = max(1, min(args.runs, 3))  # two processes per run: keep `bench/run all` under 15 min
    out = {"description": "gen (memif client, 1 lcore) -> DUT (memif server, 1 lcore) -> gen: "
                          "saturation RX Mpps of l2reflect vs dpdk-testpmd macswap per frame size, "
                          "then loss and round-trip latency at a paced rate below saturation",
           "runs": runs, "seconds_per_run": args.seconds, "sizes": {}}
    for size in sizes:
        per = {"testpmd_macswap": [], "l2reflect": []}
        for _ in range(runs):
            for name in per:
                per[name].append(saturation(name, size, args.seconds))
        res = {name: {"median_mpps": statistics.median(v), "per_run_mpps": v} for name, v in per.items()}
        res["l2reflect"]["ratio_to_testpmd"] = (res["l2reflect"]["median_mpps"] /
                                                res["testpmd_macswap"]["median_mpps"])
        out["sizes"][str(size)] = res
        print(f"  memif {size} B: l2reflect {res['l2reflect']['median_mpps']:.2f} Mpps, testpmd "
              f"{res['testpmd_macswap']['median_mpps']:.2f} Mpps", flush=True)
    sat = out["sizes"]["64"]["l2reflect"]["median_mpps"]
    rate = max(0.1, round(sat * 0.2, 2))  # well below saturation: both processes share 2 cores
    out["paced"] = paced(rate * 1e6, 64, args.seconds * 2)
    out["paced"]["rate_mpps"] = rate
    out["plot"] = plot(out)
    return out


def commands(dut, size, seconds, tag, rate_pps=None):
    sock = f"/tmp/linerate-bench-{tag}.sock"
    eal_common = ["--no-huge", "-m", "512", "--no-pci", "--log-level=lib.eal:warning"]
    server = f"--vdev=net_memif0,role=server,socket={sock}"
    client = f"--vdev=net_memif0,role=client,socket={sock}"
    if dut == "testpmd_macswap":
        # testpmd needs a forwarding lcore besides its main one: both on core 0.
        dut_cmd = bk.testpmd_macswap(["--lcores=0@0,1@0", f"--file-prefix=bdut{tag}", server] +
                                     eal_common, flush_rx=True)
        ready = "start packet forwarding"
    else:
        dut_cmd = ([bk.app_path(dut), "-l", "0", f"--file-prefix=bdut{tag}", server] +
                   eal_common + ["--", "--stats-period", "1"])
        ready = ": running"
    gen_cmd = ([bk.GEN, "-l", "1", f"--file-prefix=bgen{tag}", client] + eal_common +
               ["--", "--kind", "udp", "--size", str(size), "--duration", str(seconds),
                "--stats-period", "0", "--json", os.path.join(bk.TMP, f"gen{tag}.json")])
    if rate_pps:
        gen_cmd += ["--rate-pps", str(int(rate_pps)), "--drain", "0.5"]
    return dut_cmd, ready, gen_cmd, sock


def saturation(dut, size, seconds):
    tag = bk.next_tag()
    dut_cmd, ready, gen_cmd, sock = commands(dut, size, seconds, tag)
    out, _ = bk.memif_run(dut_cmd, ready, gen_cmd, sock, tag, seconds)
    samples = bk.testpmd_mpps(out) if dut == "testpmd_macswap" else bk.linerate_mpps(dut, out)
    samples = [x for x in samples if x > 0]
    if not samples:
        raise RuntimeError(f"{dut}: no rate samples:\n{out[-2000:]}")
    return statistics.median(bk.steady(samples))


def paced(rate_pps, size, seconds):
    tag = bk.next_tag()
    dut_cmd, ready, gen_cmd, sock = commands("l2reflect", size, seconds, tag, rate_pps)
    _, g = bk.memif_run(dut_cmd, ready, gen_cmd, sock, tag, seconds)
    keys = ("tx_packets", "returned", "lost", "reordered", "latency_ns", "sent_mpps")
    return {k: g.get(k) for k in keys}


def plot(out):
    """PNG of Mpps and the ratio per frame size (gnuplot)."""
    data = os.path.join(bk.TMP, "memif_sizes.dat")
    with open(data, "w") as f:
        for size, r in out["sizes"].items():
            f.write(f"{size} {r['l2reflect']['median_mpps']} {r['testpmd_macswap']['median_mpps']} "
                    f"{r['l2reflect']['ratio_to_testpmd']}\n")
    png = os.path.join(bk.RESULTS, "memif-l2reflect.png")
    script = f"""set title 'gen <-> DUT over net_memif, one core each (median of runs)'
set xlabel 'frame size (bytes)'
set ylabel 'Mpps (DUT RX)'
set y2label 'l2reflect / testpmd'
set y2range [0:1.5]
set ytics nomirror
set y2tics
set logscale x 2
set key top right
set grid
plot '{data}' using 1:2 with linespoints title 'l2reflect', \\
     '{data}' using 1:3 with linespoints title 'testpmd macswap', \\
     '{data}' using 1:4 axes x1y2 with lines dashtype 2 title 'ratio (right axis)'
"""
    return bk.plot(png, script)
