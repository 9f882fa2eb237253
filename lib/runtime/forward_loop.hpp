#pragma once
// The run-to-completion loop shared by the apps that send packets back out: RX a burst on each
// of the worker's queues, run the kernel on every frame (prefetching the next frames' data),
// transmit the kept ones on the same port and queue (or the paired port's, forward_mode.hpp),
// count the rest by reason, and free them or divert them to another port.
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <concepts>
#include <cstdint>
#include <optional>
#include <vector>

#include "pkt/checksum.hpp"
#include "runtime/runtime.hpp"
#include "runtime/tx.hpp"
#include "worker/quiescence.hpp"

namespace linerate {

inline constexpr unsigned kMaxBurst = 512;
inline constexpr unsigned kPrefetchAhead = 3;

// What a kernel returns to have the frame transmitted (a drop is its board slot, never 0: slot 0
// is tx_full, stats/names.hpp).
inline constexpr unsigned kTransmit = 0;
static_assert(kTransmit == stats::kTxFullSlot);

// Where a worker transmits the frames its kernel rejects instead of freeing them (nfv's
// --bad-port). They still count under their drop reason, so rx == tx + sum(drops) holds with or
// without a divert; what became of them is told by two app counters of the board.
struct Divert {
    uint16_t port = 0;
    uint16_t queue = 0;         // this worker's own queue on `port`: no other lcore uses it
    unsigned sent_counter = 0;  // app counter: rejected frames transmitted on (port, queue)
    unsigned full_counter = 0;  // app counter: rejected frames that TX did not take (freed)
};

struct ForwardOptions {
    std::optional<Divert> divert;  // none: rejected frames are freed
    // Where the frames kept from each of the worker's RX queues go out (forward_tx_queues(),
    // same order as the slot's queues); empty: the queue they came in on.
    std::vector<worker::QueueRef> tx;
    // With --exception-path: frames the kernel rejects with this reason are not the app's
    // (nfv: not IPv4) and go to the host's kernel instead of being dropped.
    std::optional<unsigned> to_kernel_reason;
};

// A kernel that shortens the frames it transmits (nfv trims Ethernet padding) says by how many
// bytes once per burst, so the loop reads no frame length after the kernel.
template <class Kernel>
concept TrimmingKernel = requires(Kernel& k) {
    { k.take_trimmed_bytes() } -> std::convertible_to<uint64_t>;
};

// Kernel: `unsigned operator()(rte_mbuf*)` returning kTransmit to send the (possibly modified)
// frame back out, or the board slot of a drop reason, stats::drop_slot(reason).
template <class Kernel>
void forward_loop(WorkerContext& ctx, Kernel& kernel, const ForwardOptions& options = {}) {
    rte_mbuf* pkts[kMaxBurst];
    rte_mbuf* drop[kMaxBurst];
    const uint16_t burst = uint16_t(ctx.burst);
    const bool divert = options.divert.has_value();
    const Divert to = options.divert.value_or(Divert{});
    stats::WorkerCounters& c = ctx.counters;
    const std::vector<worker::QueueRef>& rx_queues = ctx.slot.queues;
    const std::vector<worker::QueueRef>& tx_queues = options.tx.empty() ? rx_queues : options.tx;
    const size_t queues = rx_queues.size();
    ExceptionPath* const exception = ctx.exception;
    const bool sends_for_kernel = exception && exception->transmits_for(ctx.slot);
    const unsigned to_kernel_reason =
        exception ? options.to_kernel_reason.value_or(kTransmit) : kTransmit;
    rte_mbuf* to_kernel[kMaxBurst];
    while (worker::keep_polling()) {
        if (sends_for_kernel) exception->transmit_from_kernel(c, ctx.tx_retries);
        for (size_t qi = 0; qi < queues; ++qi) {
            const worker::QueueRef q = rx_queues[qi];
            const unsigned n = rte_eth_rx_burst(q.port, q.queue, pkts, burst);
            if (n == 0) continue;
            const bool complete_checksums = ctx.may_carry_unfinished_checksums(q.port);
            for (unsigned i = 0; i < n && i < kPrefetchAhead; ++i)
                rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void*));
            // What is kept is what came in minus what was dropped or trimmed: the common case
            // adds one length per frame.
            uint64_t rx_bytes = 0, drop_bytes = 0;
            unsigned keep = 0, dropped = 0, handed = 0;
            auto step = [&](rte_mbuf* m) {
                const uint32_t len = rte_pktmbuf_pkt_len(m);
                rx_bytes += len;
                if (unsigned reason = kernel(m); reason == kTransmit) [[likely]] {
                    if (complete_checksums) [[unlikely]]
                        pkt::complete_offloaded_checksum(rte_pktmbuf_mtod(m, uint8_t*),
                                                         rte_pktmbuf_data_len(m));
                    pkts[keep++] = m;
                } else if (reason == to_kernel_reason) {
                    drop_bytes += len;
                    to_kernel[handed++] = m;
                } else {
                    c.drops[reason].add(1);
                    drop_bytes += len;
                    drop[dropped++] = m;
                }
            };
            // Two loops rather than a bounds test per packet: the tail has nothing to prefetch.
            unsigned i = 0;
            for (; i + kPrefetchAhead < n; ++i) {
                rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kPrefetchAhead], void*));
                step(pkts[i]);
            }
            for (; i < n; ++i) step(pkts[i]);
            uint64_t keep_bytes = rx_bytes - drop_bytes;
            if constexpr (TrimmingKernel<Kernel>) keep_bytes -= kernel.take_trimmed_bytes();
            const worker::QueueRef out = tx_queues[qi];
            TxResult tx =
                tx_burst_all(out.port, out.queue, pkts, uint16_t(keep), ctx.tx_retries, keep_bytes);
            if (tx.dropped) c.tx_full().add(tx.dropped);
            c.tx_packets.add(tx.sent);
            c.tx_bytes.add(tx.sent_bytes);
            if (dropped) {
                if (divert) {
                    // After the kept frames: the forwarded traffic's latency comes first.
                    TxResult d =
                        tx_burst_all(to.port, to.queue, drop, uint16_t(dropped), ctx.tx_retries);
                    c.app[to.sent_counter].add(d.sent);
                    if (d.dropped) c.app[to.full_counter].add(d.dropped);
                } else {
                    rte_pktmbuf_free_bulk(drop, dropped);
                }
            }
            if (handed) exception->to_kernel(c, to_kernel, handed);
            // RX last: when a reader sees a packet received, its fate is already counted.
            c.rx_bytes.add(rx_bytes);
            c.rx_packets.add(n);
        }
    }
}

}  // namespace linerate
