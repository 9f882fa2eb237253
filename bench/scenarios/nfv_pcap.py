"""bench/run nfv-pcap: nfv against l2reflect and dpdk-testpmd on frames replayed by net_pcap."""
import benchkit as bk


def run(args):
    """nfv vs l2reflect vs testpmd macswap, frames replayed from memory by net_pcap (infinite_rx
    holds the whole trace in mbufs: 1024 frames keep it well inside every pool)."""
    mix = ("--count", "1024", "--kind", "nfv-mix")
    traces = {
        "valid_64B": bk.write_pcap("nfv_valid64", *mix, "--size", "64"),
        "valid_1024B": bk.write_pcap("nfv_valid1024", *mix, "--size", "1024"),
        "bad10_64B": bk.write_pcap("nfv_bad10_64", *mix, "--size", "64", "--bad", "0.1"),
    }
    out = {"description": "nfv (CheckIPHeader) vs l2reflect vs dpdk-testpmd macswap on one net_pcap "
                          "port replaying a gen trace from memory (infinite_rx), one forwarding lcore, "
                          "--no-huge (and valid 64 B with hugepages); Mpps per core (RX), ratios to testpmd and nfv/l2reflect",
           "runs": args.runs, "seconds_per_run": args.seconds, "traces": {}}
    # The goal trace (valid 64 B) also with hugepages, the deployment setting, when available.
    runs = [(name, path, False) for name, path in traces.items()]
    if bk.hugepages_free() >= 256:
        runs.append(("valid_64B_hugepages", traces["valid_64B"], True))
    for name, path, huge in runs:
        vdev = f",rx_pcap={path},infinite_rx=1"
        r = bk.forwarders_on_vdev("net_pcap0" + vdev, {"l2reflect": [], "nfv": []}, huge,
                                  args.runs, args.seconds)
        r["nfv_over_l2reflect"] = (r["results"]["nfv"]["median_mpps"] /
                                   r["results"]["l2reflect"]["median_mpps"])
        out["traces"][name] = r
    return out
