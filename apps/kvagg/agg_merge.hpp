#pragma once
// Reading results: combine tables (one per worker, or the one shared table) into sorted per-key
// sums for --dump, the JSON totals and tests.
#include <cstdint>
#include <span>
#include <vector>

#include "kvagg/agg_table.hpp"

namespace linerate::kvagg {

struct KeySum {
    uint64_t key = 0;
    uint64_t sum = 0;
    friend bool operator==(const KeySum&, const KeySum&) = default;
};

struct AggResult {
    std::vector<KeySum> sums;  // sorted by key; only keys that received at least one tuple
    uint64_t total = 0;        // wrapping sum of all aggregated values
};

// Combines tables (one per worker, or one shared table) into per-key sums. parallel = true uses
// oneTBB (parallel scan of the slots, parallel sort; a direct-index fast path when every table
// is direct with the same capacity); false runs the same steps sequentially.
AggResult merge_tables(std::span<const AggView> tables, bool parallel = true);

// The slots as one sum per key (wrapping), ascending keys: parts of answers, epochs.
std::vector<AggSlot> sum_per_key(std::vector<AggSlot> slots);

}  // namespace linerate::kvagg
