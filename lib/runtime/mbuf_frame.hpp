#pragma once
// What the packet kernels (plain code on bytes) need from an mbuf beyond its first segment's
// bytes: the frame in one piece when it came as a chain (jumbo frames, scattered RX, net_pcap's
// large records), a chain cut to a shorter length, and the port's RX checksum verdicts.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "pkt/checksum.hpp"

namespace linerate {

// The port's RX checksum offload flags as the kernels' RxChecksums. A port without the
// offload leaves them 0 (unknown): the kernel verifies in software.
inline pkt::RxChecksums rx_checksums(const rte_mbuf* m) {
    constexpr uint64_t kChecksumFlags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_IP_CKSUM_BAD |
                                        RTE_MBUF_F_RX_L4_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_BAD;
    // A port without the offload: one test (both words from the flags: 10 instructions a frame
    // in an aggregating app's loop, callgrind).
    if ((m->ol_flags & kChecksumFlags) == 0) return {};
    auto state = [](uint64_t flags, uint64_t good, uint64_t bad) {
        const uint64_t f = flags & (good | bad);
        if (f == 0) return pkt::RxCheck::unknown;
        // good | bad together is "none": the data's checksum is not right, but the port has
        // verified the data's integrity (DPDK's RTE_MBUF_F_RX_*_CKSUM_NONE).
        return f == bad ? pkt::RxCheck::bad : pkt::RxCheck::good;
    };
    return {state(m->ol_flags, RTE_MBUF_F_RX_IP_CKSUM_GOOD, RTE_MBUF_F_RX_IP_CKSUM_BAD),
            state(m->ol_flags, RTE_MBUF_F_RX_L4_CKSUM_GOOD, RTE_MBUF_F_RX_L4_CKSUM_BAD)};
}

// No IPv4 frame is longer: a chain longer than this is cut here, and fails the length checks.
inline constexpr uint32_t kMaxLinearFrame = 65535 + 64;

// A chained frame copied into one buffer (one chain at a time), for kernels that parse bytes.
class LinearFrame {
  public:
    LinearFrame() : buf_(kMaxLinearFrame) {}
    // The frame's bytes and length: the first segment itself when it holds the whole frame,
    // else a copy of at most kMaxLinearFrame bytes, valid until the next call.
    struct Bytes {
        const uint8_t* data;
        uint32_t len;
    };
    Bytes of(const rte_mbuf* m) {
        if (m->nb_segs == 1) return {rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m)};
        const uint32_t len = std::min(rte_pktmbuf_pkt_len(m), kMaxLinearFrame);
        const auto* p = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, len, buf_.data()));
        return {p, p ? len : 0};
    }

  private:
    std::vector<uint8_t> buf_;
};

// Shortens a frame to `len` bytes (0 < len <= pkt_len), across segments: the segments past the
// new end are freed. rte_pktmbuf_trim alone only cuts inside the last segment.
inline void truncate_frame(rte_mbuf* m, uint32_t len) {
    if (len >= rte_pktmbuf_pkt_len(m)) return;
    if (m->nb_segs == 1) {
        rte_pktmbuf_trim(m, uint16_t(rte_pktmbuf_pkt_len(m) - len));
        return;
    }
    rte_mbuf* seg = m;
    uint32_t left = len;
    uint16_t segs = 1;
    while (left > seg->data_len) {
        left -= seg->data_len;
        seg = seg->next;
        ++segs;
    }
    seg->data_len = uint16_t(left);
    rte_mbuf* rest = seg->next;
    seg->next = nullptr;
    m->nb_segs = segs;
    m->pkt_len = len;
    while (rest) {
        rte_mbuf* next = rest->next;
        rte_pktmbuf_free_seg(rest);
        rest = next;
    }
}

}  // namespace linerate
