#pragma once
// ttl-forward's kernel: decrement the TTL of every IPv4 frame and patch the header checksum
// (RFC 1624, incremental), as a router's forwarding path does; drop what it cannot forward.
// Plain code on bytes (ttl_decrement.h, which the XDP program compiles too), unit-tested
// without EAL.
#include <cstddef>
#include <cstdint>

#include "pkt/bytes.hpp"
#include "pkt/headers.hpp"
#include "stats/names.hpp"
#include "ttl_decrement.h"

namespace ttl_forward {

// Drop reasons, one list: the enum (each value its board slot), the JSON keys and the summary
// text, after the runtime's own (tx_full, exception_ring_full).
#define TTL_FORWARD_DROPS(X)              \
    X(not_ipv4, "not IPv4")               \
    X(truncated, "truncated IPv4 header") \
    X(ttl_expired, "TTL expired")
LINERATE_DROPS(Drop, kDrops, TTL_FORWARD_DROPS);

// The reasons of ttl_decrement.h (the kernel both tiers compile) in the same order.
static_assert(linerate::stats::drop_slot(Drop::truncated) ==
                  linerate::stats::drop_slot(Drop::not_ipv4) + TTL_TRUNCATED &&
              linerate::stats::drop_slot(Drop::ttl_expired) ==
                  linerate::stats::drop_slot(Drop::not_ipv4) + TTL_EXPIRED);

// `frame` holds the first `len` bytes of an untagged Ethernet frame contiguously. Returns
// kTransmit with the TTL one lower, or the board slot of the drop reason.
inline unsigned decrement_ttl(uint8_t* frame, size_t len) {
    const ttl_verdict v = ttl_decrement(frame, frame + len);
    if (v == TTL_FORWARD) return linerate::kTransmit;
    return linerate::stats::drop_slot(Drop::not_ipv4) + unsigned(v);
}

}  // namespace ttl_forward
