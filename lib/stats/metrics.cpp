#include "stats/metrics.hpp"

#include <cmath>

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

void Metrics::add_histogram(std::string_view name, std::string_view help, MetricLabels labels,
                            const LogHistogram& h, double scale, std::span<const double> bounds) {
    MetricSample s{std::move(labels)};
    s.labels.insert(s.labels.begin(), {"app", app_});
    s.count = h.count();
    s.sum = h.mean() * double(h.count()) * scale;
    for (double bound : bounds)
        s.buckets.emplace_back(bound, h.count_at_most(uint64_t(std::llround(bound / scale))));
    family(name, help, MetricType::histogram).samples.push_back(std::move(s));
}

}  // namespace linerate::stats
