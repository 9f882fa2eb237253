// kvagg_bench: million tuples per second per core of kvagg's kernel against plain in-memory
// aggregation, std::unordered_map and tbb::concurrent_hash_map on the same in-memory trace
// (bench_variants.hpp says what each variant is), swept over tuples per packet and distinct
// keys, and with the AggBuf in each kind of memory region. The EAL runs with --no-huge and the
// regions are the app's own (mem::Region + rte_zmalloc_socket through AggBuffer): socket:0 is
// DPDK's heap (hugepages only when the EAL has them), the others external heaps.
//
//   kvagg_bench [--tuples 1,8,32,89] [--keys 1K,64K,1M,16M] [--grid cross|full]
//               [--regions socket:0,pages:4k,pages:thp,file:/dev/shm/kvagg_bench.aggbuf]
//               [--passes 3] [--repeats 3] [--json FILE]
#include <fmt/core.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench_trace.hpp"
#include "bench_variants.hpp"
#include "eal/eal.hpp"
#include "kvagg/agg_buffer.hpp"
#include "mem/region.hpp"
#include "mem/region_spec.hpp"

using namespace linerate;
using namespace linerate::kvagg;
using namespace linerate::kvagg::bench;

namespace {

struct Options {
    std::vector<std::string> tuples = {"1", "8", "32", "89"};
    std::vector<std::string> keys = {"1K", "64K", "1M", "16M"};
    std::vector<std::string> variants = {"all"};
    std::string grid = "cross";
    std::string pivot_keys = "1M";
    unsigned pivot_tuples = 32;
    std::string sweep_region = "socket:0";
    std::vector<std::string> regions = {"socket:0", "pages:4k", "pages:thp",
                                        "file:/dev/shm/kvagg_bench.aggbuf"};
    std::vector<std::string> region_keys = {"1M", "16M"};
    unsigned region_tuples = 32;
    std::vector<std::string> region_variants = {"ours", "plain"};
    std::string trace_tuples = "4M";
    std::string max_frames = "1M";
    unsigned passes = 3;
    unsigned prefetch = 32;
    unsigned lines_mib = 0;
    unsigned rx_ahead = 0;
    unsigned repeats = 3;
    unsigned lcore = 0;
    std::string json_path;
};

// "4096", "1K" (2^10), "16M" (2^20), "1G".
uint64_t parse_count(const std::string& text) {
    size_t end = 0;
    const uint64_t v = std::stoull(text, &end);
    const std::string unit = text.substr(end);
    if (unit.empty()) return v;
    if (unit == "K" || unit == "k") return v << 10;
    if (unit == "M" || unit == "m") return v << 20;
    if (unit == "G" || unit == "g") return v << 30;
    throw std::invalid_argument("bad count '" + text + "'");
}

std::vector<uint64_t> parse_counts(const std::vector<std::string>& v) {
    std::vector<uint64_t> out;
    for (const auto& s : v) out.push_back(parse_count(s));
    return out;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Point {
    unsigned tuples;
    uint64_t keys;
};

// Runs `variants` on one trace with the table memory in `region`, `repeats` times interleaved
// (drift on a shared machine hits every variant alike); one JSON row per variant.
std::vector<nlohmann::json> measure(const Options& o, const Point& p,
                                    const std::vector<Variant>& variants,
                                    const mem::RegionSpec& region, unsigned& heap_seq) {
    TraceConfig tc;
    tc.tuples_per_frame = p.tuples;
    tc.keys = p.keys;
    tc.tuples = parse_count(o.trace_tuples);
    tc.max_frames = parse_count(o.max_frames);
    const Trace trace(tc);
    const RunConfig rc{.passes = o.passes,
                       .prefetch = o.prefetch,
                       .lines_bytes = size_t(o.lines_mib) << 20,
                       .rx_ahead = o.rx_ahead};
    size_t slots = 1;
    for (Variant v : variants) slots = std::max(slots, variant_slots(v, p.keys, rc));
    AggBuffer buf(region, slots, 1, 0, 0, fmt::format("kvb_heap{}", heap_seq++));

    std::vector<std::vector<double>> runs(variants.size());
    std::vector<VariantRun> last(variants.size());
    for (unsigned r = 0; r < o.repeats; ++r)
        for (size_t i = 0; i < variants.size(); ++i) {
            last[i] = run_variant(variants[i], trace, p.keys, buf.table(0), rc);
            runs[i].push_back(median(last[i].mtuples_per_s));
        }
    std::vector<nlohmann::json> rows;
    for (size_t i = 0; i < variants.size(); ++i) {
        const size_t aggbuf_slots = variant_slots(variants[i], p.keys, rc);
        const bool in_aggbuf = aggbuf_slots > 0;
        rows.push_back({{"variant", variant_name(variants[i])},
                        {"tuples_per_packet", p.tuples},
                        {"keys", p.keys},
                        {"keys_held", last[i].keys_held},
                        {"aggbuf_bytes", AggGeometry::bytes_for(aggbuf_slots)},
                        {"trace_tuples", trace.tuples().size()},
                        {"region", in_aggbuf ? region.text : "malloc"},
                        {"placement", in_aggbuf ? buf.placement() : "process heap (malloc)"},
                        {"mtuples_per_s", median(runs[i])},
                        {"runs_mtuples_per_s", runs[i]},
                        {"verified", last[i].verified}});
        const auto& row = rows.back();
        fmt::print(stderr, "  {:<14} T={:<3} K={:<9} {:<34} {:8.2f} Mtuples/s{}\n",
                   variant_name(variants[i]), p.tuples, p.keys, row["region"].get<std::string>(),
                   row["mtuples_per_s"].get<double>(), last[i].verified ? "" : "  NOT VERIFIED");
    }
    return rows;
}

void add_options(CLI::App& cli, Options& o) {
    cli.add_option("--tuples", o.tuples, "Tuples per packet to sweep")->delimiter(',');
    cli.add_option("--keys", o.keys, "Distinct keys to sweep (K = 2^10, M = 2^20)")->delimiter(',');
    cli.add_option("--variants", o.variants,
                   "plain,array,lines,unordered_map,tbb_chm,ours,ours_rx_csum,ours_direct,ours_"
                   "shared or all")
        ->delimiter(',');
    cli.add_option("--grid", o.grid,
                   "cross: tuples at --pivot-keys and keys at --pivot-tuples; full: every pair")
        ->check(CLI::IsMember({"cross", "full"}));
    cli.add_option("--pivot-keys", o.pivot_keys, "Keys of the tuples sweep (cross)");
    cli.add_option("--pivot-tuples", o.pivot_tuples, "Tuples per packet of the keys sweep");
    cli.add_option("--sweep-region", o.sweep_region, "Region of the AggBuf in the sweeps");
    cli.add_option("--regions", o.regions, "Regions of the AggBuf sweep ('' = none)")
        ->delimiter(',');
    cli.add_option("--region-keys", o.region_keys, "Keys of the region sweep")->delimiter(',');
    cli.add_option("--region-tuples", o.region_tuples, "Tuples per packet of the region sweep");
    cli.add_option("--region-variants", o.region_variants, "Variants of the region sweep")
        ->delimiter(',');
    cli.add_option("--trace-tuples", o.trace_tuples, "Tuples in the trace");
    cli.add_option("--max-frames", o.max_frames, "At most this many frames in the trace");
    cli.add_option("--passes", o.passes, "Timed passes over the trace per run (median)")
        ->check(CLI::Range(1u, 100u));
    cli.add_option("--prefetch", o.prefetch,
                   "plain and ours: look-ahead block (kvagg --prefetch); lines: prefetch distance")
        ->check(CLI::Range(0u, 256u));
    cli.add_option("--lines-mib", o.lines_mib,
                   "lines: its memory in MiB (0 = the hash table's footprint)")
        ->check(CLI::Range(0u, 65536u));
    cli.add_option("--rx-ahead", o.rx_ahead,
                   "ours*: bursts of frames requested ahead of the kernel, as a PMD hands over "
                   "frames it just wrote (0: only the burst at hand)")
        ->check(CLI::Range(0u, 64u));
    cli.add_option("--repeats", o.repeats, "Runs per variant, interleaved (median)")
        ->check(CLI::Range(1u, 100u));
    cli.add_option("--lcore", o.lcore, "CPU to run on");
    cli.add_option("--json", o.json_path, "Write the results here (default: stdout)");
}

// What the options ask for, parsed (std::invalid_argument and the region parser's errors on
// bad input).
struct Plan {
    std::vector<Variant> variants, region_variants;
    std::vector<Point> points;
    std::vector<mem::RegionSpec> regions;
    mem::RegionSpec sweep_region;
    uint64_t max_keys = 0;
};

// The sweep's (tuples, keys) points: every pair (full), or tuples at the pivot keys and keys
// at the pivot tuples (cross, the pivot point once).
std::vector<Point> sweep_points(const Options& o) {
    const std::vector<uint64_t> keys = parse_counts(o.keys);
    std::vector<unsigned> tuples;
    for (const auto& t : o.tuples) tuples.push_back(unsigned(parse_count(t)));
    std::vector<Point> points;
    if (o.grid == "full") {
        for (unsigned t : tuples)
            for (uint64_t k : keys) points.push_back({t, k});
        return points;
    }
    for (unsigned t : tuples) points.push_back({t, parse_count(o.pivot_keys)});
    for (uint64_t k : keys)
        if (k != parse_count(o.pivot_keys) ||
            std::find(tuples.begin(), tuples.end(), o.pivot_tuples) == tuples.end())
            points.push_back({o.pivot_tuples, k});
    return points;
}

Plan make_plan(const Options& o) {
    Plan plan;
    if (o.variants == std::vector<std::string>{"all"})
        plan.variants = all_variants();
    else
        for (const auto& v : o.variants) plan.variants.push_back(parse_variant(v));
    for (const auto& v : o.region_variants) plan.region_variants.push_back(parse_variant(v));
    plan.points = sweep_points(o);
    plan.sweep_region = mem::parse_region_spec(o.sweep_region);
    for (const auto& r : o.regions)
        if (!r.empty()) plan.regions.push_back(mem::parse_region_spec(r));
    // The bench makes (and at the end removes) its own region files: `,create` would
    // collide with the comma-separated --regions list.
    plan.sweep_region.create = true;
    for (mem::RegionSpec& r : plan.regions) r.create = true;
    for (const Point& p : plan.points) plan.max_keys = std::max(plan.max_keys, p.keys);
    if (!plan.regions.empty())
        for (uint64_t k : parse_counts(o.region_keys)) plan.max_keys = std::max(plan.max_keys, k);
    return plan;
}

// The EAL on --lcore, --no-huge, with a heap that holds the largest socket:0 table.
std::unique_ptr<eal::Eal> start_eal(const Options& o, uint64_t max_keys) {
    // DPDK's own heap must hold the largest socket:0 table (16 B x 2 x keys, rounded up).
    const size_t table_mb = std::max<size_t>(
        AggGeometry::bytes_for(
            AggGeometry::slots_for({.mode = IndexMode::hash, .max_keys = max_keys})) >>
            20,
        size_t(o.lines_mib));
    const std::string mem_mb = std::to_string(table_mb + 256);
    return std::make_unique<eal::Eal>(std::vector<std::string>{
        "kvagg_bench", "-l", std::to_string(o.lcore), "--no-huge", "-m", mem_mb, "--no-pci",
        "--no-shconf", "--no-telemetry", "--log-level=lib.eal:warning"});
}

// The JSON's settings, with empty sweep and regions lists.
nlohmann::json result_head(const Options& o, const Plan& plan) {
    nlohmann::json out;
    out["bench"] = "kvagg_bench";
    out["passes"] = o.passes;
    out["repeats"] = o.repeats;
    out["prefetch"] = o.prefetch;
    out["rx_ahead"] = o.rx_ahead;
    out["trace_tuples"] = parse_count(o.trace_tuples);
    out["max_frames"] = parse_count(o.max_frames);
    out["sweep_region"] = plan.sweep_region.text;
    out["key_distribution"] = "uniform";
    out["sweep"] = nlohmann::json::array();
    out["regions"] = nlohmann::json::array();
    return out;
}

// The sweep in --sweep-region, then the region sweep (its /dev/shm files removed after).
void run_sweeps(const Options& o, const Plan& plan, nlohmann::json& out) {
    unsigned heap_seq = 0;
    fmt::print(stderr, "kvagg_bench: sweep, AggBuf in {}\n", plan.sweep_region.text);
    for (const Point& p : plan.points)
        for (auto& row : measure(o, p, plan.variants, plan.sweep_region, heap_seq))
            out["sweep"].push_back(std::move(row));
    for (const mem::RegionSpec& r : plan.regions) {
        fmt::print(stderr, "kvagg_bench: AggBuf in {}\n", r.text);
        for (uint64_t k : parse_counts(o.region_keys))
            for (auto& row : measure(o, {o.region_tuples, k}, plan.region_variants, r, heap_seq))
                out["regions"].push_back(std::move(row));
        if (r.kind == mem::RegionKind::file && r.path.rfind("/dev/shm/", 0) == 0)
            unlink(r.path.c_str());
    }
}

// To --json's file, or stdout; false when the file could not be written.
bool write_result(const Options& o, const nlohmann::json& out) {
    if (o.json_path.empty()) {
        std::cout << out.dump(2) << "\n";
        return true;
    }
    std::ofstream f(o.json_path);
    f << out.dump(2) << "\n";
    if (!f) fmt::print(stderr, "kvagg_bench: cannot write {}\n", o.json_path);
    return bool(f);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli(
        "kvagg_bench: Mtuples/s per core, kvagg's kernel vs plain aggregation, "
        "std::unordered_map and tbb::concurrent_hash_map on one in-memory trace",
        "kvagg_bench");
    Options o;
    add_options(cli, o);
    CLI11_PARSE(cli, argc, argv);

    Plan plan;
    try {
        plan = make_plan(o);
    } catch (const std::exception& e) {
        fmt::print(stderr, "kvagg_bench: {}\n", e.what());
        return 2;
    }
    std::unique_ptr<eal::Eal> eal;
    nlohmann::json out = result_head(o, plan);
    try {
        eal = start_eal(o, plan.max_keys);
    } catch (const std::exception& e) {
        fmt::print(stderr, "kvagg_bench: {}\n", e.what());
        return 1;
    }
    try {
        run_sweeps(o, plan, out);
    } catch (const std::exception& e) {
        fmt::print(stderr, "kvagg_bench: {}\n", e.what());
        return 1;
    }
    return write_result(o, out) ? 0 : 1;
}
