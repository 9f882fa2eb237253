#include "runtime/metrics.hpp"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <netinet/in.h>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace linerate {

namespace {

constexpr const char* kForm = "HOST:PORT (an IPv4 address and a port, e.g. 127.0.0.1:9876)";

prometheus::MetricType prometheus_type(stats::MetricType t) {
    switch (t) {
        case stats::MetricType::counter:
            return prometheus::MetricType::Counter;
        case stats::MetricType::gauge:
            return prometheus::MetricType::Gauge;
        case stats::MetricType::histogram:
            return prometheus::MetricType::Histogram;
    }
    return prometheus::MetricType::Untyped;
}

prometheus::ClientMetric client_metric(stats::MetricType type, const stats::MetricSample& s) {
    prometheus::ClientMetric c;
    for (const auto& [name, value] : s.labels) c.label.push_back({name, value});
    if (type == stats::MetricType::counter) c.counter.value = s.value;
    if (type == stats::MetricType::gauge) c.gauge.value = s.value;
    if (type == stats::MetricType::histogram) {
        c.histogram.sample_count = s.count;
        c.histogram.sample_sum = s.sum;
        for (const auto& [bound, n] : s.buckets) c.histogram.bucket.push_back({n, bound});
        c.histogram.bucket.push_back({s.count, std::numeric_limits<double>::infinity()});
    }
    return c;
}

// Why `addr` cannot be bound (the Exposer says only that it failed): "Address already in use".
std::string bind_error(const MetricsAddress& addr) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return std::strerror(errno);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(addr.port);
    inet_pton(AF_INET, addr.host.c_str(), &sa.sin_addr);
    const int rc = bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    const std::string why = rc == 0 ? "refused by the HTTP server" : std::strerror(errno);
    close(fd);
    return why;
}

}  // namespace

MetricsAddress MetricsAddress::parse(const std::string& text) {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos)
        throw std::invalid_argument("--metrics: '" + text + "' is not " + kForm);
    MetricsAddress a;
    a.host = text.substr(0, colon);
    in_addr ignored{};
    if (inet_pton(AF_INET, a.host.c_str(), &ignored) != 1)
        throw std::invalid_argument("--metrics: '" + a.host + "' is not an IPv4 address; give " +
                                    kForm);
    const std::string port = text.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value > 65535)
        throw std::invalid_argument("--metrics: '" + port + "' is not a port (0 to 65535); give " +
                                    kForm);
    a.port = uint16_t(value);
    return a;
}

// Runs on the Exposer's threads: each scrape asks the source for the figures now.
class MetricsEndpoint::Collector final : public prometheus::Collectable {
  public:
    explicit Collector(Source source) : source_(std::move(source)) {}
    std::vector<prometheus::MetricFamily> Collect() const override {
        std::vector<prometheus::MetricFamily> out;
        for (const stats::MetricFamily& f : source_()) {
            prometheus::MetricFamily p{f.name, f.help, prometheus_type(f.type), {}};
            for (const stats::MetricSample& s : f.samples)
                p.metric.push_back(client_metric(f.type, s));
            out.push_back(std::move(p));
        }
        return out;
    }

  private:
    Source source_;
};

MetricsEndpoint::MetricsEndpoint(std::string app, const std::string& text, Source source)
    : app_(std::move(app)), collector_(std::make_shared<Collector>(std::move(source))) {
    const MetricsAddress addr = MetricsAddress::parse(text);
    host_ = addr.host;
    const std::string where = fmt::format("{}:{}", addr.host, addr.port);
    try {
        exposer_ = std::make_unique<prometheus::Exposer>(where, 1);
    } catch (const std::exception&) {
        throw std::invalid_argument("--metrics: cannot listen on " + where + ": " +
                                    bind_error(addr));
    }
}

MetricsEndpoint::~MetricsEndpoint() {
    workers_stopped();
}

void MetricsEndpoint::start(const StartedRun&) {
    exposer_->RegisterCollectable(collector_);
    const std::vector<int> ports = exposer_->GetListeningPorts();
    fmt::print("{}: metrics at http://{}:{}/metrics\n", app_, host_,
               ports.empty() ? 0 : ports.front());
    std::fflush(stdout);  // a test or a script waits for the line to learn a port 0's port
}

// The source reads what the app merges or frees once the workers stopped: no scrape after.
void MetricsEndpoint::workers_stopped() {
    exposer_.reset();
}

}  // namespace linerate
