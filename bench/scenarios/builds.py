"""bench/run builds: the same runs from this tree's build and an earlier one, alternated."""
import os

import benchkit as bk

BUILD_BEFORE = os.environ.get("LINERATE_BUILD_BEFORE", "")


def cases():
    """case -> (app, vdev arguments, app arguments)."""
    nfv_trace = bk.write_pcap("builds_nfv64", "--count", "1024", "--kind", "nfv-mix", "--size", "64")
    kv = {t: bk.write_pcap(f"builds_kv{t}", "--kind", "kvagg", "--count", "8192", "--tuples",
                           str(t), "--keys", str(1 << 20), "--streams", "16") for t in (1, 32)}
    # As nfv-pcap: without tx_pcap, net_pcap's TX frees (a tx_pcap would cost a pcap write).
    pcap_vdev = "--vdev=net_pcap0,rx_pcap={},infinite_rx=1"
    kv_args = ["--keys", str(1 << 20), "--mbufs", "16383"] + bk.KVAGG_REPLAY
    return {
        "l2reflect_null": ("l2reflect", ["--vdev=net_null0"], []),
        "nfv_pcap_valid64": ("nfv", [pcap_vdev.format(nfv_trace)], []),
        "kvagg_1_tuple": ("kvagg", [pcap_vdev.format(kv[1])], kv_args),
        "kvagg_32_tuples": ("kvagg", [pcap_vdev.format(kv[32])], kv_args),
    }


def run(args):
    """The same three runs from two builds, alternated: this tree's (LINERATE_BUILD, default
    build/) against an earlier one (LINERATE_BUILD_BEFORE, e.g. a `git worktree` of the commit
    before a refactor, built with scripts/build): l2reflect on net_null, nfv on valid 64 B
    replayed by net_pcap, kvagg on 1 and 32 tuples per packet replayed by net_pcap (1 Mi keys,
    checksums verified); one forwarding lcore, --no-huge. Ratio after/before per case."""
    if not BUILD_BEFORE or not os.path.isdir(BUILD_BEFORE):
        return {"skipped": "set LINERATE_BUILD_BEFORE to the build directory of the earlier tree"}
    eal = ["-l", "0,1", "--no-pci", "--no-huge", "-m", "1024", "--no-shconf", "--no-telemetry",
           "--log-level=lib.eal:warning"]
    out = {"description": run.__doc__, "runs": args.runs,
           "seconds_per_run": args.seconds, "before": BUILD_BEFORE, "after": bk.BUILD, "cases": {}}
    for case, (app, vdev, app_args) in cases().items():
        variants = {}
        for name, build in (("before", BUILD_BEFORE), ("after", bk.BUILD)):
            cmd = ([bk.app_path(app, build)] + eal + vdev + ["--", "--stats-period", "1"] +
                   app_args)
            variants[name] = (cmd, lambda o, app=app: bk.linerate_mpps(app, o))
        res = bk.measure_alternating(variants, args.runs, args.seconds)
        res["after_over_before"] = res["after"]["median_mpps"] / res["before"]["median_mpps"]
        out["cases"][case] = res
    return out
