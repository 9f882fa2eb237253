#include "kvagg/kv_kernel.hpp"

#include <algorithm>

namespace linerate::kvagg {

uint64_t KvCounters::packets() const {
    uint64_t n = 0;
    for (size_t v = 0; v < kKvVerdictCount; ++v)
        if (v != size_t(KvVerdict::table_full)) n += by_verdict[v];
    return n;
}

KvCounters& KvCounters::operator+=(const KvCounters& o) {
    for (size_t v = 0; v < kKvVerdictCount; ++v) by_verdict[v] += o.by_verdict[v];
    tuples_aggregated += o.tuples_aggregated;
    value_sum += o.value_sum;
    overflow_sum += o.overflow_sum;
    return *this;
}

namespace {

// Cache lines of a frame's tuples requested ahead of the look-ahead cursor.
constexpr size_t kTupleLinesAhead = 8;

KvVerdict seq_verdict(SeqVerdict s) {
    switch (s) {
        case SeqVerdict::accept:
            return KvVerdict::ok;
        case SeqVerdict::duplicate:
            return KvVerdict::duplicate;
        case SeqVerdict::stale:
            return KvVerdict::stale;
        case SeqVerdict::too_many_streams:
            break;
    }
    return KvVerdict::too_many_streams;
}

}  // namespace

template <class Table>
typename KvKernel<Table>::Admitted KvKernel<Table>::admit(const uint8_t* frame, size_t len) {
    const KvPacket p = parse_kv_packet(frame, len, cfg_.udp_port);
    KvVerdict v = p.verdict;
    if (v == KvVerdict::ok) v = seq_verdict(dup_.check(p.stream, p.seq));
    ++counters_.by_verdict[size_t(v)];
    return {v, {p.tuples, v == KvVerdict::ok ? p.tuple_count : size_t(0)}};
}

template <class Table>
void KvKernel<Table>::add_tuples(std::span<const TupleRange> ranges) {
    const bool hash = table_.mode() == IndexMode::hash;
    if (cfg_.prefetch_ahead == 0)
        hash ? add_tuples_impl<false, IndexMode::hash>(ranges)
             : add_tuples_impl<false, IndexMode::direct>(ranges);
    else
        hash ? add_tuples_impl<true, IndexMode::hash>(ranges)
             : add_tuples_impl<true, IndexMode::direct>(ranges);
}

template <class Table>
template <bool kLookAhead, IndexMode kMode>
void KvKernel<Table>::add_tuples_impl(std::span<const TupleRange> ranges) {
    // A look-ahead cursor runs `ahead` tuples in front of the adds, across the ranges: it hashes
    // a key, prefetches its slot and parks the hint in a ring until the add reaches it, so the
    // misses overlap instead of queueing one by one. Plain pointers, few live values, the index
    // mode fixed at compile time: this loop is most of kvagg's time.
    Table& table = table_;
    const size_t ahead = std::min<size_t>(cfg_.prefetch_ahead, kMaxPrefetchAhead);
    constexpr size_t kMask = kMaxPrefetchAhead - 1;
    size_t ring[kMaxPrefetchAhead];
    const TupleRange* next_range = ranges.data();
    const TupleRange* const ranges_end = next_range + ranges.size();
    const uint8_t* ap = nullptr;
    const uint8_t* aend = nullptr;
    auto look_ahead = [&](size_t g) {
        while (ap == aend) {
            if (next_range == ranges_end) return;
            ap = next_range->tuples;
            aend = ap + next_range->count * kKvTupleLen;
            ++next_range;
        }
        const size_t hint = table.template slot_hint<kMode>(pkt::load_be64(ap));
        ap += kKvTupleLen;
        // The frame's own lines, a few ahead of this cursor.
        if ((reinterpret_cast<uintptr_t>(ap) & 63) == 0 && ap + kTupleLinesAhead * 64 < aend)
            __builtin_prefetch(ap + kTupleLinesAhead * 64);
        table.prefetch_hint(hint);
        ring[g & kMask] = hint;
    };
    if constexpr (kLookAhead)
        for (size_t g = 0; g < ahead; ++g) look_ahead(g);

    // Sums of every tuple and of the refused ones: a refusal is rare, so only it pays a branch
    // with bookkeeping.
    uint64_t tuples = 0, refused = 0, sum = 0, refused_sum = 0;
    size_t g = 0;
    for (const TupleRange& r : ranges) {
        tuples += r.count;
        const uint8_t* const end = r.tuples + r.count * kKvTupleLen;
        for (const uint8_t* p = r.tuples; p != end; p += kKvTupleLen, ++g) {
            const uint64_t key = pkt::load_be64(p);
            const uint64_t value = pkt::load_be64(p + 8);
            size_t hint;
            if constexpr (kLookAhead) {
                hint = ring[g & kMask];  // read before look_ahead may reuse the entry
                look_ahead(g + ahead);
            } else {
                hint = table.template slot_hint<kMode>(key);
            }
            sum += value;
            if (!table.template add_at<kMode>(hint, key, value)) [[unlikely]] {
                ++refused;
                refused_sum += value;
            }
        }
    }
    counters_.tuples_aggregated += tuples - refused;
    counters_.value_sum += sum - refused_sum;
    counters_.by_verdict[size_t(KvVerdict::table_full)] += refused;
    counters_.overflow_sum += refused_sum;
}

template <class Table>
KvVerdict KvKernel<Table>::aggregate_frame(const uint8_t* frame, size_t len) {
    const Admitted a = admit(frame, len);
    if (a.tuples.count) add_tuples({&a.tuples, 1});
    return a.verdict;
}

template <class Table>
void KvKernel<Table>::aggregate_burst(std::span<const FrameRef> frames) {
    TupleRange ranges[kChunk];
    for (size_t base = 0; base < frames.size(); base += kChunk) {
        const size_t end = std::min(frames.size(), base + kChunk);
        size_t n = 0;
        for (size_t i = base; i < end; ++i) {
            if (i + 2 < end) __builtin_prefetch(frames[i + 2].data);  // the next headers
            const Admitted a = admit(frames[i].data, frames[i].len);
            if (a.tuples.count) {
                ranges[n++] = a.tuples;
                // Its first tuple lines: the look-ahead reads them soon.
                const size_t bytes = a.tuples.count * kKvTupleLen;
                for (size_t off = 0; off < bytes && off < kTupleLinesAhead * 64; off += 64)
                    __builtin_prefetch(a.tuples.tuples + off);
            }
        }
        add_tuples({ranges, n});
    }
}

template class KvKernel<AggTable>;
template class KvKernel<SharedAggTable>;

}  // namespace linerate::kvagg
