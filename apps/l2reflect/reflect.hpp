#pragma once
// l2reflect's kernel: send every frame back where it came from with source and destination MAC
// swapped. Plain code on bytes, unit-tested without EAL.
#include <cstddef>
#include <cstdint>

#include "pkt/headers.hpp"

namespace linerate::l2reflect {

// Drop reasons; 0 is the shared "tx full" of forwarding apps.
#define LINERATE_L2REFLECT_DROPS(X) \
    X(tx_full, "tx full")           \
    X(runt, "runt")

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

// Swaps the MACs of a frame whose first `len` bytes are contiguous; a frame shorter than an
// Ethernet header has no MACs to swap and is a runt.
inline unsigned reflect_frame(uint8_t* frame, size_t len) {
    if (len >= 16) [[likely]] {
        pkt::swap_macs_wide(frame);
        return kTransmit;
    }
    if (len < pkt::kEthHdrLen) return unsigned(Drop::runt);
    pkt::swap_macs(frame);
    return kTransmit;
}

}  // namespace linerate::l2reflect
