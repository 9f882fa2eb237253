// tt_bench: the cost of reading the exported time (include/linerate/truetime.h) against the
// clock it is built on, in the same process and the same run: clock_gettime(CLOCK_MONOTONIC_RAW),
// tt_now (the page of $LINERATE_TT), tt_clock_now (an explicit page), and the page read alone
// (seqlock copy + checksum). Variants alternate, `--runs` times each, `--calls` calls per run;
// the page is written by TimeExport, the client's writer, optionally at 1 kHz from another
// thread meanwhile (--writer-hz). Prints one JSON object: ns per call per run, medians, ratios.
#include <fmt/core.h>
#include <sys/mman.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "clocksync/time_export.hpp"
#include "linerate/truetime.h"

using namespace linerate::clocksync;

namespace {

SyncState sync_at(uint64_t now) {
    SyncState s;
    s.synced = true;
    s.theta_ns = 1234;
    s.eps0_ns = 1003;
    s.delta_ns = 2000;
    s.t1 = now - 3000;
    s.t4 = now;
    s.rho_ppb = 10'000;
    return s;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Settings {
    unsigned runs = 7;
    uint64_t calls = 2'000'000;
    double writer_hz = 0;
};

// What the calls return, folded so the compiler keeps them, and how many failed.
struct Outcome {
    uint64_t sink = 0, failures = 0;
};

using Variants = std::vector<std::pair<std::string, std::function<void()>>>;

Variants make_variants(Outcome& out, tt_clock& clk) {
    return {
        {"clock_gettime", [&] { out.sink ^= tt_raw_ns(); }},
        {"tt_now",
         [&] {
             uint64_t e = 0, l = 0;
             out.failures += tt_now(&e, &l) != TT_OK;
             out.sink ^= e ^ l;
         }},
        {"tt_clock_now",
         [&] {
             uint64_t e = 0, l = 0;
             out.failures += tt_clock_now(&clk, &e, &l) != TT_OK;
             out.sink ^= e ^ l;
         }},
        {"page_read",
         [&] {
             tt_mapping m{};
             out.failures += tt_load_mapping(clk.page, &m) != TT_OK;
             out.sink ^= m.syncs;
         }},
    };
}

// ns per call of each variant, alternated `runs` times.
std::map<std::string, std::vector<double>> time_variants(const Variants& variants,
                                                         const Settings& s) {
    std::map<std::string, std::vector<double>> ns;
    for (unsigned r = 0; r < s.runs; ++r)
        for (const auto& [label, call] : variants) {
            const auto t0 = std::chrono::steady_clock::now();
            for (uint64_t i = 0; i < s.calls; ++i) call();
            const auto t1 = std::chrono::steady_clock::now();
            ns[label].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                                double(s.calls));
        }
    return ns;
}

// Rewrites the page at `hz` from its own thread until destroyed (hz 0: never).
class PageWriter {
  public:
    PageWriter(TimeExport& page, double hz, uint64_t& syncs) {
        if (hz <= 0) return;
        thread_ = std::thread([this, &page, hz, &syncs] {
            const auto period = std::chrono::duration<double>(1 / hz);
            for (auto next = std::chrono::steady_clock::now(); !stop_.load();) {
                next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
                std::this_thread::sleep_until(next);
                page.publish(sync_at(tt_raw_ns()), ++syncs, tt_raw_ns());
            }
        });
    }
    ~PageWriter() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }

  private:
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

nlohmann::json report(const Settings& s, const Outcome& out, uint64_t syncs,
                      std::map<std::string, std::vector<double>>& ns) {
    nlohmann::json j;
    j["runs"] = s.runs;
    j["calls_per_run"] = s.calls;
    j["writer_hz"] = s.writer_hz;
    j["failures"] = out.failures;
    j["page_writes"] = syncs;
    const double base = median(ns["clock_gettime"]);
    for (const auto& [label, v] : ns) {
        j["ns_per_call"][label] = {{"median", median(v)}, {"runs", v}};
        j["ratio_to_clock_gettime"][label] = median(v) / base;
    }
    j["sink"] = out.sink;  // keeps the calls
    return j;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli("tt_bench: ns per tt_now call against clock_gettime, same run", "tt_bench");
    Settings s;
    cli.add_option("--runs", s.runs, "Alternations (median over them)")->capture_default_str();
    cli.add_option("--calls", s.calls, "Calls per variant per run")->capture_default_str();
    cli.add_option("--writer-hz", s.writer_hz, "Rewrite the page this often meanwhile (0: never)")
        ->capture_default_str();
    CLI11_PARSE(cli, argc, argv);

    const std::string name = "lrtt_bench_" + std::to_string(getpid());
    TimeExport page(name, ~uint64_t(0) >> 2, std::nullopt);
    uint64_t syncs = 1;
    page.publish(sync_at(tt_raw_ns()), syncs, tt_raw_ns());
    setenv("LINERATE_TT", name.c_str(), 1);
    tt_clock clk{};
    if (tt_open(&clk, name.c_str()) != TT_OK) return 1;

    Outcome out;
    std::map<std::string, std::vector<double>> ns;
    {
        PageWriter writer(page, s.writer_hz, syncs);
        ns = time_variants(make_variants(out, clk), s);
    }
    tt_close(&clk);
    shm_unlink(("/" + name).c_str());
    fmt::print("{}\n", report(s, out, syncs, ns).dump());
    return out.failures ? 1 : 0;
}
