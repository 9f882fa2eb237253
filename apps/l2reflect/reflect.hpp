#pragma once
// l2reflect's kernel: send every frame on (back where it came from, or out of the paired port)
// with source and destination MAC swapped, or unchanged. Plain code on bytes, unit-tested
// without EAL.
#include <cstddef>
#include <cstdint>

#include "l2reflect/xdp/l2reflect_abi.h"
#include "pkt/headers.hpp"
#include "pkt/mac_swap.h"
#include "stats/names.hpp"

namespace linerate::l2reflect {

// Drop reasons, after the runtime's (tx_full, exception_ring_full).
#define LINERATE_L2REFLECT_DROPS(X) \
    X(runt, "runt")                 \
    X(split_header, "split header")
LINERATE_DROPS(Drop, kDrops, LINERATE_L2REFLECT_DROPS);
// The XDP program's reasons (apps/l2reflect/xdp/l2reflect_abi.h): the runt; split_header is this
// kernel's only.
inline constexpr const char* kXdpDropKeys[] = {LR_L2REFLECT_DROPS(LR_DROP_KEY_ITEM)};
static_assert(
    stats::same_keys(kDrops, stats::drop_slot(Drop::runt), kXdpDropKeys, "split_header"),
    "apps/l2reflect/xdp/l2reflect_abi.h's LR_L2REFLECT_DROPS and LINERATE_L2REFLECT_DROPS "
    "differ");

// A frame of `frame_len` bytes whose first `len` bytes are contiguous at `frame` (the first
// segment of a chain; the whole frame otherwise): MACs swapped when kSwap, by
// lib/pkt/mac_swap.h's lr_swap_macs (the one the XDP program compiles). A frame shorter
// than an Ethernet header has no MACs and is a runt; one whose first segment ends inside the
// MACs (no PMD does that, but nothing forbids it) is dropped under its own reason.
template <bool kSwap = true>
inline unsigned reflect_frame(uint8_t* frame, size_t len, size_t frame_len) {
    if (len >= 16) [[likely]] {
        if constexpr (kSwap) lr_swap_macs(frame, frame + len);
        return kTransmit;
    }
    if (frame_len < pkt::kEthHdrLen) return stats::drop_slot(Drop::runt);
    if (len < 2 * pkt::kMacLen) return stats::drop_slot(Drop::split_header);
    if constexpr (kSwap) lr_swap_macs(frame, frame + len);
    return kTransmit;
}

// A frame in one piece.
template <bool kSwap = true>
inline unsigned reflect_frame(uint8_t* frame, size_t len) {
    return reflect_frame<kSwap>(frame, len, len);
}

}  // namespace linerate::l2reflect
