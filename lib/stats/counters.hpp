#pragma once
// Per-worker counters: each worker owns one cache-aligned block and is its only writer, so an
// update is a relaxed load and store (a plain add, no locked instruction); readers (the stats
// line, telemetry) see a recent value.
#include <rte_config.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stats/names.hpp"

namespace linerate::stats {

class Counter {
  public:
    // Forced inline: two instructions GCC called out of line in a header check's forward loop.
    [[gnu::always_inline]] void add(uint64_t n) {
        v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    uint64_t get() const { return v_.load(std::memory_order_relaxed); }

  private:
    std::atomic<uint64_t> v_{0};
};

// The one way a count kept outside the board reaches it: a kernel's own plain counters (a
// kernel is a plain function, run and tested without a runtime: an aggregator's kernel, a time
// client's session) or a BPF program's map. The slot's writer carries the running total over, and
// the slot gains what the total gained since the last carry; everything else counts onto its
// slot directly.
class CarriedTotal {
  public:
    void carry(uint64_t total, Counter& slot) {
        if (total != carried_) slot.add(total - carried_);
        carried_ = total;
    }

  private:
    uint64_t carried_ = 0;  // what the slot already has of the total
};

struct alignas(RTE_CACHE_LINE_SIZE) WorkerCounters {
    Counter rx_packets, rx_bytes, tx_packets, tx_bytes;
    // TSC cycles from the start of each poll that returned packets to the start of the next
    // (runtime/rx_step.hpp): the worker's busy time, for cycles_per_packet.
    Counter busy_cycles;
    std::array<Counter, kMaxDropReasons> drops;  // by slot: the app's drop list (LINERATE_DROPS)
    std::array<Counter, kMaxAppCounters> app;    // by slot: its counters (LINERATE_COUNTERS)

    Counter& tx_full() { return drops[kTxFullSlot]; }
    template <class Reason>
    Counter& drop(Reason reason) {
        return drops[drop_slot(reason)];
    }
    template <class AppCounter>
    Counter& app_counter(AppCounter counter) {
        return app[static_cast<unsigned>(counter)];
    }
};

// A plain copy of counters, for rates, summaries and JSON.
struct Totals {
    uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0, busy_cycles = 0;
    std::vector<uint64_t> drops;
    std::vector<uint64_t> app;
    uint64_t dropped() const;
    // Busy TSC cycles per packet received (0 before the first packet).
    double cycles_per_packet() const {
        return rx_packets ? double(busy_cycles) / double(rx_packets) : 0.0;
    }
    Totals& operator+=(const Totals& o);
};

// The counters of every worker and the names of the app's drop reasons and counters
// (stats/names.hpp: LINERATE_DROPS, LINERATE_COUNTERS), in slot order. Names of a runtime
// feature that is not on (Name::feature) are not reported.
class StatsBoard {
  public:
    // Throws std::logic_error when a list does not start with the runtime's names.
    StatsBoard(std::string app, unsigned workers, Names drop_reasons, Names app_counters,
               std::span<const std::string_view> features_on = {});

    const std::string& app() const { return app_; }
    unsigned workers() const { return unsigned(workers_.size()); }
    WorkerCounters& worker(unsigned i) { return workers_[i]; }
    // By slot, every name.
    const std::vector<Name>& drop_reasons() const { return drop_reasons_; }
    const std::vector<Name>& app_counters() const { return app_counters_; }
    // The slots reported (summary, stats line, JSON, telemetry), in order.
    const std::vector<unsigned>& shown_drops() const { return shown_drops_; }
    const std::vector<unsigned>& shown_counters() const { return shown_counters_; }
    // The slot of a drop reason or counter by its key; throws std::logic_error if absent.
    unsigned drop_slot(std::string_view key) const;
    unsigned counter_slot(std::string_view key) const;

    Totals worker_totals(unsigned i) const;
    // Every worker's and the kernel tier's.
    Totals totals() const;

    // Counters of frames no worker handled (the app's XDP program: --datapath xdp on an
    // interface), written by one thread (the monitor's): part of totals(), of no worker's
    // figures. Made on the first call, before the workers start.
    WorkerCounters& kernel_tier();
    bool has_kernel_tier() const { return kernel_tier_ != nullptr; }
    Totals kernel_tier_totals() const;

  private:
    Totals totals_of(const WorkerCounters& w) const;

    std::string app_;
    std::vector<WorkerCounters> workers_;
    std::unique_ptr<WorkerCounters> kernel_tier_;
    std::vector<Name> drop_reasons_;
    std::vector<Name> app_counters_;
    std::vector<unsigned> shown_drops_, shown_counters_;
};

}  // namespace linerate::stats
