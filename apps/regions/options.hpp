#pragma once
// linerate-regions' command line (docs/regions.md "Options") and what it resolves to. No EAL.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cli/command_line.hpp"
#include "mem/region_spec.hpp"
#include "regions/advise.hpp"

namespace linerate::regions {

struct Options {
    std::vector<std::string> regions;      // specs or aliases, as given
    std::vector<std::string> region_defs;  // --region NAME=SPEC
    std::string regions_file;              // --regions FILE
    std::string max_size = "256M";         // --max-size: the largest working set
    std::vector<size_t> strides{64, 256, 1024, 4096};
    double point_ms = 50;         // --point-ms: time per point
    std::string figures = "all";  // latency,random,sequential,mixed
    bool quick = false;           // --quick: 1 MiB, strides 64 and 4096, 2 ms a point
    std::string json_path;
    std::string advise;    // --advise APP
    std::string from;      // --from FILE: figures of an earlier --json
    double margin = 0.10;  // --margin: within this of the best is the best
    // The app's sizes for --advise (as its own options would set them).
    uint64_t keys = uint64_t(1) << 20;
    bool shared_table = false;  // --agg shared
    unsigned app_workers = 1;
    unsigned ports = 1;
    unsigned rx_desc = 1024, tx_desc = 1024;
    unsigned burst = cli::CommonOptions{}.burst;  // the apps' default (clocksync's is 32)
};

// What the figures option names: each figure on or off.
struct FigureSet {
    bool latency = true, random = true, sequential = true, mixed = true;
};

void add_options(CLI::App& app, Options& options);

// Checks the options and resolves the regions (aliases, region files) before the EAL starts:
// throws std::invalid_argument (mem::RegionError among them) with the line to print.
struct Resolved {
    std::vector<mem::RegionSpec> regions;
    size_t max_bytes = 0;
    std::vector<size_t> strides;
    double seconds_per_point = 0;
    FigureSet figures;
};
Resolved resolve(const Options& options);

// The app's NetBuf and AggBuf sizes, as the app would size them (kvagg's table for --keys,
// the pool for --ports x --app-workers queues of --rx-desc/--tx-desc).
AppNeeds app_needs(const Options& options);

}  // namespace linerate::regions
