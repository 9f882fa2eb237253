#pragma once
// ttl-forward's kernel: decrement the TTL of every IPv4 frame and patch the header checksum
// (RFC 1624, incremental), as a router's forwarding path does; drop what it cannot forward.
// Plain code on bytes, unit-tested without EAL.
#include <cstddef>
#include <cstdint>

#include "pkt/bytes.hpp"
#include "pkt/headers.hpp"
#include "stats/names.hpp"

namespace ttl_forward {

// Drop reasons, one list: the enum (each value its board slot), the JSON keys and the summary
// text, after the runtime's own (tx_full, exception_ring_full).
#define TTL_FORWARD_DROPS(X)              \
    X(not_ipv4, "not IPv4")               \
    X(truncated, "truncated IPv4 header") \
    X(ttl_expired, "TTL expired")
LINERATE_DROPS(Drop, kDrops, TTL_FORWARD_DROPS);

inline constexpr size_t kTtlOffset = linerate::pkt::kEthHdrLen + 8;
inline constexpr size_t kChecksumOffset = linerate::pkt::kEthHdrLen + 10;

// `frame` holds the first `len` bytes of an untagged Ethernet frame contiguously. Returns
// kTransmit with the TTL one lower, or the board slot of the drop reason.
inline unsigned decrement_ttl(uint8_t* frame, size_t len) {
    using namespace linerate;
    if (len < pkt::kEthHdrLen) return stats::drop_slot(Drop::truncated);
    if (pkt::load_be16(frame + 12) != pkt::kEtherTypeIpv4) return stats::drop_slot(Drop::not_ipv4);
    if (len < pkt::kEthHdrLen + pkt::kIpv4MinHdrLen) return stats::drop_slot(Drop::truncated);
    const uint8_t ttl = frame[kTtlOffset];
    if (ttl <= 1) return stats::drop_slot(Drop::ttl_expired);
    frame[kTtlOffset] = uint8_t(ttl - 1);
    // HC' = ~(~HC + ~m + m') over the 16-bit word holding TTL and protocol: m' = m - 0x0100.
    const uint16_t old_word = uint16_t(ttl << 8 | frame[kTtlOffset + 1]);
    const uint16_t new_word = uint16_t(old_word - 0x0100);
    uint32_t sum = uint16_t(~pkt::load_be16(frame + kChecksumOffset));
    sum += uint16_t(~old_word);
    sum += new_word;
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    pkt::store_be16(frame + kChecksumOffset, uint16_t(~sum));
    return kTransmit;
}

}  // namespace ttl_forward
