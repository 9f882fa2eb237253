"""bench/run nfv-fastclick: nfv against FastClick on the same port, EAL arguments and lcores."""
import os
import re
import statistics

import benchkit as bk
import fastclick as fc


def linerate_drop_share(out):
    """An app's frames dropped over frames received, from its summary."""
    rx = re.search(r"^  rx (\d+) packets", out, re.M)
    dropped = re.search(r"^  dropped (\d+)", out, re.M)
    return int(dropped.group(1)) / int(rx.group(1)) if rx and dropped and int(rx.group(1)) else None


def variants(vdev, huge, configs, apps=("nfv",)):
    """Variants for measure_alternating with the same EAL arguments on one vdev port: the apps
    (nfv, and l2reflect as linerate's I/O loop alone) and FastClick's configs (name -> arguments
    of fastclick.config); each run also records the share of frames dropped."""
    eal = ["-l", "0,1", "--no-pci", "--vdev=" + vdev, "--log-level=lib.eal:warning"]
    out = {app: ([bk.app_path(app)] + eal + bk.memory_args(huge, "bench_" + app) +
                 ["--", "--stats-period", "1"],
                 lambda o, app=app: bk.linerate_mpps(app, o), linerate_drop_share)
           for app in apps}
    os.makedirs(bk.TMP, exist_ok=True)
    for name, config in configs.items():
        path = os.path.join(bk.TMP, f"{name}.click")
        with open(path, "w") as f:
            f.write(fc.config(*config))
        out[name] = ([fc.FASTCLICK, "--dpdk"] + eal + bk.memory_args(huge, "bench_fc") +
                     ["--", path], fc.mpps, fc.drop_share)
    return out


def sweep(vdev, huge, runs, seconds):
    """FastClick's configurations (CheckIPHeader at OFFSET 14 or between Strip/Unstrip; RX BURST),
    with nfv's checks, alternated with nfv on one trace; returns the results and the fastest."""
    configs = {f"fastclick_{check}_burst{burst}": (check, burst, fc.AS_NFV)
               for check in ("offset", "strip") for burst in fc.BURSTS}
    res = bk.measure_alternating(variants(vdev, huge, configs), runs, seconds)
    best = max(configs, key=lambda name: res[name]["median_mpps"])
    return {"memory": "huge" if huge else "nohuge", "port": vdev, "results": res, "best": best,
            "best_config": fc.config(*configs[best])}, configs[best]


def case_result(vdev, huge, best, floors, args):
    """One case: nfv, FastClick's best configuration with nfv's checks and as written (its
    defaults), and with `floors` both I/O loops alone (l2reflect, FastClick without a check)."""
    check, burst, _ = best
    configs = {"fastclick": best, "fastclick_as_written": (check, burst, "")}
    if floors:
        configs["fastclick_io"] = ("io", burst, "")
    load = list(os.getloadavg())
    res = bk.measure_alternating(variants(vdev, huge, configs,
                                          ("nfv", "l2reflect") if floors else ("nfv",)),
                                 args.runs, args.seconds)
    ratio = lambda a, b: res[a]["median_mpps"] / res[b]["median_mpps"]  # noqa: E731
    # Runs next to each other share the load of the moment: the median of their ratios is the
    # steadier figure on a shared machine.
    paired = lambda a, b: statistics.median(  # noqa: E731
        x / y for x, y in zip(res[a]["per_run_mpps"], res[b]["per_run_mpps"]))
    case = {"port": vdev, "memory": "huge" if huge else "nohuge", "results": res,
            "nfv_over_fastclick": ratio("nfv", "fastclick"),
            "nfv_over_fastclick_paired": paired("nfv", "fastclick"),
            "nfv_over_fastclick_as_written": ratio("nfv", "fastclick_as_written"),
            "loadavg_1_5_15": [load, list(os.getloadavg())]}
    if floors:
        case["l2reflect_over_fastclick_io"] = ratio("l2reflect", "fastclick_io")
    return case


def ports():
    """The ports every case runs on: net_null, and net_pcap replaying valid and 10 % bad frames."""
    pcap = "net_pcap0,rx_pcap={},infinite_rx=1"
    trace = lambda name, *bad: pcap.format(bk.write_pcap(  # noqa: E731
        name, "--count", "1024", "--kind", "nfv-mix", "--size", "64", *bad))
    return {"net_null": "net_null0", "pcap_valid_64B": trace("fc_valid64"),
            "pcap_bad10_64B": trace("fc_bad10_64", "--bad", "0.1")}


def run(args):
    """nfv against FastClick (FASTCLICK=path of its click binary, built by hand outside this
    repository) on the same port, EAL arguments and lcores (-l 0,1, one forwarding lcore):
    FromDPDKDevice(0) -> CheckIPHeader(OFFSET 14) (or Strip(14) -> CheckIPHeader -> Unstrip(14))
    -> EtherMirror -> ToDPDKDevice(0) with nfv's checks (CHECKSUM true, nfv's bad sources), and as
    written (FastClick's defaults: no checksum, no bad source), against nfv's defaults. The
    configurations are swept first on valid 64 B frames (hugepages when there are some); the
    fastest runs every case: net_null (zeroed frames: both drop them all, so RX, check, free),
    net_pcap replaying valid 64 B IPv4/UDP frames and a 10 % bad CheckIPHeader mix from memory
    (infinite_rx, 1024 frames), hugepages and --no-huge, alternated; on valid frames also both
    I/O loops alone (l2reflect; FastClick without the check). Medians of per-second RX Mpps,
    ratios per case (of the medians, and the median of each alternation's ratio: `_paired`);
    per_run_check: each run's share of frames dropped."""
    if not fc.FASTCLICK or not os.access(fc.FASTCLICK, os.X_OK):
        return {"skipped": "set FASTCLICK to a FastClick click binary built with --enable-dpdk "
                           "(e.g. FASTCLICK=/tmp/fastclick/bin/click); FastClick is built by hand "
                           "outside this repository (docs/perf-notes/nfv-fastclick.md)"}
    on = ports()
    modes = ([True] if bk.hugepages_free() >= 256 else []) + [False]
    out = {"description": run.__doc__, "runs": args.runs,
           "seconds_per_run": args.seconds, "fastclick": fc.build(),
           "loadavg_1_5_15_at_start": list(os.getloadavg()), "cases": {}, "headline": {}}
    out["sweep"], best = sweep(on["pcap_valid_64B"], modes[0], max(3, args.runs // 2),
                               args.seconds)
    for huge in modes:
        for port, vdev in on.items():
            name = f"{port}_{'hugepages' if huge else 'nohuge'}"
            case = case_result(vdev, huge, best, port == "pcap_valid_64B", args)
            out["cases"][name] = case
            out["headline"][name] = case["nfv_over_fastclick"]
            res = case["results"]
            print(f"  {name}: nfv {res['nfv']['median_mpps']:.2f}, FastClick "
                  f"{res['fastclick']['median_mpps']:.2f} Mpps ({case['nfv_over_fastclick']:.2f}x, "
                  f"paired {case['nfv_over_fastclick_paired']:.2f}x; as written "
                  f"{case['nfv_over_fastclick_as_written']:.2f}x)", flush=True)
    goal = out["headline"].get("pcap_valid_64B_hugepages")
    out["goals"] = {"nfv_over_fastclick_hugepages_valid_64B_at_least_1.5":
                    goal is not None and goal >= 1.5}
    out["loadavg_1_5_15_at_end"] = list(os.getloadavg())
    return out
