#pragma once
// What kvagg_bench compares, each run over the same Trace on one core:
//   plain          AggTable::add over the decoded tuples, staged in blocks as the kernel does: the
//                  same table without packets (no parsing, byte swaps, duplicate check): the
//                  ceiling kvagg is held to (goal >= 0.8x)
//   array          sums[key] += value over the decoded tuples, a plain u64 array: the memory
//                  system's own ceiling for dense keys (for reference)
//   lines          the memory ceiling of the hash table: per decoded tuple, add its value to one
//                  word of a line picked by the key's hash (the table's hash), in memory the
//                  table's size (or --lines-mib) in the same AggBuf, lines prefetched the same
//                  distance ahead; no key compare, no probe: one random line read-modify-write per
//                  tuple, which no table of that footprint can beat
//   unordered_map  std::unordered_map<u64,u64> (reserved for the key count), decoded tuples
//   tbb_chm        tbb::concurrent_hash_map<u64,u64> with an accessor per tuple, decoded tuples
//   ours           KvKernel<AggTable> (hash) on the frames: parse + duplicate window + table
//   ours_rx_csum   the same with the port's checksum verdict (good, as with RX offload): no
//                  checksum computed in software
//   ours_direct    the same with --index direct
//   ours_shared    KvKernel<SharedAggTable> (atomic adds), one thread
// The baselines get the tuples already decoded: any packet cost is kvagg's alone.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bench_trace.hpp"
#include "kvagg/agg_table.hpp"

namespace linerate::kvagg::bench {

enum class Variant {
    plain,
    array,
    lines,
    unordered_map,
    tbb_chm,
    ours,
    ours_rx_csum,
    ours_direct,
    ours_shared
};

const std::vector<Variant>& all_variants();
std::string variant_name(Variant v);
Variant parse_variant(const std::string& name);  // throws std::invalid_argument

struct RunConfig {
    unsigned passes = 3;     // timed passes, after one warm-up pass (which inserts the keys)
    unsigned prefetch = 32;  // plain and ours: look-ahead block (kvagg --prefetch); lines: distance
    size_t lines_bytes = 0;  // lines: its memory (0 = the hash table's footprint)
    // ours*: bursts of frames whose lines are requested ahead of the kernel, as a PMD hands over
    // frames it just wrote (DMA into the LLC, or net_pcap's copy); 0: only the burst at hand.
    unsigned rx_ahead = 0;
};

// Slots the variant needs in the AggBuf (0: it allocates its own memory).
size_t variant_slots(Variant v, uint64_t keys, const RunConfig& cfg);

struct VariantRun {
    std::vector<double> mtuples_per_s;  // one per timed pass
    uint64_t keys_held = 0;
    bool verified = false;  // the structure's total == passes x the trace's value sum
};

// `slots` is the table memory of the table variants (at least variant_slots()).
VariantRun run_variant(Variant v, const Trace& trace, uint64_t keys, std::span<AggSlot> slots,
                       const RunConfig& cfg);

}  // namespace linerate::kvagg::bench
