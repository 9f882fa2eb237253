#include "regions/options.hpp"

#include <fmt/core.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <sstream>

#include "cli/command_line.hpp"
#include "kvagg/agg_table.hpp"
#include "kvagg/shared_agg_table.hpp"
#include "mem/mempool.hpp"

namespace linerate::regions {

namespace {

const std::vector<std::string> kApps{"kvagg", "l2reflect", "nfv", "clocksync"};

void add_measure_options(CLI::App& app, Options& o) {
    app.add_option("REGION", o.regions,
                   "Regions to measure: " + mem::region_syntax() + " or an alias");
    app.add_option("--region", o.region_defs, "Define a region alias NAME=SPEC (repeatable)");
    app.add_option("--regions", o.regions_file, "File of region aliases, lines `NAME = SPEC`")
        ->check(CLI::ExistingFile);
    app.add_option("--max-size", o.max_size,
                   "Largest working set (K/M/G), at most what a region holds")
        ->capture_default_str();
    app.add_option("--strides", o.strides, "Strides of the latency curves, bytes (multiples of 8)")
        ->delimiter(',')
        ->check(CLI::Range(size_t(8), size_t(1) << 20))
        ->capture_default_str();
    cli::add_bounded(app, "--point-ms", o.point_ms, 0.1, 60000.0, "Milliseconds a point");
    app.add_option("--figures", o.figures, "latency,random,sequential,mixed or all")
        ->capture_default_str();
    app.add_flag("--quick", o.quick,
                 "A quick look (tests): working sets to 1 MiB, strides 64 and 4096, 2 ms a point");
    app.add_option("--json", o.json_path, "Write the figures (and the advice) as JSON to FILE");
}

void add_advise_options(CLI::App& app, Options& o) {
    app.add_option("--advise", o.advise, "Advise the NetBuf and AggBuf regions of APP")
        ->check(CLI::IsMember(kApps));
    app.add_option("--from", o.from, "Advise from the figures of an earlier --json FILE")
        ->check(CLI::ExistingFile);
    cli::add_bounded(app, "--margin", o.margin, 0.0, 0.9,
                     "Figures within this fraction of the best count as the best");
    cli::add_bounded(app, "--keys", o.keys, uint64_t(1), uint64_t(1) << 32, "kvagg's --keys");
    app.add_option_function<std::string>(
           "--agg", [&o](const std::string& v) { o.shared_table = v == "shared"; },
           "kvagg's --agg: per-worker or shared")
        ->check(CLI::IsMember({"per-worker", "shared"}));
    cli::add_bounded(app, "--app-workers", o.app_workers, 1u, 1024u, "The app's workers");
    cli::add_bounded(app, "--ports", o.ports, 1u, 64u, "The app's ports");
    cli::add_bounded(app, "--rx-desc", o.rx_desc, 1u, 65536u, "The app's --rx-desc");
    cli::add_bounded(app, "--tx-desc", o.tx_desc, 1u, 65536u, "The app's --tx-desc");
    cli::add_bounded(app, "--burst", o.burst, 1u, 512u, "The app's --burst");
}

FigureSet parse_figures(const std::string& text) {
    if (text == "all") return {};
    FigureSet f{false, false, false, false};
    std::stringstream in(text);
    for (std::string name; std::getline(in, name, ',');) {
        if (name == "latency")
            f.latency = true;
        else if (name == "random")
            f.random = true;
        else if (name == "sequential")
            f.sequential = true;
        else if (name == "mixed")
            f.mixed = true;
        else
            throw std::invalid_argument("--figures: unknown figure '" + name +
                                        "' (latency, random, sequential, mixed, all)");
    }
    return f;
}

}  // namespace

void add_options(CLI::App& app, Options& o) {
    cli::add_group(app, "Measuring", [&](CLI::App& a) { add_measure_options(a, o); });
    cli::add_group(app, "Advising", [&](CLI::App& a) { add_advise_options(a, o); });
}

Resolved resolve(const Options& o) {
    Resolved r;
    mem::RegionCatalog catalog;
    if (!o.regions_file.empty()) catalog.load_file(o.regions_file);
    for (const auto& def : o.region_defs) catalog.define(def);
    for (const auto& text : o.regions) {
        r.regions.push_back(catalog.resolve(text));
        mem::check_region_file(r.regions.back());
    }
    if (r.regions.empty() && o.from.empty())
        throw std::invalid_argument("no region to measure: name one or more, e.g. pages:thp");
    if (!o.from.empty() && o.advise.empty())
        throw std::invalid_argument("--from reads figures for --advise: give --advise APP");
    try {
        r.max_bytes = o.quick ? size_t(1) << 20 : mem::parse_byte_size(o.max_size);
    } catch (const mem::RegionError& e) {
        throw std::invalid_argument(std::string("--max-size: ") + e.what());
    }
    if (r.max_bytes < 4096) throw std::invalid_argument("--max-size: at least 4K");
    r.strides = o.quick ? std::vector<size_t>{64, 4096} : o.strides;
    for (size_t s : r.strides)
        if (s % 8 != 0)
            throw std::invalid_argument(fmt::format("--strides: {} is not a multiple of 8", s));
    r.seconds_per_point = (o.quick ? 2 : o.point_ms) / 1000;
    r.figures = parse_figures(o.figures);
    if (!o.json_path.empty()) cli::check_writable(o.json_path, "--json");
    return r;
}

AppNeeds app_needs(const Options& o) {
    AppNeeds n;
    n.app = o.advise;
    mem::PoolDemand demand;
    demand.rx_descriptors = o.rx_desc * o.ports * o.app_workers;
    demand.tx_descriptors = o.tx_desc * o.ports * o.app_workers;
    demand.lcores = o.app_workers + 1;
    demand.burst = o.burst;
    const unsigned mbufs = mem::pool_size(demand);
    // An mbuf's object in the pool: its header and the mbuf with its data room, each in whole
    // cache lines (rte_mempool_calc_obj_size's figure before its channel spreading, which needs
    // the EAL).
    const size_t obj = RTE_CACHE_LINE_ROUNDUP(sizeof(rte_mempool_objhdr)) +
                       RTE_CACHE_LINE_ROUNDUP(sizeof(rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE);
    n.netbuf_bytes = size_t(mbufs) * obj;
    n.sizes = fmt::format("{} mbufs for {} port(s) x {} worker(s)", mbufs, o.ports, o.app_workers);
    if (o.advise == "kvagg") {
        kvagg::AggConfig cfg;
        cfg.max_keys = o.keys;
        const unsigned tables = o.shared_table ? 1 : o.app_workers;
        const size_t slots = kvagg::AggGeometry::slots_for(cfg);
        // The shared table: its writers' columns of sums after its slots.
        const size_t columns =
            o.shared_table ? kvagg::SharedAggTable::column_words(slots, o.app_workers) : 0;
        n.aggbuf_bytes = tables * (kvagg::AggGeometry::bytes_for(slots) + columns * 8);
        n.sizes += fmt::format(", {} keys in {} table(s)", o.keys, tables);
    }
    return n;
}

}  // namespace linerate::regions
