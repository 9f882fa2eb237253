#pragma once
// What a run leaves behind: the --dump file and the run's totals (kvagg/figures.hpp declares
// them for the final JSON and summary), from the merged tables and the workers' counters. No
// EAL: unit tests use it.

#include <span>
#include <string>

#include "kvagg/agg_merge.hpp"
#include "kvagg/kv_kernel.hpp"

namespace linerate::kvagg {

// `key,value` lines, decimal u64, in the order given (merge_tables sorts by key). Throws
// std::runtime_error when the file cannot be written.
void write_dump(const std::string& path, std::span<const KeySum> sums);

struct RunFigures {
    KvCounters totals;  // summed over the workers
    uint64_t keys = 0;  // distinct keys after the merge
    uint64_t aggregated_sum = 0;
    SeqGaps gaps;  // summed over the workers' duplicate windows
    double seconds = 0;

    uint64_t tuples() const { return totals.tuples_aggregated + totals.tuples_overflowed(); }
    double mtuples_per_s() const { return seconds > 0 ? double(tuples()) / seconds / 1e6 : 0; }
};

}  // namespace linerate::kvagg
