#pragma once
// --advise: which region to give an app's NetBuf and AggBuf, from the figures and the app's own
// sizes, by the three rules of docs/regions.md ("Placement rules"). No EAL.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "regions/region_report.hpp"

namespace linerate::regions {

// What an app places: its packet pool and, for kvagg, its table(s); 0 aggbuf_bytes: none.
struct AppNeeds {
    std::string app;
    size_t netbuf_bytes = 0;
    size_t aggbuf_bytes = 0;
    std::string sizes;  // how they were sized, for the reader: "1048576 keys, 1 table"
};

struct Advice {
    std::string app;
    std::string netbuf;                // the region spec to give --netbuf
    std::string aggbuf;                // to give --aggbuf; empty when the app has none
    std::vector<std::string> reasons;  // one line per rule applied
    std::string app_args;              // "--netbuf pages:thp --aggbuf pages:thp"
};

// Latency of a random line at working set `bytes`: the smallest stride's curve, at the first
// point that holds `bytes` (the last point when none does). < 0 when nothing was measured.
double latency_at(const RegionFigures& region, size_t bytes);
// NetBuf's figure: the harmonic mean of sequential read and write bandwidth, all workers (the
// NIC writes frames, the cores read them; both must be fast). 0 when not measured.
double netbuf_gb_per_s(const RegionFigures& region);

// `margin`: figures within this fraction of the best are the best (noise). Throws
// std::invalid_argument when the report has no region with the figures a rule needs.
Advice advise(const Report& report, const AppNeeds& needs, double margin);

std::string format_advice(const Advice& advice, const AppNeeds& needs);
nlohmann::json to_json(const Advice& advice, const AppNeeds& needs);

}  // namespace linerate::regions
