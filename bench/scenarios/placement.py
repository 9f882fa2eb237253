"""bench/run placement: l2reflect and nfv behind AF_XDP and in their XDP programs, on a veth."""
import os
import statistics

import benchkit as bk

# variant: (app, datapath, XDP attach mode). The apps on --af-xdp: on dpdk the steering program
# hands the poll loop what it serves; on xdp the app's own program answers in the kernel.
DUTS = {
    "l2reflect/dpdk": ("l2reflect", "dpdk", None),
    "l2reflect/xdp-generic": ("l2reflect", "xdp", "generic"),
    "l2reflect/xdp-native": ("l2reflect", "xdp", "native"),
    "nfv/dpdk": ("nfv", "dpdk", None),
    "nfv/xdp-generic": ("nfv", "xdp", "generic"),
    "nfv/xdp-native": ("nfv", "xdp", "native"),
    "reflect/xdp-generic": ("xdp_reflect", "xdp", "generic"),
    "reflect/xdp-native": ("xdp_reflect", "xdp", "native"),
}


def dut(net, variant, seconds):
    app, datapath, mode = DUTS[variant]
    if app == "xdp_reflect":
        cmd, ready, parse = bk.af_xdp_dut(net, app, seconds)
        return (cmd + ["--generic"] if mode == "generic" else cmd), ready, parse
    cmd = ([bk.app_path(app), "-l", "0"] + bk.VETH_EAL +
           ["--", "--af-xdp", net.dut_if, "--stats-period", "1", "--datapath", datapath] +
           (["--xdp-mode", mode] if mode else []))
    return cmd, ": running", lambda out: bk.linerate_mpps(app, out)


def cases():
    """(case, size, gen args, variants): valid frames at 64 and 1518 B through every variant;
    nfv's 10 % bad mix (gen's nfv-mix, the 7 bad classes evenly) at 64 B through nfv's."""
    out = [(f"{size}B", size, ["--kind", "udp", "--size", str(size)], list(DUTS))
           for size in (64, 1518)]
    nfv = [v for v in DUTS if v.startswith("nfv/")]
    out.append(("64B_nfv_10pct_bad", 64, ["--kind", "nfv-mix", "--size", "64", "--bad", "0.1"],
                nfv))
    return out


def run(args):
    """gen <-> veth <-> DUT: l2reflect and nfv on --datapath dpdk (the poll loop behind AF_XDP)
    and --datapath xdp (their XDP program, generic and native), and the bare XDP_TX reflector
    (generic and native), alternated in the same run. Native XDP_TX on a veth reaches the peer
    only when the peer runs NAPI: gen's net_af_xdp vdev (no xdp_prog=) loads DPDK's default
    XDP program (libxdp's) on its end, which does that."""
    runs = max(1, min(args.runs, 5))
    out = {"description": run.__doc__, "runs": runs,
           "seconds_per_run": args.seconds, "cases": {},
           "cores": "DUT poll loop on core 0, gen on core 1; the veth's softirq (and so every "
                    "XDP program, generic or native) runs on the CPU that sends, i.e. mostly "
                    "gen's core 1",
           "loadavg_1_5_15_at_start": list(os.getloadavg())}
    with bk.VethNamespaces(bk.next_tag()) as net:
        for case, size, gen_args, variants in cases():
            out["cases"][case] = case_result(net, variants, gen_args, runs, args.seconds)
            print(f"  placement {case}: " + ", ".join(
                f"{v} {r['median_mpps']:.3f}" for v, r in out["cases"][case].items()
                if isinstance(r, dict) and "median_mpps" in r), flush=True)
    out["loadavg_1_5_15_at_end"] = list(os.getloadavg())
    out["plot"] = plot(out)
    return out


def case_result(net, variants, gen_args, runs, seconds):
    """Every variant with gen_args, alternated `runs` times: placement_result's figures."""
    back, rx, sent = ({v: [] for v in variants} for _ in range(3))
    for _ in range(runs):
        for v in variants:
            g, d, t = bk.veth_run(net, dut(net, v, seconds), gen_args, seconds, bk.next_tag())
            back[v].append(statistics.median(g))
            rx[v].append(statistics.median(d) if d else None)
            sent[v].append(statistics.median(t) if t else None)
    return result(back, rx, sent)


def result(back, rx, sent):
    """Per variant: Mpps back at gen, at the DUT's rx and sent by gen (medians over runs); the
    ratios of each app's datapaths."""
    res = {}
    for v in back:
        res[v] = {"median_mpps": statistics.median(back[v]), "per_run_mpps": back[v],
                  "dut_rx_median_mpps": bk.median_of(rx[v]), "dut_rx_mpps_per_run": rx[v],
                  "gen_tx_median_mpps": bk.median_of(sent[v]), "gen_tx_mpps_per_run": sent[v]}
    for app in ("l2reflect", "nfv"):
        base = res.get(f"{app}/dpdk")
        for mode in ("generic", "native"):
            x = res.get(f"{app}/xdp-{mode}")
            if base and x:
                res[f"{app}_xdp_{mode}_over_dpdk"] = x["median_mpps"] / base["median_mpps"]
    return res


def plot(out):
    """PNG: Mpps per app and datapath, 64 and 1518 B (bars: back at gen, DUT rx)."""
    panels = []
    for case in ("64B", "1518B"):
        data = os.path.join(bk.TMP, f"placement_{case}.dat")
        with open(data, "w") as f:
            for v, r in out["cases"][case].items():
                if isinstance(r, dict) and "median_mpps" in r:
                    f.write(f'"{v}" {r["median_mpps"]} {r["dut_rx_median_mpps"] or 0} '
                            f'{r["gen_tx_median_mpps"] or 0}\n')
        panels.append(f"set title 'veth, {case} frames'\n"
                      f"plot '{data}' using 4:xtic(1) title 'sent by gen', "
                      f"'' using 3 title 'DUT rx', '' using 2 title 'back at gen'\n")
    png = os.path.join(bk.RESULTS, "placement.png")
    load = "-".join(f"{x:.0f}" for x in (out["loadavg_1_5_15_at_start"][0],
                                        out["loadavg_1_5_15_at_end"][0]))
    script = f"""set multiplot layout 1,2 title 'placement: Mpps through a veth pair, 2 cores (gen + softirq on one), median of runs, load {load}'
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set ylabel 'Mpps'
set yrange [0:*]
set xtics rotate by -35
set key top right
set grid ytics
""" + "".join(panels) + "unset multiplot\n"
    return bk.plot(png, script, size="1200,520", font_pt=9)
