#include "bench_variants.hpp"

#include <oneapi/tbb/concurrent_hash_map.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "kvagg/agg_merge.hpp"
#include "kvagg/kv_kernel.hpp"
#include "kvagg/shared_agg_table.hpp"

namespace linerate::kvagg::bench {

namespace {

constexpr size_t kBurst = 32;  // frames per RX burst, the app's default

using Clock = std::chrono::steady_clock;

// Times `passes` calls of pass() after one untimed one; pass() returns the tuples it handled.
template <class Pass>
std::vector<double> timed(unsigned passes, Pass&& pass) {
    pass();
    std::vector<double> rates;
    for (unsigned p = 0; p < passes; ++p) {
        const auto t0 = Clock::now();
        const size_t n = pass();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        rates.push_back(double(n) / s / 1e6);
    }
    return rates;
}

uint64_t merged_total(const AggView& v) {
    return merge_tables({&v, 1}).total;
}

template <class Table>
VariantRun run_kernel(const Trace& trace, Table& table, const RunConfig& cfg) {
    const unsigned passes = cfg.passes;
    // A fresh duplicate window per pass, built before the timing: the replayed sequence numbers
    // are new to it.
    std::vector<std::unique_ptr<KvKernel<Table>>> kernels;
    for (unsigned p = 0; p <= passes; ++p)
        kernels.push_back(std::make_unique<KvKernel<Table>>(
            table, KvKernelConfig{.prefetch_ahead = cfg.prefetch}));
    unsigned next = 0;
    VariantRun r;
    r.mtuples_per_s = timed(passes, [&] {
        KvKernel<Table>& kernel = *kernels[next++];
        const size_t n = trace.frames();
        FrameRef burst[kBurst];
        // As the app's RX loop: bursts of frame references, the headers prefetched.
        for (size_t b = 0; b < n; b += kBurst) {
            const size_t k = std::min(kBurst, n - b);
            for (size_t i = 0; i < k; ++i) {
                __builtin_prefetch(trace.frame(b + i));
                burst[i] = {trace.frame(b + i), trace.frame_len()};
            }
            kernel.aggregate_burst({burst, k});
        }
        return size_t(kernel.counters().tuples_aggregated);
    });
    r.keys_held = table.size();
    r.verified = merged_total(table.view()) == (passes + 1) * trace.value_sum();
    return r;
}

// The kernel's tuple loop on decoded tuples: each key hashed once, its slot prefetched
// cfg.prefetch tuples before the add, the index mode fixed at compile time as in the kernel.
VariantRun run_plain(const Trace& trace, AggTable& table, const RunConfig& cfg) {
    const std::vector<KvTuple>& t = trace.tuples();
    const size_t ahead = std::min(cfg.prefetch, kMaxPrefetchAhead);
    constexpr size_t kMask = kMaxPrefetchAhead - 1;
    VariantRun r;
    r.mtuples_per_s = timed(cfg.passes, [&] {
        const size_t n = t.size();
        size_t ring[kMaxPrefetchAhead];
        for (size_t i = 0; i < std::min(ahead, n); ++i) {
            ring[i] = table.slot_hint<IndexMode::hash>(t[i].key);
            table.prefetch_hint(ring[i]);
        }
        for (size_t i = 0; i < n; ++i) {
            size_t hint;
            if (ahead) {
                hint = ring[i & kMask];
                if (i + ahead < n) {
                    const size_t next = table.slot_hint<IndexMode::hash>(t[i + ahead].key);
                    table.prefetch_hint(next);
                    ring[(i + ahead) & kMask] = next;
                }
            } else {
                hint = table.slot_hint<IndexMode::hash>(t[i].key);
            }
            table.add_at<IndexMode::hash>(hint, t[i].key, t[i].value);
        }
        return n;
    });
    r.keys_held = table.size();
    r.verified = merged_total(table.view()) == (cfg.passes + 1) * trace.value_sum();
    return r;
}

VariantRun run_array(const Trace& trace, uint64_t* sums, uint64_t keys, unsigned passes) {
    std::fill(sums, sums + keys, 0);
    const std::vector<KvTuple>& t = trace.tuples();
    VariantRun r;
    r.mtuples_per_s = timed(passes, [&] {
        for (const KvTuple& x : t) sums[x.key] += x.value;
        return t.size();
    });
    uint64_t total = 0;
    for (uint64_t k = 0; k < keys; ++k) {
        total += sums[k];
        r.keys_held += sums[k] != 0;
    }
    r.verified = total == (passes + 1) * trace.value_sum();
    return r;
}

// What a map baseline ends with: the keys it holds, and whether its sums add up to the trace's
// value sum over the warm-up pass and the timed ones.
template <class Map>
VariantRun finish_map_run(VariantRun r, const Map& m, const Trace& trace, unsigned passes) {
    uint64_t total = 0;
    for (const auto& [k, v] : m) total += v;
    r.keys_held = m.size();
    r.verified = total == (passes + 1) * trace.value_sum();
    return r;
}

VariantRun run_unordered_map(const Trace& trace, uint64_t keys, unsigned passes) {
    std::unordered_map<uint64_t, uint64_t> m;
    m.reserve(std::min<uint64_t>(keys, trace.tuples().size()));
    VariantRun r;
    r.mtuples_per_s = timed(passes, [&] {
        for (const KvTuple& x : trace.tuples()) m[x.key] += x.value;
        return trace.tuples().size();
    });
    return finish_map_run(std::move(r), m, trace, passes);
}

VariantRun run_tbb(const Trace& trace, uint64_t keys, unsigned passes) {
    using Map = tbb::concurrent_hash_map<uint64_t, uint64_t>;
    Map m;
    m.rehash(std::min<uint64_t>(keys, trace.tuples().size()));
    VariantRun r;
    r.mtuples_per_s = timed(passes, [&] {
        for (const KvTuple& x : trace.tuples()) {
            Map::accessor a;
            m.insert(a, x.key);
            a->second += x.value;
        }
        return trace.tuples().size();
    });
    return finish_map_run(std::move(r), m, trace, passes);
}

AggConfig config(IndexMode mode, uint64_t keys) {
    return {.mode = mode, .max_keys = keys};
}

}  // namespace

const std::vector<Variant>& all_variants() {
    static const std::vector<Variant> v = {
        Variant::plain, Variant::array,       Variant::unordered_map, Variant::tbb_chm,
        Variant::ours,  Variant::ours_direct, Variant::ours_shared};
    return v;
}

std::string variant_name(Variant v) {
    switch (v) {
        case Variant::plain:
            return "plain";
        case Variant::array:
            return "array";
        case Variant::unordered_map:
            return "unordered_map";
        case Variant::tbb_chm:
            return "tbb_chm";
        case Variant::ours:
            return "ours";
        case Variant::ours_direct:
            return "ours_direct";
        case Variant::ours_shared:
            return "ours_shared";
    }
    return "?";
}

Variant parse_variant(const std::string& name) {
    for (Variant v : all_variants())
        if (variant_name(v) == name) return v;
    throw std::invalid_argument("unknown variant '" + name + "'");
}

size_t variant_slots(Variant v, uint64_t keys) {
    switch (v) {
        case Variant::plain:
        case Variant::ours:
        case Variant::ours_shared:
            return AggGeometry::slots_for(config(IndexMode::hash, keys));
        case Variant::ours_direct:
            return AggGeometry::slots_for(config(IndexMode::direct, keys));
        case Variant::array:
            return (keys + 1) / 2;  // a u64 per key
        case Variant::unordered_map:
        case Variant::tbb_chm:
            break;
    }
    return 0;
}

VariantRun run_variant(Variant v, const Trace& trace, uint64_t keys, std::span<AggSlot> slots,
                       const RunConfig& cfg) {
    const unsigned passes = cfg.passes;
    if (slots.size() < variant_slots(v, keys))
        throw std::invalid_argument("run_variant: AggBuf too small");
    const std::span<AggSlot> mine = slots.first(variant_slots(v, keys));
    switch (v) {
        case Variant::plain: {
            AggTable t(mine, config(IndexMode::hash, keys));
            return run_plain(trace, t, cfg);
        }
        case Variant::array:
            return run_array(trace, reinterpret_cast<uint64_t*>(slots.data()), keys, passes);
        case Variant::unordered_map:
            return run_unordered_map(trace, keys, passes);
        case Variant::tbb_chm:
            return run_tbb(trace, keys, passes);
        case Variant::ours: {
            AggTable t(mine, config(IndexMode::hash, keys));
            return run_kernel(trace, t, cfg);
        }
        case Variant::ours_direct: {
            AggTable t(mine, config(IndexMode::direct, keys));
            return run_kernel(trace, t, cfg);
        }
        case Variant::ours_shared: {
            SharedAggTable t(mine, config(IndexMode::hash, keys));
            return run_kernel(trace, t, cfg);
        }
    }
    return {};
}

}  // namespace linerate::kvagg::bench
