#include "stats/figures.hpp"

#include <string>

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
    return std::get<uint64_t>(r.value);
}

double metric_value(const FigureReading& r) {
    return std::visit([](auto v) { return double(v); }, r.value);
}

double metric_scale(const Figure& f) {
    return f.unit == FigureUnit::ns ? 1e-9 : 1.0;
}

nlohmann::json histogram_json(const LogHistogram& h, const std::vector<HistStat>& stats) {
    nlohmann::json j = nlohmann::json::object();
    for (HistStat s : stats) switch (s) {
            case HistStat::min:
                j["min"] = h.min();
                break;
            case HistStat::mean:
                j["mean"] = h.mean();
                break;
            case HistStat::p50:
                j["p50"] = h.percentile(0.5);
                break;
            case HistStat::p99:
                j["p99"] = h.percentile(0.99);
                break;
            case HistStat::p999:
                j["p999"] = h.percentile(0.999);
                break;
            case HistStat::max:
                j["max"] = h.max();
                break;
        }
    return j;
}

// The JSON value of `f` for `worker`, or null when it has no final reader.
nlohmann::json final_json(const Figure& f, unsigned worker) {
    if (f.kind == FigureKind::histogram)
        return f.final_histogram ? histogram_json(f.final_histogram(worker), f.json_stats)
                                 : nlohmann::json();
    return f.read_final ? json_value(f.read_final(worker)) : nlohmann::json();
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
    if (!r.known) return;
    m.add(f.metric, f.help, f.kind == FigureKind::total ? MetricType::counter : MetricType::gauge,
          labels_of(f, worker), metric_value(r) * metric_scale(f));
}

unsigned instances(const Figure& f, unsigned workers) {
    return f.per_worker ? workers : 1;
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
    if (set.take_live) set.take_live();
    for (const Figure& f : set.figures) {
        if (f.metric.empty()) continue;
        for (unsigned w = 0; w < instances(f, workers); ++w) add_figure_metric(f, w, m);
    }
}

}  // namespace linerate::stats
