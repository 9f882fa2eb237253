#pragma once
// What a kvagg worker shares with the other threads: its request slot (request_slot.hpp), through
// which telemetry and the control thread ask it for something, and the totals it publishes once
// per burst.
#include <atomic>
#include <cstdint>

#include "kvagg/request_slot.hpp"

namespace linerate::kvagg {

struct WorkerLink : RequestSlot {
    // Published by the worker once per burst.
    alignas(64) std::atomic<uint64_t> keys{0};  // distinct keys in its table (shared: all)
    std::atomic<uint64_t> value_sum{0};         // wrapping sum of what it aggregated
    std::atomic<uint64_t> overflow_sum{0};      // wrapping sum of what its table refused
    std::atomic<uint64_t> gaps_opened{0};       // its duplicate window's SeqGaps
    std::atomic<uint64_t> gaps_filled{0};
};

}  // namespace linerate::kvagg
