#pragma once
// kvagg's worker loop: a sink. RX a burst on each of the worker's queues, aggregate it with the
// kernel's burst path, free it in bulk, transmit nothing. Counters go to the stats board once
// per burst, as differences of the kernel's own plain counters.
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "kvagg/kv_kernel.hpp"
#include "kvagg/worker_link.hpp"
#include "runtime/forward_loop.hpp"
#include "runtime/runtime.hpp"
#include "worker/stop.hpp"

namespace linerate::kvagg {

// table_full counts tuples, every other reason packets: only the packet reasons are board drop
// reasons (so rx == aggregated_packets + dropped), refused tuples are an app counter.
static_assert(size_t(KvVerdict::table_full) == kKvVerdictCount - 1,
              "table_full must be the last verdict: the board's drop reasons stop before it");
inline constexpr size_t kBoardReasons = kKvVerdictCount - 2;  // without ok and table_full
// Board drop reason of a packet verdict.
constexpr size_t board_reason(KvVerdict v) {
    return size_t(v) - 1;
}

// App counters of the board, in this order.
enum AppCounter : unsigned { kTuples, kAggregatedPackets, kOverflowTuples, kAppCounterCount };
inline constexpr std::array<const char*, kAppCounterCount> kAppCounterNames = {
    "tuples",              // tuples of aggregated packets: stored + overflow
    "aggregated_packets",  // packets whose tuples went to the table
    "overflow_tuples",     // tuples the table refused (table_full): value -> overflow_sum
};

inline std::vector<std::string> board_drop_reasons() {
    std::vector<std::string> r;
    for (size_t v = 1; v <= kBoardReasons; ++v) r.emplace_back(kKvVerdictNames[v]);
    return r;
}
inline std::vector<std::string> board_app_counters() {
    return {kAppCounterNames.begin(), kAppCounterNames.end()};
}

// Frames larger than one mbuf (jumbo frames on a chain) are copied here to be parsed in one
// piece; no IPv4 frame is longer.
inline constexpr size_t kMaxLinearFrame = 65536 + 64;

template <class Table>
class SinkLoop {
  public:
    SinkLoop(KvKernel<Table>& kernel, WorkerLink& link)
        : kernel_(kernel), link_(link), linear_(kMaxLinearFrame) {}

    void run(WorkerContext& ctx) {
        rte_mbuf* pkts[kMaxBurst];
        const uint16_t burst = uint16_t(ctx.burst);
        stats::WorkerCounters& c = ctx.counters;
        while (!worker::stop_requested()) {
            serve_query(link_, kernel_.table());
            for (const worker::QueueRef& q : ctx.slot.queues) {
                const uint16_t n = rte_eth_rx_burst(q.port, q.queue, pkts, burst);
                if (n == 0) continue;
                c.rx_bytes.add(aggregate(pkts, n));
                rte_pktmbuf_free_bulk(pkts, n);
                publish(c);
                // RX last: when a reader sees a packet received, its fate is already counted.
                c.rx_packets.add(n);
            }
        }
        link_.stopped.store(true, std::memory_order_release);
    }

  private:
    // Aggregates a burst (the kernel's burst path: the slot look-ahead runs across frames);
    // returns its bytes.
    uint64_t aggregate(rte_mbuf* const* pkts, uint16_t n) {
        FrameRef frames[kMaxBurst];
        uint16_t k = 0;
        uint64_t bytes = 0;
        for (uint16_t i = 0; i < n; ++i) {
            const rte_mbuf* m = pkts[i];
            bytes += rte_pktmbuf_pkt_len(m);
            if (m->nb_segs == 1) [[likely]] {
                rte_prefetch0(rte_pktmbuf_mtod(m, const void*));  // the header, parsed first
                frames[k++] = {rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m)};
                continue;
            }
            // A chain (a jumbo frame): the frames before it first, then a linear copy of it
            // (one buffer, so one chain at a time). Longer than any IPv4 frame: the truncated
            // copy fails the length checks and counts as malformed.
            kernel_.aggregate_burst({frames, k});
            k = 0;
            const uint32_t len =
                std::min<uint32_t>(rte_pktmbuf_pkt_len(m), uint32_t(linear_.size()));
            const auto* p =
                static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, len, linear_.data()));
            kernel_.aggregate_frame(p, p ? len : 0);
        }
        kernel_.aggregate_burst({frames, k});
        return bytes;
    }

    // Adds what the kernel counted since the last burst to the board.
    void publish(stats::WorkerCounters& c) {
        const KvCounters& now = kernel_.counters();
        for (size_t v = 1; v <= kBoardReasons; ++v)
            if (uint64_t d = now.by_verdict[v] - seen_.by_verdict[v])
                c.drops[board_reason(KvVerdict(v))].add(d);
        const uint64_t overflow = now.tuples_overflowed() - seen_.tuples_overflowed();
        const uint64_t stored = now.tuples_aggregated - seen_.tuples_aggregated;
        c.app[kTuples].add(stored + overflow);
        c.app[kAggregatedPackets].add(now.packets_ok() - seen_.packets_ok());
        if (overflow) c.app[kOverflowTuples].add(overflow);
        link_.keys.store(kernel_.table().size(), std::memory_order_relaxed);
        link_.value_sum.store(now.value_sum, std::memory_order_relaxed);
        link_.overflow_sum.store(now.overflow_sum, std::memory_order_relaxed);
        seen_ = now;
    }

    KvKernel<Table>& kernel_;
    WorkerLink& link_;
    KvCounters seen_{};  // what the board already has
    std::vector<uint8_t> linear_;
};

}  // namespace linerate::kvagg
