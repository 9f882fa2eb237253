#pragma once
// An app's own figures (gauges, histograms, totals beside the board's counters), each declared
// once with its names in every output and how it is read; the runtime renders them to the
// final JSON, a telemetry endpoint and --metrics (runtime/feature.hpp: Feature::figures), as
// the board renders its counters. Names stay each output's own (docs/json.md, docs/metrics.md):
// `syncs` in the JSON is `linerate_clocksync_syncs_total` at --metrics. No EAL here.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "stats/histogram.hpp"
#include "stats/metrics.hpp"

namespace linerate::stats {

enum class FigureKind { total, gauge, histogram };
// count: a number of things; ns: nanoseconds (seconds at --metrics).
enum class FigureUnit { count, ns };
// The statistics of a histogram figure's JSON object, each written under its own name.
enum class HistStat { min, mean, p50, p99, p999, max };

// A total or gauge as read: unsigned, signed (telemetry carries it as a string: DPDK 22.11 has
// no signed 64-bit values) or a flag (JSON true/false, 1/0 elsewhere). `known` false: not
// served at --metrics (epsilon before the first sync), still written elsewhere.
struct FigureReading {
    std::variant<uint64_t, int64_t, bool> value;
    bool known = true;
};

struct Figure {
    FigureKind kind = FigureKind::total;
    FigureUnit unit = FigureUnit::count;
    std::string json;       // the final JSON's key ("a.b": key b of object a); "": none
    std::string telemetry;  // the key in the set's telemetry endpoint; "": none
    std::string metric;     // the --metrics family; "": none
    std::string help;       // the family's help
    MetricLabels labels = {};
    // Per worker: `worker` is each worker's index, JSON workers[w].key, label worker="w".
    bool per_worker = false;
    std::vector<HistStat> json_stats = {};  // histogram: the JSON object's statistics
    std::span<const double> buckets = {};   // histogram: --metrics bounds, in seconds for ns
    // While the workers run, on any thread (telemetry, --metrics): read only what is safe beside
    // them. Once they stopped (the JSON): anything. Either may be left out (then the figure is
    // in no output that needs it). A histogram has the *_histogram readers instead.
    std::function<FigureReading(unsigned worker)> read_live = nullptr, read_final = nullptr;
    std::function<LogHistogram(unsigned worker)> live_histogram = nullptr,
                                                 final_histogram = nullptr;
};

struct FigureSet {
    std::string telemetry_endpoint;  // "/linerate/clocksync"; "": no endpoint
    std::string telemetry_help;
    std::vector<Figure> figures;
    // Called on the rendering thread before each live render (a telemetry reply, a --metrics
    // scrape): figures that must agree with one another (a clock's local and master time, its
    // epsilon and its sync state) read one snapshot it takes, kept thread_local by the app.
    std::function<void()> take_live = nullptr;
};

// The final JSON's keys of `set` (after the workers stopped), `workers` for per-worker figures.
void add_figures_json(const FigureSet& set, unsigned workers, nlohmann::json& j);
// The live figures of `set` that have a telemetry key.
nlohmann::json figures_telemetry(const FigureSet& set, unsigned workers);
// The live figures of `set` that have a metric name.
void add_figure_metrics(const FigureSet& set, unsigned workers, Metrics& m);

}  // namespace linerate::stats
