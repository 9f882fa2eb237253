#pragma once
// What a run leaves behind: the --dump file and kvagg's keys of the final JSON and summary, from
// the merged tables and the workers' counters. No EAL: unit tests use it.
#include <nlohmann/json.hpp>

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

// tuples, keys, overflow, overflow_sum, aggregated_sum, duplicates, stale, gaps_opened,
// gaps_filled, mtuples_per_s.
nlohmann::json figures_json(const RunFigures& f);
// "tuples 123 (4.5 Mtuples/s), keys 99, overflow 0 tuples (sum 0), duplicates 3"
std::string figures_line(const RunFigures& f);

}  // namespace linerate::kvagg
