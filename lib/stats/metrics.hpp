#pragma once
// What the --metrics endpoint serves (runtime/metrics.hpp), in linerate's own form so apps and
// features add theirs without prometheus-cpp's headers: families of samples with labels, named
// as Prometheus names things (docs/metrics.md). Everything here is read from what the stats
// line, the JSON and telemetry already read (the board's per-worker counters, rte_eth_stats:
// stats/board_metrics.hpp), on the endpoint's thread at each scrape: nothing is added per
// packet. No EAL here: apps' report code and unit tests use it as it is.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stats/histogram.hpp"

namespace linerate::stats {

enum class MetricType { counter, gauge, histogram };

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

struct MetricSample {
    MetricLabels labels;  // `app` first (Metrics adds it)
    double value = 0;     // counter, gauge
    // histogram: (upper bound, samples <= it) per bucket, ascending; +Inf is `count`.
    std::vector<std::pair<double, uint64_t>> buckets = {};
    uint64_t count = 0;
    double sum = 0;
};

struct MetricFamily {
    std::string name;  // linerate_..., counters end in _total
    std::string help;
    MetricType type = MetricType::counter;
    std::vector<MetricSample> samples;
};

// One scrape's families, each sample labelled with the app.
class Metrics {
  public:
    explicit Metrics(std::string app) : app_(std::move(app)) {}

    void add(std::string_view name, std::string_view help, MetricType type, MetricLabels labels,
             double value);
    // A histogram of `h`'s samples times `scale` (1e-9: ns in seconds) at `bounds` (scaled,
    // ascending; bound / scale rounds to a whole unit of `h`). As exact as `h`'s buckets: a
    // bucket may count samples up to 1.6% above its bound.
    void add_histogram(std::string_view name, std::string_view help, MetricLabels labels,
                       const LogHistogram& h, double scale, std::span<const double> bounds);
    const std::vector<MetricFamily>& families() const { return families_; }

  private:
    MetricFamily& family(std::string_view name, std::string_view help, MetricType type);

    std::string app_;
    std::vector<MetricFamily> families_;
};

}  // namespace linerate::stats
