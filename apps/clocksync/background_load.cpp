#include "clocksync/background_load.hpp"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "runtime/tx.hpp"

namespace linerate::clocksync {

namespace {
// Frames per tx_burst: large enough that the per-burst cost stays small at a few Mpps, small
// enough (4 µs at 2 Mpps) that the load is steady on the scale of a round trip.
constexpr unsigned kBatch = 8;
constexpr unsigned kMaxBatch = 32;
// After a stall (the loop preempted) at most this many frames are owed: no catch-up flood.
constexpr double kMaxOwed = kMaxBatch;
constexpr uint16_t kDiscardPort = 9;
}  // namespace

BackgroundLoad::BackgroundLoad(rte_mempool* pool, pkt::UdpFrameSpec spec, unsigned frame_len,
                               double pps)
    : pool_(pool) {
    if (pps <= 0) return;
    if (rte_pktmbuf_data_room_size(pool) < RTE_PKTMBUF_HEADROOM + frame_len)
        throw std::invalid_argument("--background-size exceeds the mbuf data room");
    spec.dst_port = kDiscardPort;
    frame_ = pkt::make_udp_frame(spec, frame_len);
    pps_ = pps;
}

void BackgroundLoad::set_dst_mac(const pkt::MacAddr& mac) {
    if (!frame_.empty()) std::memcpy(frame_.data(), mac.data(), mac.size());
}

void BackgroundLoad::poll(uint16_t port, uint16_t queue, uint64_t now, stats::WorkerCounters& c,
                          unsigned sent_counter, unsigned refused_counter) {
    if (!enabled()) return;
    if (!started_) {
        pacer_ = worker::Pacer(pps_, rte_get_tsc_hz(), now, kMaxOwed);
        started_ = true;
    }
    const unsigned n = unsigned(std::clamp(pacer_.credit(now), 0.0, double(kMaxBatch)));
    if (n < kBatch) return;
    rte_mbuf* pkts[kMaxBatch];
    if (rte_pktmbuf_alloc_bulk(pool_, pkts, n) != 0) {
        pacer_.spend(n);  // the pool is short: count them as refused, keep the pace
        c.app[refused_counter].add(n);
        return;
    }
    const uint16_t len = uint16_t(frame_.size());
    for (unsigned i = 0; i < n; ++i)
        std::memcpy(rte_pktmbuf_append(pkts[i], len), frame_.data(), len);
    // No retry: background frames the ring refuses are counted, not waited for.
    const TxResult tx = TxStep(c, 0).send({port, queue}, pkts, uint16_t(n), uint64_t(n) * len,
                                          c.app[refused_counter]);
    pacer_.spend(n);
    c.app[sent_counter].add(tx.sent);
}

}  // namespace linerate::clocksync
