#pragma once
// --metrics HOST:PORT as a runtime feature: an OpenMetrics/Prometheus text endpoint
// (http://HOST:PORT/metrics) served by prometheus-cpp's pull Exposer on its own threads. Each
// scrape calls the runtime's source (Runtime::collect_metrics: the board's per-worker counters,
// rte_eth_stats, the features' and the app's own figures), so the workers do nothing for it.
// The address is judged and bound at plan time (a bad one, or a port in use, exits 2 before the
// EAL); scrapes are answered from `start` until the workers stop. docs/metrics.md lists what
// it serves.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/feature.hpp"
#include "stats/metrics.hpp"

namespace prometheus {
class Exposer;
}

namespace linerate {

// HOST:PORT with HOST an IPv4 address and PORT 0 (any free one) to 65535. Throws
// std::invalid_argument naming --metrics.
struct MetricsAddress {
    std::string host;
    uint16_t port = 0;
    static MetricsAddress parse(const std::string& text);
};

class MetricsEndpoint final : public Feature {
  public:
    using Source = std::function<std::vector<stats::MetricFamily>()>;

    // Listens on `text` at once (the scrapes get 404 until `start`). Throws
    // std::invalid_argument for an address that is not HOST:PORT or cannot be bound.
    MetricsEndpoint(std::string app, const std::string& text, Source source);
    ~MetricsEndpoint() override;

    void start(const StartedRun& run) override;
    void workers_stopped() override;
    void drain() override { workers_stopped(); }

  private:
    class Collector;
    std::string app_;
    std::string host_;
    std::unique_ptr<prometheus::Exposer> exposer_;
    std::shared_ptr<Collector> collector_;
};

}  // namespace linerate
