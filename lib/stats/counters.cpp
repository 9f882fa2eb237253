#include "stats/counters.hpp"

#include <algorithm>
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
    busy_cycles += o.busy_cycles;
    for (size_t i = 0; i < drops.size() && i < o.drops.size(); ++i) drops[i] += o.drops[i];
    for (size_t i = 0; i < app.size() && i < o.app.size(); ++i) app[i] += o.app[i];
    return *this;
}

namespace {

// The slots of `names` that are reported: those of no feature, or of a feature that is on.
std::vector<unsigned> shown(const std::vector<Name>& names,
                            std::span<const std::string_view> features_on) {
    std::vector<unsigned> slots;
    for (unsigned i = 0; i < names.size(); ++i)
        if (names[i].feature.empty() || std::find(features_on.begin(), features_on.end(),
                                                  names[i].feature) != features_on.end())
            slots.push_back(i);
    return slots;
}

// Whether `names` starts with the runtime's own (stats/names.hpp).
bool starts_with(const std::vector<Name>& names, Names runtime) {
    if (names.size() < runtime.size()) return false;
    for (size_t i = 0; i < runtime.size(); ++i)
        if (names[i].key != runtime[i].key) return false;
    return true;
}

unsigned slot_of(const std::vector<Name>& names, std::string_view key) {
    for (unsigned i = 0; i < names.size(); ++i)
        if (names[i].key == key) return i;
    throw std::logic_error("no board slot named " + std::string(key));
}

}  // namespace

StatsBoard::StatsBoard(std::string app, unsigned workers, Names drop_reasons, Names app_counters,
                       std::span<const std::string_view> features_on)
    : app_(std::move(app)),
      workers_(workers),
      drop_reasons_(drop_reasons.begin(), drop_reasons.end()),
      app_counters_(app_counters.begin(), app_counters.end()),
      shown_drops_(shown(drop_reasons_, features_on)),
      shown_counters_(shown(app_counters_, features_on)) {
    if (drop_reasons_.size() > kMaxDropReasons || app_counters_.size() > kMaxAppCounters)
        throw std::logic_error("too many drop reasons or app counters");
    if (!starts_with(drop_reasons_, kRuntimeDrops) || !starts_with(app_counters_, kRuntimeCounters))
        throw std::logic_error(app_ +
                               ": drop reasons and counters must be LINERATE_DROPS and "
                               "LINERATE_COUNTERS lists (the runtime's names first)");
}

unsigned StatsBoard::drop_slot(std::string_view key) const {
    return slot_of(drop_reasons_, key);
}
unsigned StatsBoard::counter_slot(std::string_view key) const {
    return slot_of(app_counters_, key);
}

Totals StatsBoard::worker_totals(unsigned i) const {
    return totals_of(workers_[i]);
}

Totals StatsBoard::totals_of(const WorkerCounters& w) const {
    Totals t;
    t.rx_packets = w.rx_packets.get();
    t.rx_bytes = w.rx_bytes.get();
    t.tx_packets = w.tx_packets.get();
    t.tx_bytes = w.tx_bytes.get();
    t.busy_cycles = w.busy_cycles.get();
    for (size_t r = 0; r < drop_reasons_.size(); ++r) t.drops.push_back(w.drops[r].get());
    for (size_t c = 0; c < app_counters_.size(); ++c) t.app.push_back(w.app[c].get());
    return t;
}

Totals StatsBoard::totals() const {
    Totals t = worker_totals(0);
    for (unsigned i = 1; i < workers(); ++i) t += worker_totals(i);
    if (kernel_tier_) t += totals_of(*kernel_tier_);
    return t;
}

WorkerCounters& StatsBoard::kernel_tier() {
    if (!kernel_tier_) kernel_tier_ = std::make_unique<WorkerCounters>();
    return *kernel_tier_;
}

Totals StatsBoard::kernel_tier_totals() const {
    return kernel_tier_ ? totals_of(*kernel_tier_) : totals_of(WorkerCounters{});
}

}  // namespace linerate::stats
