// linerate-tt: prints the master's time as an interval from a clocksync client's exported page
// (--export NAME), through the header-only reader include/linerate/truetime.h.
#include <fmt/core.h>
#include <signal.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "linerate/truetime.h"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) {
    g_stop = true;
}

void print(const tt_reading& r, bool json) {
    if (json)
        fmt::print(
            "{{\"earliest_ns\": {}, \"latest_ns\": {}, \"master_ns\": {}, \"epsilon_ns\": {}, "
            "\"age_ns\": {}, \"syncs\": {}}}\n",
            r.earliest_ns, r.latest_ns, r.master_ns, r.epsilon_ns, r.age_ns, r.syncs);
    else
        fmt::print("earliest {} latest {} ns  (epsilon {} ns, last sync {:.1f} ms ago, {} syncs)\n",
                   r.earliest_ns, r.latest_ns, r.epsilon_ns, r.age_ns / 1e6, r.syncs);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli(
        "linerate-tt: the master's time as [earliest, latest] from the page a clocksync client "
        "exports (--export NAME); exit 1 when the page is missing, invalid or stale",
        "linerate-tt");
    const char* env = std::getenv("LINERATE_TT");
    std::string name = env && *env ? env : TT_DEFAULT_NAME;
    bool watch = false, json = false;
    double period_ms = 1000;
    uint64_t count = 0;
    cli.add_option("--name", name, "The page: the client's --export NAME (default $LINERATE_TT)")
        ->capture_default_str();
    cli.add_flag("--watch", watch, "Print a reading every period until interrupted (or --count)");
    cli.add_option("--period-ms", period_ms, "--watch: time between readings")
        ->check(CLI::Range(1e-3, 3.6e6))
        ->capture_default_str();
    cli.add_option("--count", count, "--watch: stop after this many readings (0: never)");
    cli.add_flag("--json", json, "One JSON object per reading");
    try {
        cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return cli.exit(e);
        fmt::print(stderr, "linerate-tt: {} (see --help)\n", e.what());
        return 2;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    tt_clock clk{};
    int rc = TT_ENOPAGE;
    for (uint64_t n = 0; !g_stop; ++n) {
        if (!clk.page) rc = tt_open(&clk, name.c_str());
        tt_reading r{};
        if (clk.page) rc = tt_clock_read(&clk, &r);
        if (rc == TT_OK)
            print(r, json);
        else
            fmt::print(stderr, "linerate-tt: {}: {}\n", name, tt_strerror(rc));
        // A client that restarts takes the same page over, so a mapping stays good; only a page
        // of another layout is dropped and looked up again.
        if (rc == TT_ELAYOUT) tt_close(&clk);
        if (!watch || (count && n + 1 >= count)) break;
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(period_ms));
    }
    tt_close(&clk);
    return rc == TT_OK ? 0 : 1;
}
