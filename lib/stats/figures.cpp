#include "stats/figures.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace linerate::stats {

namespace {

// The JSON value of a total or gauge: as read (a flag true/false).
nlohmann::json json_value(const FigureReading& r) {
    return std::visit([](auto v) { return nlohmann::json(v); }, r.value);
}

// Telemetry's: a flag 1/0, a signed figure as a string (no signed 64-bit values in DPDK 22.11).
nlohmann::json telemetry_value(const FigureReading& r) {
    if (const bool* flag = std::get_if<bool>(&r.value)) return *flag ? 1u : 0u;
    if (const int64_t* v = std::get_if<int64_t>(&r.value)) return std::to_string(*v);
    return json_value(r);
}

// --metrics': a number, or none for a text.
std::optional<double> metric_value(const FigureReading& r) {
    return std::visit(
        [](const auto& v) -> std::optional<double> {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
                return std::nullopt;
            else
                return double(v);
        },
        r.value);
}

// The lines' form of a value: a ratio with 3 decimals, a flag yes/no.
std::string line_value(const FigureReading& r) {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>)
                return v;
            else if constexpr (std::is_same_v<T, bool>)
                return v ? "yes" : "no";
            else if constexpr (std::is_same_v<T, double>)
                return fmt::format("{:.3f}", v);
            else
                return std::to_string(v);
        },
        r.value);
}

const char* unit_suffix(const Figure& f) {
    switch (f.unit) {
        case FigureUnit::ns:
            return " ns";
        case FigureUnit::s:
            return " s";
        case FigureUnit::count:
            break;
    }
    return "";
}

double metric_scale(const Figure& f) {
    return f.unit == FigureUnit::ns ? 1e-9 : 1.0;
}

struct StatName {
    const char* json;
    const char* line;
};
// By HistStat.
constexpr StatName kStatNames[] = {{"min", "min"},    {"mean", "mean"},  {"p50", "p50"},
                                   {"p99", "p99"},    {"p999", "p99.9"}, {"max", "max"},
                                   {"count", "count"}};

// The statistic `s` of `h`: the mean a double, the others whole numbers.
nlohmann::json stat_value(const LogHistogram& h, HistStat s) {
    switch (s) {
        case HistStat::min:
            return h.min();
        case HistStat::mean:
            return h.mean();
        case HistStat::p50:
            return h.percentile(0.5);
        case HistStat::p99:
            return h.percentile(0.99);
        case HistStat::p999:
            return h.percentile(0.999);
        case HistStat::max:
            return h.max();
        case HistStat::count:
            return h.count();
    }
    return nullptr;
}

nlohmann::json histogram_json(const LogHistogram& h, const std::vector<HistStat>& stats) {
    nlohmann::json j = nlohmann::json::object();
    for (HistStat s : stats) j[kStatNames[unsigned(s)].json] = stat_value(h, s);
    return j;
}

// "p50 V p99 V ...", the mean with one decimal.
std::string histogram_line(const LogHistogram& h, const std::vector<HistStat>& stats) {
    std::string out;
    for (HistStat s : stats) {
        const nlohmann::json v = stat_value(h, s);
        out += fmt::format("{}{} {}", out.empty() ? "" : " ", kStatNames[unsigned(s)].line,
                           v.is_number_float() ? fmt::format("{:.1f}", v.get<double>()) : v.dump());
    }
    return out;
}

// The JSON value of `f` for `worker`, or null when it has no final reader.
nlohmann::json final_json(const Figure& f, unsigned worker) {
    if (f.kind == FigureKind::histogram)
        return f.final_histogram ? histogram_json(f.final_histogram(worker), f.json_stats)
                                 : nlohmann::json();
    if (!f.read_final) return nullptr;
    const FigureReading r = f.read_final(worker);
    return r.known ? json_value(r) : nlohmann::json();
}

// `key` of `j`, where "a.b" is key b of the object a.
nlohmann::json& json_slot(nlohmann::json& j, const std::string& key) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos) return j[key];
    return j[key.substr(0, dot)][key.substr(dot + 1)];
}

// The labels of `f`'s sample for `worker`.
MetricLabels labels_of(const Figure& f, unsigned worker) {
    MetricLabels labels = f.labels;
    if (f.per_worker) labels.emplace_back("worker", std::to_string(worker));
    return labels;
}

void add_figure_metric(const Figure& f, unsigned worker, Metrics& m) {
    if (f.kind == FigureKind::histogram) {
        if (f.live_histogram)
            m.add_histogram(f.metric, f.help, labels_of(f, worker), f.live_histogram(worker),
                            metric_scale(f), f.buckets);
        return;
    }
    if (!f.read_live) return;
    const FigureReading r = f.read_live(worker);
    const std::optional<double> v = metric_value(r);
    if (!r.known || !v) return;
    m.add(f.metric, f.help, f.kind == FigureKind::total ? MetricType::counter : MetricType::gauge,
          labels_of(f, worker), *v * metric_scale(f));
}

unsigned instances(const Figure& f, unsigned workers) {
    return f.per_worker ? workers : 1;
}

