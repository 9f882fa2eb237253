#pragma once
// The transmit step of every worker loop, beside the RX step (rx_step.hpp): a burst goes out
// completely or what could not go is accounted for. Leftovers are retried a bounded number of
// times, then freed and counted on the worker's board, so nothing is lost silently, no mbuf leaks
// and every loop counts a send the same way.
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstdint>

#include "stats/counters.hpp"
#include "worker/worker_map.hpp"

namespace linerate {

struct TxResult {
    uint16_t sent = 0;
    uint64_t sent_bytes = 0;
    uint16_t dropped = 0;  // freed after the retries
};

// `bytes` is the sum of the frames' pkt_len, which the caller usually has already: the
// frames leave our hands in tx_burst, so only the leftovers' lengths can be read afterwards.
// Forced inline: GCC called it out of line in a header check's forward loop (callgrind).
[[gnu::always_inline]] inline TxResult tx_burst_all(uint16_t port, uint16_t queue, rte_mbuf** pkts,
                                                    uint16_t n, unsigned retries, uint64_t bytes) {
    TxResult r;
    r.sent = rte_eth_tx_burst(port, queue, pkts, n);
    for (unsigned attempt = 0; r.sent < n && attempt < retries; ++attempt)
        r.sent += rte_eth_tx_burst(port, queue, pkts + r.sent, uint16_t(n - r.sent));
    for (uint16_t i = r.sent; i < n; ++i) bytes -= rte_pktmbuf_pkt_len(pkts[i]);
    if (r.sent < n) {
        r.dropped = uint16_t(n - r.sent);
        rte_pktmbuf_free_bulk(pkts + r.sent, r.dropped);
    }
    r.sent_bytes = bytes;
    return r;
}

inline uint64_t burst_bytes(rte_mbuf* const* pkts, uint16_t n) {
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < n; ++i) bytes += rte_pktmbuf_pkt_len(pkts[i]);
    return bytes;
}

// A worker's transmits, counted on its board slots: what went as tx packets and bytes, what the
// queue did not take after the retries (freed) under tx_full or the caller's drop counter. Plain
// adds to the worker's own slots (one writer), no allocation, no virtual call.
class TxStep {
  public:
    TxStep(stats::WorkerCounters& counters, unsigned retries) : c_(counters), retries_(retries) {}

    // The worker's traffic: counted as its TX; what did not go as tx_full. Forced inline, as
    // every send: GCC made a call of it in a header check's forward loop (+44 instructions a burst
    // under callgrind).
    [[gnu::always_inline]] TxResult send(worker::QueueRef q, rte_mbuf** pkts, uint16_t n,
                                         uint64_t bytes) {
        return send(q, pkts, n, bytes, c_.tx_full());
    }
    [[gnu::always_inline]] TxResult send(worker::QueueRef q, rte_mbuf** pkts, uint16_t n) {
        return send(q, pkts, n, burst_bytes(pkts, n));
    }

    // The same, with what did not go counted on `refused` (an app's own reason, e.g. a service's
    // responses_dropped) instead of tx_full.
    [[gnu::always_inline]] TxResult send(worker::QueueRef q, rte_mbuf** pkts, uint16_t n,
                                         uint64_t bytes, stats::Counter& refused) {
        const TxResult tx = tx_burst_all(q.port, q.queue, pkts, n, retries_, bytes);
        if (tx.dropped) refused.add(tx.dropped);
        c_.tx_packets.add(tx.sent);
        c_.tx_bytes.add(tx.sent_bytes);
        return tx;
    }

    // Frames that are not the worker's forwarded traffic (rejected frames diverted to another
    // port, the host kernel's frames on the exception path): counted on `sent` and `refused`
    // only, so rx == tx + drops still holds for the worker's own frames. Not forced inline: off
    // the forwarded traffic's path.
    TxResult send_aside(worker::QueueRef q, rte_mbuf** pkts, uint16_t n, stats::Counter& sent,
                        stats::Counter& refused) {
        const TxResult tx = tx_burst_all(q.port, q.queue, pkts, n, retries_, burst_bytes(pkts, n));
        sent.add(tx.sent);
        if (tx.dropped) refused.add(tx.dropped);
        return tx;
    }

  private:
    stats::WorkerCounters& c_;
    const unsigned retries_;
};

}  // namespace linerate
