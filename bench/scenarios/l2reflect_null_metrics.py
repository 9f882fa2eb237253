"""bench/run l2reflect-null-metrics: what --metrics, scraped every second, costs l2reflect."""
import threading
import urllib.request

import benchkit as bk

METRICS_PORT = 19876  # 127.0.0.1 only


class Scraper:
    """Fetches http://127.0.0.1:METRICS_PORT/metrics every second in a thread, as Prometheus
    would; counts the scrapes answered (none while the variant without --metrics runs)."""

    def __init__(self):
        self.answered = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.wait(1.0):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=1) as r:
                    r.read()
                    self.answered += 1
            except OSError:
                pass

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def run(args):
    """l2reflect on one net_null port, one forwarding lcore, --no-huge: without --metrics against
    --metrics 127.0.0.1:PORT scraped every second (urllib in a thread), alternated in the same
    run; Mpps medians and their ratio (a scrape reads the per-worker counters from the
    endpoint's thread: nothing per packet, so expected within noise)."""
    base = [bk.app_path("l2reflect"), "-l", "0,1", "--no-pci", "--vdev=net_null0",
            "--log-level=lib.eal:warning"] + \
        bk.memory_args(False, "bench_metrics") + ["--", "--stats-period", "1"]
    parse = lambda out: bk.linerate_mpps("l2reflect", out)  # noqa: E731
    variants = {"l2reflect": (base, parse),
                "l2reflect_metrics": (base + ["--metrics", f"127.0.0.1:{METRICS_PORT}"], parse)}
    with Scraper() as scraper:
        res = bk.measure_alternating(variants, args.runs, args.seconds)
    ratio = res["l2reflect_metrics"]["median_mpps"] / res["l2reflect"]["median_mpps"]
    return {"description": run.__doc__, "runs": args.runs,
            "seconds_per_run": args.seconds, "results": res, "scrapes_answered": scraper.answered,
            "headline": {"metrics_over_none": ratio}}
