#pragma once
// Waiting on a running app's own counters (its `--metrics` endpoint, docs/metrics.md) instead
// of a while: a test that sent N frames stops the app once the app has taken N, so neither a
// loaded machine (the app polls late) nor a stop (which does not drain RX rings) loses any.
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "support/netns.hpp"

namespace linerate::test {

// The sum of every sample of counter `name` (over its label sets, e.g. one per worker; only
// those whose labels contain `label`, e.g. `reason="duplicate"`, when given) in the Prometheus
// text `text`; 0 when there is none.
inline uint64_t metric_total(const std::string& text, const std::string& name,
                             const std::string& label = "") {
    const std::string series = "\n" + name + "{";
    uint64_t total = 0;
    for (size_t at = text.find(series); at != std::string::npos; at = text.find(series, at + 1)) {
        const size_t value = text.find("} ", at);
        if (value == std::string::npos) break;
        if (text.substr(at, value - at).find(label) != std::string::npos)
            total += std::stoull(text.substr(value + 2));
    }
    return total;
}

// The text http://`addr`/metrics serves, fetched from inside `ns` (nullptr: this process's
// namespace); "" while nothing answers.
inline std::string scrape_metrics(const NetNs* ns, const std::string& addr) {
    const std::string curl = "curl -sf http://" + addr + "/metrics";
    return ns ? ns->try_run(curl).out : shell(curl).out;
}

// Scrapes until `count(text)` reaches `want` or `timeout_s` passed; the last count seen.
template <class Count>
uint64_t wait_for_metrics(const NetNs* ns, const std::string& addr, Count count, uint64_t want,
                          double timeout_s) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
        const uint64_t n = count(scrape_metrics(ns, addr));
        if (n >= want || std::chrono::steady_clock::now() > deadline) return n;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

// The same for one counter, summed over its label sets.
inline uint64_t wait_for_metric_total(const NetNs* ns, const std::string& addr,
                                      const std::string& name, uint64_t want, double timeout_s) {
    return wait_for_metrics(
        ns, addr, [&](const std::string& text) { return metric_total(text, name); }, want,
        timeout_s);
}

}  // namespace linerate::test
