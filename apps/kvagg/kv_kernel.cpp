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
    udp_checksum_offloaded += o.udp_checksum_offloaded;
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
template <IndexMode kMode, bool kPrefetch>
size_t KvKernel<Table>::TupleCursor::take(const AggHomes& homes, StagedTuple* out, size_t max) {
    // Locals, stored back once: a store through `out` may alias the members, which would then
    // be reloaded and stored for every frame.
    const TupleRange* range = range_;
    const TupleRange* const ranges_end = ranges_end_;
    const uint8_t* p = p_;
    const uint8_t* end = end_;
    size_t n = 0;
    while (n < max) {
        if (p == end) {
            if (range == ranges_end) break;
            p = range->tuples;
            end = p + range->count * kKvTupleLen;
            ++range;
            continue;
        }
        const size_t k = std::min(max - n, size_t(end - p) / kKvTupleLen);
        const uint8_t* const next = p + k * kKvTupleLen;
        // The frame's later lines, a few ahead of the tuples taken now (frames of more than
        // kTupleLinesAhead lines of tuples; aggregate_burst() asked for the first ones).
        const uint8_t* const lines_end = std::min(end, next + kTupleLinesAhead * 64);
        for (const uint8_t* q = p + kTupleLinesAhead * 64; q < lines_end; q += 64)
            __builtin_prefetch(q);
        n += stage<kMode, kPrefetch>(homes, {p, k}, out + n);
        p = next;
    }
    range_ = range;
    p_ = p;
    end_ = end;
    return n;
}

template <class Table>
template <IndexMode kMode, bool kPrefetch>
size_t KvKernel<Table>::TupleCursor::stage(const AggHomes& homes, TupleRange r, StagedTuple* out) {
    // Locals only: a store through `out` may alias any member, which would then be reloaded.
    const AggHomes h = homes;
    const uint8_t* p = r.tuples;
    for (StagedTuple* t = out; t != out + r.count; ++t, p += kKvTupleLen) {
        const uint64_t key = pkt::load_be64(p);
        AggSlot* const home = h.template home<kMode>(key);
        if constexpr (kPrefetch) __builtin_prefetch(home, 1, 3);
        *t = {key, pkt::load_be64(p + 8), home};
    }
    return r.count;
}

template <class Table>
typename KvKernel<Table>::Admitted KvKernel<Table>::admit(const FrameRef& frame) {
    const KvPacket p = parse_kv_packet(frame.data, frame.len, cfg_.udp_port,
                                       {cfg_.verify_checksums, frame.port, !cfg_.strict_checksums});
    counters_.udp_checksum_offloaded += p.udp_checksum_offloaded;
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
    // Software pipelining by blocks, across the ranges: decode, hash and prefetch the homes of
    // the next block of tuples, then add the block before it, whose lines have been on their way
    // for a block's time, so the misses overlap instead of queueing one by one. Two short loops
    // with few live values (19 and 20 instructions a tuple on x86-64): one loop doing both kept
    // a ring and a look-ahead cursor alive, spilled, and cost about 1.4x the instructions.
    const AggHomes homes = table_.homes();
    const size_t block =
        kLookAhead ? std::min<size_t>(cfg_.prefetch_ahead, kMaxPrefetchAhead) : kMaxPrefetchAhead;
    StagedTuple buf[2][kMaxPrefetchAhead];
    TupleCursor cursor(ranges);
    AddSums sums;
    if constexpr (kLookAhead) {
        size_t n = cursor.template take<kMode, true>(homes, buf[0], block);
        for (unsigned b = 0; n != 0; b ^= 1) {
            const size_t next = cursor.template take<kMode, true>(homes, buf[b ^ 1], block);
            sums += add_staged<kMode>({buf[b], n});
            n = next;
        }
    } else {
        while (const size_t n = cursor.template take<kMode, false>(homes, buf[0], block))
            sums += add_staged<kMode>({buf[0], n});
    }
    counters_.tuples_aggregated += sums.tuples - sums.refused;
    counters_.value_sum += sums.sum - sums.refused_sum;
    counters_.by_verdict[size_t(KvVerdict::table_full)] += sums.refused;
    counters_.overflow_sum += sums.refused_sum;
}

template <class Table>
template <IndexMode kMode>
typename KvKernel<Table>::AddSums KvKernel<Table>::add_staged(std::span<const StagedTuple> block) {
    // A refusal is rare, so only it pays a branch with bookkeeping.
    Table& table = table_;
    uint64_t refused = 0, sum = 0, refused_sum = 0;  // locals: slot stores may alias memory
    for (const StagedTuple& t : block) {
        sum += t.value;
        if (!table.template add_at<kMode>(t.home, t.key, t.value)) [[unlikely]] {
            ++refused;
            refused_sum += t.value;
        }
    }
    return {block.size(), refused, sum, refused_sum};
}

template <class Table>
KvVerdict KvKernel<Table>::aggregate_frame(const uint8_t* frame, size_t len,
                                           pkt::RxChecksums port) {
    const Admitted a = admit({frame, len, port});
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
            const Admitted a = admit(frames[i]);
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
