#pragma once
// Transmit a burst completely or account for what could not go: leftovers are retried a bounded
// number of times, then freed and reported, so nothing is lost silently and no mbuf leaks.
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstdint>

namespace linerate {

struct TxResult {
    uint16_t sent = 0;
    uint64_t sent_bytes = 0;
    uint16_t dropped = 0;  // freed after the retries
};

// `bytes` is the sum of the frames' pkt_len, which the caller usually has already: the
// frames leave our hands in tx_burst, so only the leftovers' lengths can be read afterwards.
inline TxResult tx_burst_all(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n,
                             unsigned retries, uint64_t bytes) {
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

inline TxResult tx_burst_all(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n,
                             unsigned retries) {
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < n; ++i) bytes += rte_pktmbuf_pkt_len(pkts[i]);
    return tx_burst_all(port, queue, pkts, n, retries, bytes);
}

}  // namespace linerate
