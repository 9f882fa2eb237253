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
    overflow_sum += o.overflow_sum;
    return *this;
}

namespace {

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
KvVerdict KvKernel<Table>::aggregate_frame(const uint8_t* frame, size_t len) {
    const KvPacket p = parse_kv_packet(frame, len, cfg_.udp_port);
    KvVerdict v = p.verdict;
    if (v == KvVerdict::ok) v = seq_verdict(dup_.check(p.stream, p.seq));
    ++counters_.by_verdict[size_t(v)];
    if (v != KvVerdict::ok) return v;

    // Rolling prefetch: the slot of tuple i + ahead is requested while tuple i is added, so
    // misses overlap instead of queueing one by one.
    const size_t n = p.tuple_count;
    const size_t ahead = std::min<size_t>(cfg_.prefetch_ahead, n);
    for (size_t i = 0; i < ahead; ++i) table_.prefetch(kv_tuple_key(p.tuples, i));
    uint64_t added = 0, refused = 0, refused_sum = 0;
    for (size_t i = 0; i < n; ++i) {
        if (ahead && i + ahead < n) table_.prefetch(kv_tuple_key(p.tuples, i + ahead));
        const uint64_t key = kv_tuple_key(p.tuples, i);
        const uint64_t value = kv_tuple_value(p.tuples, i);
        if (table_.add(key, value)) {
            ++added;
        } else {
            ++refused;
            refused_sum += value;
        }
    }
    counters_.tuples_aggregated += added;
    counters_.by_verdict[size_t(KvVerdict::table_full)] += refused;
    counters_.overflow_sum += refused_sum;
    return v;
}

template class KvKernel<AggTable>;
template class KvKernel<SharedAggTable>;

}  // namespace linerate::kvagg