// A figure as one number for the lines: per-worker totals summed; none for a per-worker gauge
// or a figure without that reader.
std::optional<FigureReading> line_reading(const Figure& f,
                                          const std::function<FigureReading(unsigned)>& read,
                                          unsigned workers) {
    if (!read || (f.per_worker && f.kind != FigureKind::total)) return std::nullopt;
    if (!f.per_worker) return read(0);
    uint64_t sum = 0;
    for (unsigned w = 0; w < workers; ++w) {
        const FigureReading r = read(w);
        if (const uint64_t* v = std::get_if<uint64_t>(&r.value)) sum += *v;
    }
    return FigureReading{sum};
}

// `f`'s item of the summary ("p50 V ..." for a histogram), or "" when it has none (no text,
// not shown, not known, an empty histogram).
std::string summary_item(const Figure& f, unsigned workers) {
    if (f.text.empty() || (f.shown && !f.shown())) return {};
    if (f.kind == FigureKind::histogram) {
        if (!f.final_histogram || f.per_worker) return {};
        const LogHistogram h = f.final_histogram(0);
        return h.count() ? histogram_line(h, f.json_stats) : std::string();
    }
    const std::optional<FigureReading> r = line_reading(f, f.read_final, workers);
    if (!r || !r->known) return {};
    return fmt::format("{} {}{}", f.text, line_value(*r), unit_suffix(f));
}

}  // namespace

void add_figures_json(const FigureSet& set, unsigned workers, nlohmann::json& j) {
    for (const Figure& f : set.figures) {
        if (f.json.empty()) continue;
        if (!f.per_worker) {
            if (nlohmann::json v = final_json(f, 0); !v.is_null()) json_slot(j, f.json) = v;
            continue;
        }
        for (unsigned w = 0; w < workers && w < j["workers"].size(); ++w)
            if (nlohmann::json v = final_json(f, w); !v.is_null()) j["workers"][w][f.json] = v;
    }
}

nlohmann::json figures_telemetry(const FigureSet& set, unsigned workers) {
    if (set.take_live) set.take_live();
    nlohmann::json j = nlohmann::json::object();
    for (const Figure& f : set.figures) {
        if (f.telemetry.empty() || !f.read_live) continue;
        if (!f.per_worker) {
            j[f.telemetry] = telemetry_value(f.read_live(0));
            continue;
        }
        nlohmann::json per = nlohmann::json::array();
        for (unsigned w = 0; w < workers; ++w) per.push_back(telemetry_value(f.read_live(w)));
        j[f.telemetry] = per;
    }
    return j;
}

void add_figure_metrics(const FigureSet& set, unsigned workers, Metrics& m) {
    const bool any = std::any_of(set.figures.begin(), set.figures.end(),
                                 [](const Figure& f) { return !f.metric.empty(); });
    if (!any) return;
    if (set.take_live) set.take_live();
    for (const Figure& f : set.figures) {
        if (f.metric.empty()) continue;
        for (unsigned w = 0; w < instances(f, workers); ++w) add_figure_metric(f, w, m);
    }
}

std::string figures_summary(const FigureSet& set, unsigned workers) {
    struct Line {
        std::string head, items;
        bool histogram;  // a line of its own, headed "{text} ns"
    };
    std::vector<Line> lines;
    for (const Figure& f : set.figures) {
        const std::string item = summary_item(f, workers);
        if (item.empty()) continue;
        if (f.kind == FigureKind::histogram) {
            lines.push_back({f.text + unit_suffix(f), item, true});
            continue;
        }
        auto it = std::find_if(lines.begin(), lines.end(),
                               [&f](const Line& l) { return l.head == f.line && !l.histogram; });
        if (it == lines.end())  // the first line ("") first, the others as first named
            it = lines.insert(f.line.empty() ? lines.begin() : lines.end(), {f.line, "", false});
        it->items += (it->items.empty() ? "" : ", ") + item;
    }
    std::string out;
    for (const auto& [head, items, histogram] : lines) {
        if (!out.empty()) out += "\n";
        if (!head.empty())
            out += fmt::format("  {}: {}", head, items);
        else
            out += set.title.empty() ? "  " + items : fmt::format("{}: {}", set.title, items);
    }
    return out;
}

std::string IntervalFigures::text(const FigureSet& set, unsigned workers) {
    if (std::none_of(set.figures.begin(), set.figures.end(),
                     [](const Figure& f) { return f.interval; }))
        return {};
    if (set.take_live) set.take_live();
    last_.resize(set.figures.size(), 0);
    std::string out;
    for (size_t i = 0; i < set.figures.size(); ++i) {
        const Figure& f = set.figures[i];
        if (!f.interval || f.text.empty()) continue;
        std::optional<FigureReading> r = line_reading(f, f.read_live, workers);
        if (!r || !r->known) continue;
        if (const uint64_t* v = std::get_if<uint64_t>(&r->value);
            v && f.kind == FigureKind::total) {
            const uint64_t now = *v;
            r->value = now - last_[i];
            last_[i] = now;
        }
        out += fmt::format(" {} {}{}", f.text, line_value(*r), unit_suffix(f));
    }
    if (out.empty()) return out;
    return " |" + (set.title.empty() ? "" : " " + set.title) + out;
}

}  // namespace linerate::stats
