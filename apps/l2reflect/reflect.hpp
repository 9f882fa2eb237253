#pragma once
// l2reflect's kernel: send every frame on (back where it came from, or out of the paired port)
// with source and destination MAC swapped, or unchanged. Plain code on bytes, unit-tested
// without EAL.
#include <cstddef>
#include <cstdint>

#include "pkt/headers.hpp"

namespace linerate::l2reflect {

// Drop reasons; 0 is the shared "tx full" of forwarding apps.
#define LINERATE_L2REFLECT_DROPS(X) \
    X(tx_full, "tx full")           \
    X(runt, "runt")                 \
    X(split_header, "split header")

enum class Drop : unsigned {
#define X(name, text) name,
    LINERATE_L2REFLECT_DROPS(X)
#undef X
};

inline constexpr const char* kDropNames[] = {
#define X(name, text) text,
    LINERATE_L2REFLECT_DROPS(X)
#undef X
};

inline constexpr unsigned kTransmit = 0;

// A frame of `frame_len` bytes whose first `len` bytes are contiguous at `frame` (the first
// segment of a chain; the whole frame otherwise): MACs swapped when kSwap. A frame shorter
// than an Ethernet header has no MACs and is a runt; one whose first segment ends inside the
// MACs (no PMD does that, but nothing forbids it) is dropped under its own reason.
template <bool kSwap = true>
inline unsigned reflect_frame(uint8_t* frame, size_t len, size_t frame_len) {
    if (len >= 16) [[likely]] {
        if constexpr (kSwap) pkt::swap_macs_wide(frame);
        return kTransmit;
    }
    if (frame_len < pkt::kEthHdrLen) return unsigned(Drop::runt);
    if (len < 2 * pkt::kMacLen) return unsigned(Drop::split_header);
    if constexpr (kSwap) pkt::swap_macs(frame);
    return kTransmit;
}

// A frame in one piece.
template <bool kSwap = true>
inline unsigned reflect_frame(uint8_t* frame, size_t len) {
    return reflect_frame<kSwap>(frame, len, len);
}

}  // namespace linerate::l2reflect
