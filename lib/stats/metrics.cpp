#include "stats/metrics.hpp"

namespace linerate::stats {

MetricFamily& Metrics::family(std::string_view name, std::string_view help, MetricType type) {
    for (MetricFamily& f : families_)
        if (f.name == name) return f;
    families_.push_back({std::string(name), std::string(help), type, {}});
    return families_.back();
}

void Metrics::add(std::string_view name, std::string_view help, MetricType type,
                  MetricLabels labels, double value) {
    labels.insert(labels.begin(), {"app", app_});
    family(name, help, type).samples.push_back({std::move(labels), value});
}

}  // namespace linerate::stats
