#include "kvagg/agg_merge.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <utility>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_sort.h>

namespace linerate::kvagg {

namespace {

// Scan and fill in chunks so the work splits evenly however the tables are sized.
constexpr size_t kChunkSlots = size_t(1) << 16;

struct Chunk {
    const AggView* table;
    size_t begin, end;
};

// Runs f(i) for i in [0, n), in parallel with oneTBB or in order.
void for_each_index(size_t n, bool parallel, const std::function<void(size_t)>& f) {
    if (!parallel) {
        for (size_t i = 0; i < n; ++i) f(i);
        return;
    }
    tbb::parallel_for(tbb::blocked_range<size_t>(0, n, 1),
                      [&](const tbb::blocked_range<size_t>& r) {
                          for (size_t i = r.begin(); i != r.end(); ++i) f(i);
                      });
}

// Exclusive prefix sum in place; returns the total.
size_t exclusive_scan(std::vector<size_t>& v) {
    size_t sum = 0;
    for (size_t& x : v) sum += std::exchange(x, sum);
    return sum;
}

// Every table direct with the same capacity: slot k of each table is key k, so sum across
// tables per key; the output is sorted without a sort.
AggResult merge_direct(std::span<const AggView> tables, bool parallel) {
    const size_t cap = tables.front().slots.size();
    const size_t chunks = (cap + kChunkSlots - 1) / kChunkSlots;
    auto used = [&](size_t k) {
        return std::any_of(tables.begin(), tables.end(),
                           [k](const AggView& t) { return t.slots[k].key != 0; });
    };
    std::vector<size_t> offsets(chunks);
    for_each_index(chunks, parallel, [&](size_t c) {
        size_t n = 0;
        for (size_t k = c * kChunkSlots, e = std::min(cap, k + kChunkSlots); k < e; ++k)
            n += used(k);
        offsets[c] = n;
    });
    AggResult r;
    r.sums.resize(exclusive_scan(offsets));
    for_each_index(chunks, parallel, [&](size_t c) {
        KeySum* out = r.sums.data() + offsets[c];
        for (size_t k = c * kChunkSlots, e = std::min(cap, k + kChunkSlots); k < e; ++k) {
            if (!used(k)) continue;
            uint64_t sum = 0;
            for (const AggView& t : tables) sum += t.slots[k].value;
            *out++ = {k, sum};
        }
    });
    for (const KeySum& ks : r.sums) r.total += ks.sum;
    return r;
}

// General path: gather every (key, value) of every table, sort by key, sum equal neighbours.
AggResult merge_sorted(std::span<const AggView> tables, bool parallel) {
    std::vector<Chunk> chunks;
    for (const AggView& t : tables)
        for (size_t b = 0; b < t.slots.size(); b += kChunkSlots)
            chunks.push_back({&t, b, std::min(t.slots.size(), b + kChunkSlots)});
    auto for_each_used = [](const Chunk& c, auto&& f) {
        const bool direct = c.table->mode == IndexMode::direct;
        for (size_t i = c.begin; i < c.end; ++i) {
            const AggSlot& s = c.table->slots[i];
            if (s.key != 0) f(KeySum{direct ? uint64_t(i) : s.key, s.value});
        }
    };
    std::vector<size_t> offsets(chunks.size());
    for_each_index(chunks.size(), parallel, [&](size_t c) {
        size_t n = 0;
        for_each_used(chunks[c], [&n](const KeySum&) { ++n; });
        offsets[c] = n;
    });
    std::vector<KeySum> all(exclusive_scan(offsets));
    for_each_index(chunks.size(), parallel, [&](size_t c) {
        KeySum* out = all.data() + offsets[c];
        for_each_used(chunks[c], [&out](const KeySum& ks) { *out++ = ks; });
    });
    for (const AggView& t : tables)
        if (t.mode == IndexMode::hash && t.zero_used) all.push_back({0, t.zero_value});

    auto by_key = [](const KeySum& a, const KeySum& b) { return a.key < b.key; };
    if (parallel)
        tbb::parallel_sort(all.begin(), all.end(), by_key);
    else
        std::sort(all.begin(), all.end(), by_key);

    AggResult r;
    size_t w = 0;
    for (size_t i = 0; i < all.size(); ++i) {
        r.total += all[i].sum;
        if (w > 0 && all[w - 1].key == all[i].key)
            all[w - 1].sum += all[i].sum;
        else
            all[w++] = all[i];
    }
    all.resize(w);
    r.sums = std::move(all);
    return r;
}

}  // namespace

AggResult merge_tables(std::span<const AggView> tables, bool parallel) {
    if (tables.empty()) return {};
    const bool same_direct = std::all_of(tables.begin(), tables.end(), [&](const AggView& t) {
        return t.mode == IndexMode::direct && t.slots.size() == tables.front().slots.size();
    });
    return same_direct ? merge_direct(tables, parallel) : merge_sorted(tables, parallel);
}

std::vector<AggSlot> sum_per_key(std::vector<AggSlot> slots) {
    std::sort(slots.begin(), slots.end(),
              [](const AggSlot& a, const AggSlot& b) { return a.key < b.key; });
    std::vector<AggSlot> sums;
    for (const AggSlot& s : slots) {
        if (!sums.empty() && sums.back().key == s.key)
            sums.back().value += s.value;
        else
            sums.push_back(s);
    }
    return sums;
}

}  // namespace linerate::kvagg
