"""bench/run l2reflect-null: l2reflect against dpdk-testpmd macswap on one net_null port."""
import benchkit as bk


def run(args):
    out = {"description": "l2reflect vs dpdk-testpmd macswap, one net_null port, one forwarding "
                          "lcore, 64 B frames; Mpps per core, ratio to testpmd in the same run",
           "runs": args.runs, "seconds_per_run": args.seconds, "modes": []}
    modes = [False] + ([True] if bk.hugepages_free() >= 256 else [])
    for huge in modes:
        out["modes"].append(bk.forwarders_on_vdev("net_null0", {"l2reflect": []}, huge, args.runs,
                                                  args.seconds))
    return out
