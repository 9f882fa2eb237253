#include "bench_variants.hpp"

#include <oneapi/tbb/concurrent_hash_map.h>

#include <algorithm>
#include <chrono>
#include <iterator>
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

AggConfig config(IndexMode mode, uint64_t keys) {
    return {.mode = mode, .max_keys = keys};
}

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

// Requests every line of frames [first, last) of `trace`.
void prefetch_frames(const Trace& trace, size_t first, size_t last) {
    for (size_t i = first; i < last; ++i)
        for (size_t off = 0; off < trace.frame_len(); off += 64)
            __builtin_prefetch(trace.frame(i) + off);
}

template <class Table>
VariantRun run_kernel(const Trace& trace, Table& table, const RunConfig& cfg,
                      pkt::RxChecksums port = {}) {
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
        const size_t ahead = cfg.rx_ahead * kBurst;
        FrameRef burst[kBurst];
        prefetch_frames(trace, 0, std::min(n, ahead));
        // As the app's RX loop: bursts of frame references, the headers prefetched.
        for (size_t b = 0; b < n; b += kBurst) {
            const size_t k = std::min(kBurst, n - b);
            if (ahead) prefetch_frames(trace, std::min(n, b + ahead), std::min(n, b + ahead + k));
            for (size_t i = 0; i < k; ++i) {
                __builtin_prefetch(trace.frame(b + i));
                burst[i] = {trace.frame(b + i), trace.frame_len(), port};
            }
            kernel.aggregate_burst({burst, k});
        }
        return size_t(kernel.counters().tuples_aggregated);
    });
    r.keys_held = table.size();
    r.verified = merged_total(table.view()) == (passes + 1) * trace.value_sum();
    return r;
}

// A tuple with its home, between the look-ahead and the add (as the kernel stages them).
struct Staged {
    uint64_t key, value;
    AggSlot* home;
};

// Stages tuples [first, last) of `t`: hashes each key and, with kPrefetch, prefetches its home.
// Out of line, as in the kernel: two short loops keep their values in registers.
template <bool kPrefetch>
[[gnu::noinline]] void stage(const AggHomes homes, const KvTuple* t, size_t first, size_t last,
                             Staged* out) {
    for (size_t i = first; i != last; ++i) {
        AggSlot* const home = homes.home<IndexMode::hash>(t[i].key);
        if constexpr (kPrefetch) __builtin_prefetch(home, 1, 3);
        out[i - first] = {t[i].key, t[i].value, home};
    }
}

[[gnu::noinline]] void add_staged(AggTable& table, const Staged* s, size_t n) {
    for (const Staged* e = s + n; s != e; ++s)
        table.add_at<IndexMode::hash>(s->home, s->key, s->value);
}

// The kernel's tuple loop on decoded tuples: the next block of `prefetch` tuples staged (homes
// hashed and prefetched), then the adds of the block before, the index mode fixed at compile
// time.
VariantRun run_plain(const Trace& trace, AggTable& table, const RunConfig& cfg) {
    const KvTuple* const t = trace.tuples().data();
    const size_t n = trace.tuples().size();
    const size_t block =
        cfg.prefetch ? std::min(cfg.prefetch, kMaxPrefetchAhead) : kMaxPrefetchAhead;
    const AggHomes homes = table.homes();
    VariantRun r;
    r.mtuples_per_s = timed(cfg.passes, [&] {
        Staged buf[2][kMaxPrefetchAhead];
        if (!cfg.prefetch) {
            for (size_t first = 0; first < n; first += block) {
                const size_t last = std::min(n, first + block);
                stage<false>(homes, t, first, last, buf[0]);
                add_staged(table, buf[0], last - first);
            }
            return n;
        }
        stage<true>(homes, t, 0, std::min(n, block), buf[0]);
        for (size_t first = 0, b = 0; first < n; first += block, b ^= 1) {
            const size_t last = std::min(n, first + block);
            stage<true>(homes, t, last, std::min(n, last + block), buf[b ^ 1]);
            add_staged(table, buf[b], last - first);
        }
        return n;
    });
    r.keys_held = table.size();
    r.verified = merged_total(table.view()) == (cfg.passes + 1) * trace.value_sum();
    return r;
}

