#include "stats/counters.hpp"

#include <stdexcept>

namespace linerate::stats {

uint64_t Totals::dropped() const {
    uint64_t n = 0;
    for (uint64_t d : drops) n += d;
    return n;
}

Totals& Totals::operator+=(const Totals& o) {
    rx_packets += o.rx_packets;
    rx_bytes += o.rx_bytes;
    tx_packets += o.tx_packets;
    tx_bytes += o.tx_bytes;
    for (size_t i = 0; i < drops.size() && i < o.drops.size(); ++i) drops[i] += o.drops[i];
    for (size_t i = 0; i < app.size() && i < o.app.size(); ++i) app[i] += o.app[i];
    return *this;
}

StatsBoard::StatsBoard(std::string app, unsigned workers, Names drop_reasons, Names app_counters)
    : app_(std::move(app)),
      workers_(workers),
      app_counters_(app_counters.begin(), app_counters.end()) {
    drop_reasons_.push_back(kTxFull);
    drop_reasons_.insert(drop_reasons_.end(), drop_reasons.begin(), drop_reasons.end());
    if (drop_reasons_.size() > kMaxDropReasons || app_counters_.size() > kMaxAppCounters)
        throw std::logic_error("too many drop reasons or app counters");
}

Totals StatsBoard::worker_totals(unsigned i) const {
    const WorkerCounters& w = workers_[i];
    Totals t;
    t.rx_packets = w.rx_packets.get();
    t.rx_bytes = w.rx_bytes.get();
    t.tx_packets = w.tx_packets.get();
    t.tx_bytes = w.tx_bytes.get();
    for (size_t r = 0; r < drop_reasons_.size(); ++r) t.drops.push_back(w.drops[r].get());
    for (size_t c = 0; c < app_counters_.size(); ++c) t.app.push_back(w.app[c].get());
    return t;
}

Totals StatsBoard::totals() const {
    Totals t = worker_totals(0);
    for (unsigned i = 1; i < workers(); ++i) t += worker_totals(i);
    return t;
}

}  // namespace linerate::stats
