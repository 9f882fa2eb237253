#pragma once
// An app's own figures (gauges, histograms, totals beside the board's counters), each declared
// once with its names in every output and how it is read; the runtime renders them to the
// final JSON, a telemetry endpoint, --metrics, the final summary and the periodic stats line
// (runtime/feature.hpp: Feature::figures), as the board renders its counters. Names stay each
// output's own (docs/json.md, docs/metrics.md): `syncs` in the JSON is
// `linerate_<app>_syncs_total` at --metrics. No EAL here.
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
// count: a number of things (or a ratio its text names: Mtuples/s); ns: nanoseconds (seconds
// at --metrics); s: seconds. The lines write " ns" or " s" after the value.
enum class FigureUnit { count, ns, s };
// The statistics of a histogram figure's JSON object, each written under its own name.
enum class HistStat { min, mean, p50, p99, p999, max, count };

// A total or gauge as read: unsigned, signed (telemetry carries it as a string: DPDK 22.11 has
// no signed 64-bit values), a flag (JSON true/false, 1/0 elsewhere), a ratio (Mtuples/s) or a
// text (a MAC address, a file name: never at --metrics). `known` false: in telemetry only
// (epsilon before the first sync, served there as unbounded), not in the JSON, --metrics or
// the lines.
struct FigureReading {
    std::variant<uint64_t, int64_t, bool, double, std::string> value;
    bool known = true;
};

struct Figure {
    FigureKind kind = FigureKind::total;
    FigureUnit unit = FigureUnit::count;
    std::string json;       // the final JSON's key ("a.b": key b of object a); "": none
    std::string telemetry;  // the key in the set's telemetry endpoint; "": none
    std::string metric;     // the --metrics family; "": none
    std::string help;       // the family's help
    // The lines for people: `text` names it in the final summary (on the summary line `line`,
    // see FigureSet) and, with `interval`, in the periodic stats line; "": in neither. A total
    // in the stats line is its change since the previous line.
    std::string text = {};
    std::string line = {};
    bool interval = false;
    // Whether the summary shows it (none: always), for a figure that means nothing in this run
    // (no warm-ups sent, verification off). Read after the workers stopped.
    std::function<bool()> shown = nullptr;
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
    std::string telemetry_endpoint;  // "/linerate/<app>"; "": no endpoint
    std::string telemetry_help;
    std::vector<Figure> figures;
    // Heads the set's first summary line ("<app> client: syncs 3, ...", unindented) and its
    // part of the stats line (" | xdp program 5 ..."); "": the first line is indented, the part
    // bare.
    std::string title = {};
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

// The final summary's lines of `set` (after the workers stopped), "" when it has none: the
// figures with a `text` and a final reading, in declaration order, grouped by `line`: first
// the line "", then the others in the order first named. The first: "{title}: ITEMS", or
// "  ITEMS" without a title; the others "  {line}: ITEMS". ITEMS are ", "-separated:
// "{text} {value}" (" ns" after a value in ns; a ratio with 3 decimals, a flag yes/no). A
// histogram is a line of its own, "  {text} ns: p50 V p99 V ..." (its json_stats in order, the
// mean with one decimal; left out while empty). A per-worker figure is summed (a total) or left
// out.
std::string figures_summary(const FigureSet& set, unsigned workers);

// The periodic stats line's part of `set`: " | {title} {text} {value} {text} {value} ..." for
// the live figures marked `interval` (a total's change since the previous call, a gauge as
// read, per-worker ones summed); "" when it has none. Monitor thread: one per set.
class IntervalFigures {
  public:
    std::string text(const FigureSet& set, unsigned workers);

  private:
    std::vector<uint64_t> last_;  // by figure index: each total at the previous call
};

}  // namespace linerate::stats