// One random line read-modify-write per tuple over `slots` (the "lines" variant): the plain
// loop without the key compare, probe or refusal. The line is the key's hash scaled to the line
// count (any footprint, not only the table's power of two).
VariantRun run_lines(const Trace& trace, std::span<AggSlot> slots, const RunConfig& cfg) {
    std::fill(slots.begin(), slots.end(), AggSlot{0, 0});
    AggSlot* const base = slots.data();
    const uint64_t lines = slots.size() / kAggLineSlots;
    auto line = [&](uint64_t key) {
        return base + size_t((static_cast<unsigned __int128>(agg_hash(key)) * lines) >> 64) *
                          kAggLineSlots;
    };
    const auto& t = trace.tuples();
    const size_t ahead = cfg.prefetch;
    VariantRun r;
    r.mtuples_per_s = timed(cfg.passes, [&] {
        const size_t n = t.size();
        for (size_t i = 0; i < n; ++i) {
            if (ahead && i + ahead < n) __builtin_prefetch(line(t[i + ahead].key), 1, 3);
            line(t[i].key)->value += t[i].value;
        }
        return n;
    });
    uint64_t total = 0;
    for (const AggSlot& s : slots) {
        total += s.value;
        r.keys_held += s.value != 0;  // lines touched
    }
    r.verified = total == (cfg.passes + 1) * trace.value_sum();
    return r;
}

VariantRun run_array(const Trace& trace, uint64_t* sums, uint64_t keys, unsigned passes) {
    std::fill(sums, sums + keys, 0);
    const auto& t = trace.tuples();
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

}  // namespace

namespace {
// The variants' names (--variants, the rows' "variant"), in Variant's order, which is the order
// they run in: one list for the names, the parse and all_variants().
constexpr const char* kVariantNames[] = {"plain",         "array",       "lines",
                                         "unordered_map", "tbb_chm",     "ours",
                                         "ours_rx_csum",  "ours_direct", "ours_shared"};
static_assert(std::size(kVariantNames) == size_t(Variant::ours_shared) + 1,
              "a name for every Variant");
}  // namespace

const std::vector<Variant>& all_variants() {
    static const std::vector<Variant> v = [] {
        std::vector<Variant> all;
        for (size_t i = 0; i < std::size(kVariantNames); ++i) all.push_back(Variant(i));
        return all;
    }();
    return v;
}

std::string variant_name(Variant v) {
    return size_t(v) < std::size(kVariantNames) ? kVariantNames[size_t(v)] : "?";
}

Variant parse_variant(const std::string& name) {
    for (Variant v : all_variants())
        if (variant_name(v) == name) return v;
    throw std::invalid_argument("unknown variant '" + name + "'");
}

size_t variant_slots(Variant v, uint64_t keys, const RunConfig& cfg) {
    switch (v) {
        case Variant::lines:
            if (cfg.lines_bytes) return std::max<size_t>(cfg.lines_bytes / 64, 1) * kAggLineSlots;
            [[fallthrough]];
        case Variant::plain:
        case Variant::ours:
        case Variant::ours_rx_csum:
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
    if (slots.size() < variant_slots(v, keys, cfg))
        throw std::invalid_argument("run_variant: AggBuf too small");
    const std::span<AggSlot> mine = slots.first(variant_slots(v, keys, cfg));
    switch (v) {
        case Variant::plain: {
            AggTable t(mine, config(IndexMode::hash, keys));
            return run_plain(trace, t, cfg);
        }
        case Variant::array:
            return run_array(trace, reinterpret_cast<uint64_t*>(slots.data()), keys, passes);
        case Variant::lines:
            return run_lines(trace, mine, cfg);
        case Variant::unordered_map:
            return run_unordered_map(trace, keys, passes);
        case Variant::tbb_chm:
            return run_tbb(trace, keys, passes);
        case Variant::ours: {
            AggTable t(mine, config(IndexMode::hash, keys));
            return run_kernel(trace, t, cfg);
        }
        case Variant::ours_rx_csum: {
            AggTable t(mine, config(IndexMode::hash, keys));
            return run_kernel(trace, t, cfg, {pkt::RxCheck::good, pkt::RxCheck::good});
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
