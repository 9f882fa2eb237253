#pragma once
// A random pointer chain through a buffer of 8-byte slots, the way memory latency is measured
// (lmbench's lat_mem_rd, the DPA study's Fig. 5 and its reflector's lookups, Fig. 11b): each
// slot holds the index of the next, in one random cycle through every slot, so each read's
// address is the previous read's value (no two reads overlap) and no prefetcher can guess the
// next. Plain code, no EAL.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace linerate::mem {

// The chain holds at most 2^32 slots (random_index's range).
inline constexpr size_t kMaxChainSlots = size_t(1) << 32;

// A random index in [0, n), n <= 2^32, stepping a xorshift64 state (never 0: start it odd).
inline uint64_t random_index(uint64_t& state, uint64_t n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return ((state >> 32) * n) >> 32;
}

// Fills `slots` (2 to kMaxChainSlots of them) with one cycle through every slot: slot i holds
// the index of the slot after i. Sattolo's algorithm: swap each slot, from the last down, with
// one strictly before it; the mapping i -> slots[i] is then a single cycle (no short one).
inline void make_cyclic_chain(std::span<uint64_t> slots, uint64_t seed) {
    for (size_t i = 0; i < slots.size(); ++i) slots[i] = i;
    uint64_t state = seed | 1;
    for (size_t i = slots.size() - 1; i > 0; --i)
        std::swap(slots[i], slots[random_index(state, i)]);
}

}  // namespace linerate::mem
