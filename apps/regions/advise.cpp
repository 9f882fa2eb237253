#include "regions/advise.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "mem/region.hpp"
#include "mem/region_spec.hpp"

namespace linerate::regions {

double latency_at(const RegionFigures& region, size_t bytes) {
    const LatencyCurve* curve = nullptr;
    for (const LatencyCurve& c : region.latency)
        if (!c.points.empty() && (!curve || c.stride_bytes < curve->stride_bytes)) curve = &c;
    if (!curve) return -1;
    for (const LatencyPoint& p : curve->points)
        if (p.working_set_bytes >= bytes) return p.latency_ns;
    return curve->points.back().latency_ns;
}

double netbuf_gb_per_s(const RegionFigures& region) {
    if (!region.sequential) return 0;
    const double r = region.sequential->read_all_workers_gb_per_s;
    const double w = region.sequential->write_all_workers_gb_per_s;
    return r > 0 && w > 0 ? 2 / (1 / r + 1 / w) : 0;
}

namespace {

using Figure = double (*)(const RegionFigures&, size_t);

double netbuf_figure(const RegionFigures& f, size_t) {
    return netbuf_gb_per_s(f);
}

// The regions whose figure is within `margin` of the best one's (higher is better, or lower
// when `lower`), best first.
std::vector<const RegionFigures*> near_best(const Report& r, Figure figure, size_t bytes,
                                            bool lower, double margin) {
    std::vector<const RegionFigures*> all;
    for (const RegionFigures& f : r.regions)
        if (figure(f, bytes) > 0) all.push_back(&f);
    if (all.empty()) return all;
    auto better = [&](const RegionFigures* a, const RegionFigures* b) {
        return lower ? figure(*a, bytes) < figure(*b, bytes)
                     : figure(*a, bytes) > figure(*b, bytes);
    };
    std::stable_sort(all.begin(), all.end(), better);
    const double best = figure(*all[0], bytes);
    std::erase_if(all, [&](const RegionFigures* f) {
        return lower ? figure(*f, bytes) > best * (1 + margin)
                     : figure(*f, bytes) < best * (1 - margin);
    });
    return all;
}

std::string figures_of(const Report& r, Figure figure, size_t bytes, const char* unit) {
    std::string out;
    for (const RegionFigures& f : r.regions)
        if (figure(f, bytes) > 0)
            out += fmt::format("{}{} {:.2f} {}", out.empty() ? "" : ", ", f.spec, figure(f, bytes),
                               unit);
    return out;
}

std::string mixed_note(const Report& r, const std::string& a, const std::string& b) {
    if (!r.mixed) return "";
    const Mixed& m = *r.mixed;
    if (!((m.first == a && m.second == b) || (m.first == b && m.second == a))) return "";
    std::string out;
    for (const MixedPoint& p : m.points)
        out += fmt::format("{}{}+{} {:.2f}", out.empty() ? "" : ", ", p.workers_on_first,
                           p.workers_on_second, p.read_gb_per_s);
    return fmt::format(" (mixed reads, workers on {}+{}: {} GB/s)", m.first, m.second, out);
}

}  // namespace

Advice advise(const Report& report, const AppNeeds& needs, double margin) {
    Advice a;
    a.app = needs.app;
    const auto net = near_best(report, netbuf_figure, 0, false, margin);
    if (net.empty())
        throw std::invalid_argument("--advise: no region has sequential figures (rule 2)");
    // Among the NetBufs near the best, the least latency over the pool (the cores touch each
    // mbuf's header and first line, at random over the pool).
    const RegionFigures* netbuf = *std::min_element(net.begin(), net.end(), [&](auto* x, auto* y) {
        return latency_at(*x, needs.netbuf_bytes) < latency_at(*y, needs.netbuf_bytes);
    });
    a.reasons.push_back(fmt::format(
        "rule 2 (packet buffers where the NIC's DMA and the cores both have bandwidth): {} "
        "(sequential read/write, all workers: {}; within {:.0f} % of the best, the least latency "
        "over the pool's {})",
        netbuf->spec, figures_of(report, netbuf_figure, 0, "GB/s"), margin * 100,
        mem::format_bytes(double(needs.netbuf_bytes))));
    a.netbuf = netbuf->spec;
    if (needs.aggbuf_bytes) {
        const auto agg = near_best(report, latency_at, needs.aggbuf_bytes, true, margin);
        if (agg.empty())
            throw std::invalid_argument("--advise: no region has latency figures (rule 1)");
        a.reasons.push_back(fmt::format(
            "rule 1 (the hot state in the lowest-latency memory that holds it): {} (a random line "
            "of a {} working set: {})",
            agg[0]->spec, mem::format_bytes(double(needs.aggbuf_bytes)),
            figures_of(report, latency_at, needs.aggbuf_bytes, "ns")));
        a.aggbuf = agg[0]->spec;
        const auto& curve = agg[0]->latency;
        if (!curve.empty() && !curve[0].points.empty() &&
            curve[0].points.back().working_set_bytes < needs.aggbuf_bytes)
            a.reasons.back() += fmt::format(
                " (measured only to {}: the figure of the largest; "
                "a larger --max-size measures it)",
                mem::format_bytes(double(curve[0].points.back().working_set_bytes)));
        // Rule 3: one region for both when one is near the best for each.
        auto both = std::find_if(agg.begin(), agg.end(), [&](const RegionFigures* f) {
            return std::find(net.begin(), net.end(), f) != net.end();
        });
        if (both != agg.end()) {
            a.netbuf = a.aggbuf = (*both)->spec;
            a.reasons.push_back(fmt::format(
                "rule 3 (one memory on the hot path when one suffices): {} for both, within {:.0f} "
                "% of the best for each{}",
                (*both)->spec, margin * 100, mixed_note(report, agg[0]->spec, netbuf->spec)));
        } else {
            a.reasons.push_back(fmt::format(
                "rule 3 (one memory on the hot path when one suffices): none is within {:.0f} % of "
                "the best for both, so two regions{}",
                margin * 100, mixed_note(report, agg[0]->spec, netbuf->spec)));
        }
    }
    a.app_args = "--netbuf " + a.netbuf + (a.aggbuf.empty() ? "" : " --aggbuf " + a.aggbuf);
    return a;
}

std::string format_advice(const Advice& a, const AppNeeds& needs) {
    std::string out = fmt::format(
        "advice for {} ({}; NetBuf {}{}):\n", a.app, needs.sizes,
        mem::format_bytes(double(needs.netbuf_bytes)),
        needs.aggbuf_bytes ? ", AggBuf " + mem::format_bytes(double(needs.aggbuf_bytes)) : "");
    for (const std::string& r : a.reasons) out += "  " + r + "\n";
    out += fmt::format("  {} [EAL args] -- {}\n", a.app, a.app_args);
    return out;
}

// The advice's own fields under their names (as region_report.cpp's types), then the sizes it
// was made for.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Advice, app, netbuf, aggbuf, reasons, app_args)

nlohmann::json to_json(const Advice& a, const AppNeeds& needs) {
    nlohmann::json j = a;
    j.update({{"netbuf_bytes", needs.netbuf_bytes},
              {"aggbuf_bytes", needs.aggbuf_bytes},
              {"sizes", needs.sizes}});
    return j;
}

}  // namespace linerate::regions
