"""bench/run af-xdp: gen <-> DUT over a veth pair, AF_XDP on both ends."""
import os
import statistics

import benchkit as bk

DUTS = ("l2reflect", "testpmd_macswap", "xdp_reflect")


def one_run(net, dut, size, seconds, tag):
    """gen's udp frames of `size` B through `dut` and back: (gen rx, DUT rx) Mpps samples."""
    return bk.veth_run(net, bk.af_xdp_dut(net, dut, seconds),
                       ["--kind", "udp", "--size", str(size)], seconds, tag)[:2]


def size_result(net, size, runs, seconds):
    """Every DUT at one frame size, alternated `runs` times: medians and ratios."""
    per = {d: [] for d in DUTS}
    dut_side = {d: [] for d in DUTS}
    for _ in range(runs):
        for dut in DUTS:
            back, rx = one_run(net, dut, size, seconds, bk.next_tag())
            per[dut].append(statistics.median(back))
            dut_side[dut].append(statistics.median(rx) if rx else None)
    res = {d: {"median_mpps": statistics.median(per[d]), "per_run_mpps": per[d],
               "dut_rx_mpps_per_run": dut_side[d]} for d in DUTS}
    l2 = res["l2reflect"]["median_mpps"]
    res["l2reflect_over_testpmd"] = l2 / res["testpmd_macswap"]["median_mpps"]
    res["l2reflect_over_xdp_native"] = l2 / res["xdp_reflect"]["median_mpps"]
    print(f"  af-xdp {size} B: l2reflect {l2:.3f} Mpps, testpmd "
          f"{res['testpmd_macswap']['median_mpps']:.3f}, xdp_reflect "
          f"{res['xdp_reflect']['median_mpps']:.3f}", flush=True)
    return res


def run(args):
    """gen <-> DUT over a veth pair, AF_XDP on both ends: l2reflect vs dpdk-testpmd macswap vs
    the XDP-native reflector (lib/xdp/reflect/reflect.bpf.c, XDP_TX), alternated in the same run."""
    runs = max(1, min(args.runs, 5))
    out = {"description": "gen (AF_XDP, lcore 1) -> veth -> DUT -> veth -> gen, one DUT core: "
                          "rate gen gets back (Mpps, median of per-second samples, median over "
                          "runs) for l2reflect (AF_XDP), dpdk-testpmd macswap (AF_XDP) and "
                          "xdp_reflect (XDP_TX in the kernel, no DPDK)",
           "runs": runs, "seconds_per_run": args.seconds, "sizes": {},
           # The DPDK DUTs are processes polling one core; XDP_TX runs in softirq context: on a
           # busy machine the scheduler, not the code, can decide the ratio. Recorded to tell.
           "loadavg_1_5_15_at_start": list(os.getloadavg())}
    with bk.VethNamespaces(bk.next_tag()) as net:
        for size in (64, 1518):
            out["sizes"][str(size)] = size_result(net, size, runs, args.seconds)
    out["loadavg_1_5_15_at_end"] = list(os.getloadavg())
    return out
