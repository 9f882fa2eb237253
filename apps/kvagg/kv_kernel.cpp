#include "kvagg/kv_kernel.hpp"

#include <algorithm>
#include <bit>

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

// The port's checksum words for a frame as one, and that word when it found both good.
static_assert(sizeof(pkt::RxChecksums) == sizeof(uint16_t));
constexpr uint16_t kPortBothGood =
    std::bit_cast<uint16_t>(pkt::RxChecksums{pkt::RxCheck::good, pkt::RxCheck::good});

void prefetch_lines(const uint8_t* from, const uint8_t* to) {
    for (const uint8_t* q = from; q < to; q += 64) __builtin_prefetch(q);
}

}  // namespace

template <class Table>
template <IndexMode kMode, bool kPrefetch, class W>
size_t KvKernel<Table>::TupleCursor::take(const AggHomes& homes, const W& writer, StagedTuple* out,
                                          size_t max) {
    // Locals, stored back once: a store through `out` may alias the members (and `homes`),
    // which would then be reloaded and stored for every frame.
    const AggHomes h = homes;
    const W w = writer;
    const TupleRange* range = range_;
    const TupleRange* const ranges_end = ranges_end_;
    const uint8_t* p = p_;
    const uint8_t* end = end_;
    StagedTuple* t = out;
    StagedTuple* const t_end = out + max;
    while (t != t_end) {
        if (p == end) {  // the next frame (admit_chunk() records no range without tuples)
            if (range == ranges_end) break;
            p = range->tuples;
            end = p + range->count * kKvTupleLen;
            ++range;
        }
        const uint8_t* const next = std::min(end, p + size_t(t_end - t) * kKvTupleLen);
        // The frame's later lines, a few ahead of the tuples taken now, for frames of more
        // than kTupleLinesAhead lines of tuples (aggregate_burst() asked for the first ones).
        if (end - p > ptrdiff_t(kTupleLinesAhead * 64)) [[unlikely]]
            prefetch_lines(p + kTupleLinesAhead * 64, std::min(end, next + kTupleLinesAhead * 64));
        for (; p != next; p += kKvTupleLen, ++t) {
            const uint64_t key = pkt::load_be64(p);
            AggSlot* const home = h.template home<kMode>(key);
            if constexpr (kPrefetch) w.prefetch(home);
            *t = {key, pkt::load_be64(p + 8), home};
        }
    }
    range_ = range;
    p_ = p;
    end_ = end;
    return size_t(t - out);
}

template <class Table>
template <unsigned kGate>
KvVerdict KvKernel<Table>::gated(KvVerdict v, const KvPacket& p, const FrameRef& frame) {
    if constexpr (kGate != 0) {
        if (v != KvVerdict::ok) return v;
        if constexpr ((kGate & kGateAllow) != 0)
            if (!cfg_.allow.contains(kv_frame_source(frame.data, frame.len)))
                return KvVerdict::not_allowed;
        if constexpr ((kGate & kGateKey) != 0) {
            // The payload's length from the UDP header the parser checked; nothing of the
            // datagram is used before its trailer verifies.
            const uint8_t* app = p.tuples - kKvHeaderLen;
            const size_t app_len = pkt::load_be16(app - 4) - pkt::kUdpHdrLen;
            if (!mac_->verify(app, app_len)) return KvVerdict::bad_auth;
            if (app_len < kKvHeaderLen + auth::kTrailerLen + size_t(p.tuple_count) * kKvTupleLen)
                return KvVerdict::malformed;  // its tuples run into the trailer
        }
    }
    return v;
}

template <class Table>
KvVerdict KvKernel<Table>::request_gate(const uint8_t* frame, const KvRequest& r) {
    if (!cfg_.allow.empty() && !cfg_.allow.contains(kv_request_source(frame, r)))
        return KvVerdict::not_allowed;
    if (mac_)
        return mac_->verify(frame + r.app_offset, r.app_len) ? KvVerdict::request
                                                             : KvVerdict::bad_auth;
    return cfg_.allow.empty() ? KvVerdict::not_allowed : KvVerdict::request;
}

template <class Table>
typename KvKernel<Table>::Admitted KvKernel<Table>::admit(const FrameRef& frame) {
    const KvPacket p =
        parse_kv_packet(frame.data, frame.len, cfg_.udp_port,
                        checksum_check(frame.port, (gate() & kGateKey) != 0), cfg_.listen);
    counters_.udp_checksum_offloaded += p.udp_checksum_offloaded;
    KvVerdict v = p.verdict;
    switch (gate()) {
        case kGateAllow:
            v = gated<kGateAllow>(v, p, frame);
            break;
        case kGateKey:
            v = gated<kGateKey>(v, p, frame);
            break;
        case kGateAllow | kGateKey:
            v = gated<kGateAllow | kGateKey>(v, p, frame);
            break;
    }
    v = window_verdict(v, p);
    ++counters_.by_verdict[size_t(v)];
    return {v, {p.tuples, v == KvVerdict::ok ? p.tuple_count : size_t(0)}};
}

template <class Table>
template <class W>
void KvKernel<Table>::add_tuples(std::span<const TupleRange> ranges, W writer) {
    const bool hash = table_.mode() == IndexMode::hash;
    if (cfg_.prefetch_ahead == 0)
        hash ? add_tuples_impl<false, IndexMode::hash>(ranges, writer)
             : add_tuples_impl<false, IndexMode::direct>(ranges, writer);
    else
        hash ? add_tuples_impl<true, IndexMode::hash>(ranges, writer)
             : add_tuples_impl<true, IndexMode::direct>(ranges, writer);
}

template <class Table>
template <bool kLookAhead, IndexMode kMode, class W>
void KvKernel<Table>::add_tuples_impl(std::span<const TupleRange> ranges, W writer) {
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
        size_t n = cursor.template take<kMode, true>(homes, writer, buf[0], block);
        for (unsigned b = 0; n != 0; b ^= 1) {
            const size_t next = cursor.template take<kMode, true>(homes, writer, buf[b ^ 1], block);
            sums += add_staged<kMode>({buf[b], n}, writer);
            n = next;
        }
    } else {
        while (const size_t n = cursor.template take<kMode, false>(homes, writer, buf[0], block))
            sums += add_staged<kMode>({buf[0], n}, writer);
    }
    count_adds(sums);
}

template <class Table>
void KvKernel<Table>::count_adds(const AddSums& sums) {
    counters_.tuples_aggregated += sums.tuples - sums.refused;
    counters_.value_sum += sums.sum - sums.refused_sum;
    counters_.by_verdict[size_t(KvVerdict::table_full)] += sums.refused;
    counters_.overflow_sum += sums.refused_sum;
}

template <class Table>
template <IndexMode kMode, class W>
typename KvKernel<Table>::AddSums KvKernel<Table>::add_staged(std::span<const StagedTuple> block,
                                                              W writer) {
    // A refusal is rare, so only it pays a branch with bookkeeping.
    Table& table = table_;
    uint64_t refused = 0, sum = 0, refused_sum = 0;  // locals: slot stores may alias memory
    for (const StagedTuple& t : block) {
        sum += t.value;
        if (!table.template add_at<kMode>(t.home, t.key, t.value, writer)) [[unlikely]] {
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
    if (a.tuples.count)
        Table::visit_writer(writer_, [&](auto writer) { add_tuples({&a.tuples, 1}, writer); });
    return a.verdict;
}

template <class Table>
template <IndexMode kMode, bool kPrefetch, bool kListen, class W>
typename KvKernel<Table>::OneTupleRun KvKernel<Table>::admit_one_tuple_frames(
    std::span<const FrameRef> frames, StagedTuple* staged) {
    // The checksum test and the window as template arguments: in registers they left the
    // loop's own values to the stack (callgrind: 6 instructions a frame).
    const bool window = dup_.window() != 0;
    if (cfg_.verify_checksums)
        return window ? admit_one_tuple_frames_as<kMode, kPrefetch, kListen, true, true, W>(frames,
                                                                                            staged)
                      : admit_one_tuple_frames_as<kMode, kPrefetch, kListen, true, false, W>(
                            frames, staged);
    return window ? admit_one_tuple_frames_as<kMode, kPrefetch, kListen, false, true, W>(frames,
                                                                                         staged)
                  : admit_one_tuple_frames_as<kMode, kPrefetch, kListen, false, false, W>(frames,
                                                                                          staged);
}

template <class Table>
template <IndexMode kMode, bool kPrefetch, bool kListen, bool kVerify, bool kWindow, class W>
typename KvKernel<Table>::OneTupleRun KvKernel<Table>::admit_one_tuple_frames_as(
    std::span<const FrameRef> frames, StagedTuple* staged) {
    const KvOneTupleShape shape(cfg_.udp_port);
    const ListenAddrs& listen = cfg_.listen;
    const AggHomes homes = table_.homes();
    // W(writer_), not a parameter: with one, GCC spilled a value of the loop (1 instruction a
    // frame at 1 tuple).
    const W w(writer_);
    // Pointers, not indices: fewer live registers, no spills in the loop (callgrind).
    const FrameRef* f = frames.data();
    const FrameRef* const end = f + frames.size();
    StagedTuple* out = staged;
    for (; f != end; ++f) {
        if (end - f > 2) {  // the next headers, and their tuples
            __builtin_prefetch(f[2].data);
            __builtin_prefetch(f[2].data + kKvTuplesOffset);
        }
        if (!shape.matches(f->data, f->len)) break;
        // The UDP checksum is none (0): only the port's word against it, bad or not, is left to
        // the canonical parse. Without the port's word the IPv4 header sum is checked here.
        if constexpr (kVerify) {
            const uint16_t port = std::bit_cast<uint16_t>(f->port);
            if (port == 0) {
                if (!lr_ipv4_checksum_ok(f->data + pkt::kEthHdrLen, f->data + f->len,
                                         pkt::kIpv4MinHdrLen))
                    break;
            } else if (port != kPortBothGood) {
                break;
            }
        }
        if constexpr (kListen)
            if (!listen.admits(f->data, f->len)) break;
        if constexpr (kWindow) {
            const KvVerdict v =
                window_verdict(KvVerdict::ok, kv_accepted(f->data + kKvHeaderOffset, 1));
            if (v != KvVerdict::ok) [[unlikely]] {
                ++counters_.by_verdict[size_t(v)];
                continue;
            }
        }
        const uint8_t* const tuple = f->data + kKvTuplesOffset;
        const uint64_t key = pkt::load_be64(tuple);
        AggSlot* const home = homes.template home<kMode>(key);
        if constexpr (kPrefetch) w.prefetch(home);
        *out++ = {key, pkt::load_be64(tuple + 8), home};
    }
    return {size_t(f - frames.data()), size_t(out - staged)};
}

template <class Table>
template <IndexMode kMode, bool kPrefetch, bool kListen, unsigned kGate, class W>
typename KvKernel<Table>::ChunkWork KvKernel<Table>::admit_chunk(std::span<const FrameRef> frames,
                                                                 StagedTuple* staged,
                                                                 TupleRange* ranges, W writer) {
    // admit() unrolled over the chunk with the config, homes and counts in locals: through the
    // members they were reloaded and stored for every frame (a counter store may alias them).
    const uint16_t udp_port = cfg_.udp_port;
    const bool verify = cfg_.verify_checksums, accept_offloaded = !cfg_.strict_checksums;
    const ListenAddrs listen = cfg_.listen;
    const AggHomes homes = table_.homes();
    // --dup-window 0: the window is not asked (a call GCC keeps out of line, 11 instructions a
    // frame at 1 tuple a datagram, for a feature that is off).
    const bool window_on = dup_.window() != 0;
    const size_t k = frames.size();
    ChunkWork w;
    uint64_t ok = 0, offloaded = 0;
    size_t i = 0;
    if constexpr (kGate == 0) {
        const OneTupleRun run =
            admit_one_tuple_frames<kMode, kPrefetch, kListen, W>(frames, staged);
        i = run.frames;
        w.staged = ok = run.staged;
    }
    for (; i < k; ++i) {
        if (i + 2 < k) {  // the next headers, and their first tuples
            __builtin_prefetch(frames[i + 2].data);
            __builtin_prefetch(frames[i + 2].data + kKvTuplesOffset);
        }
        pkt::ChecksumCheck checks{verify, frames[i].port, accept_offloaded};
        if constexpr ((kGate & kGateKey) != 0) checks.port.l4 = pkt::RxCheck::good;  // the MAC
        KvPacket p;
        if constexpr (kListen)
            p = parse_kv_packet(frames[i].data, frames[i].len, udp_port, checks, listen);
        else  // no --listen-ip: not a compare more than before it existed (bench/run builds)
            p = parse_kv_packet(frames[i].data, frames[i].len, udp_port, checks);
        offloaded += p.udp_checksum_offloaded;  // as admit(): counted before the window
        // --key, --allow: checked before the window records the seq (kGate 0: nothing here).
        const KvVerdict gated_v = gated<kGate>(p.verdict, p, frames[i]);
        const KvVerdict v = window_on ? window_verdict(gated_v, p) : gated_v;
        if (v != KvVerdict::ok) [[unlikely]] {
            ++counters_.by_verdict[size_t(v)];
            continue;
        }
        ++ok;
        const size_t n = p.tuple_count;
        if (w.ranges == 0 && n <= kStageMaxTuples && w.staged + n <= kStagedMax) [[likely]] {
            for (const uint8_t* t = p.tuples; t != p.tuples + n * kKvTupleLen; t += kKvTupleLen) {
                const uint64_t key = pkt::load_be64(t);
                AggSlot* const home = homes.template home<kMode>(key);
                if constexpr (kPrefetch) writer.prefetch(home);
                staged[w.staged++] = {key, pkt::load_be64(t + 8), home};
            }
            continue;
        }
        if (n == 0) continue;
        ranges[w.ranges++] = {p.tuples, n};
        // Its first tuple lines: the look-ahead reads them soon.
        prefetch_lines(p.tuples, p.tuples + std::min(n * kKvTupleLen, kTupleLinesAhead * 64));
    }
    counters_.by_verdict[size_t(KvVerdict::ok)] += ok;
    counters_.udp_checksum_offloaded += offloaded;
    return w;
}

template <class Table>
template <IndexMode kMode, bool kPrefetch, bool kListen, unsigned kGate, class W>
void KvKernel<Table>::aggregate_burst_impl(std::span<const FrameRef> frames, W writer) {
    StagedTuple staged[kStagedMax];
    TupleRange ranges[kChunk];
    for (size_t base = 0; base < frames.size(); base += kChunk) {
        const size_t k = std::min(kChunk, frames.size() - base);
        const ChunkWork w = admit_chunk<kMode, kPrefetch, kListen, kGate>(frames.subspan(base, k),
                                                                          staged, ranges, writer);
        // The staged tuples come first in frame order, then the ranges: the same adds in the
        // same order as frame by frame.
        if (w.staged) count_adds(add_staged<kMode>({staged, w.staged}, writer));
        if (w.ranges) add_tuples({ranges, w.ranges}, writer);
    }
}

template <class Table>
template <bool kListen, unsigned kGate>
void KvKernel<Table>::aggregate_burst_as(std::span<const FrameRef> frames) {
    const bool hash = table_.mode() == IndexMode::hash;
    const bool prefetch = cfg_.prefetch_ahead != 0;
    // The writer as the kind that says where its sums lie (the shared table's one writer: the
    // slots' value words), so that the adds' addressing is constant-folded.
    Table::visit_writer(writer_, [&](auto writer) {
        if (!prefetch)
            hash ? aggregate_burst_impl<IndexMode::hash, false, kListen, kGate>(frames, writer)
                 : aggregate_burst_impl<IndexMode::direct, false, kListen, kGate>(frames, writer);
        else
            hash ? aggregate_burst_impl<IndexMode::hash, true, kListen, kGate>(frames, writer)
                 : aggregate_burst_impl<IndexMode::direct, true, kListen, kGate>(frames, writer);
    });
}

template <class Table>
template <bool kListen>
void KvKernel<Table>::aggregate_burst_gated(std::span<const FrameRef> frames) {
    switch (gate()) {
        case 0:
            return aggregate_burst_as<kListen, 0>(frames);
        case kGateAllow:
            return aggregate_burst_as<kListen, kGateAllow>(frames);
        case kGateKey:
            return aggregate_burst_as<kListen, kGateKey>(frames);
        default:
            return aggregate_burst_as<kListen, kGateAllow | kGateKey>(frames);
    }
}

template <class Table>
void KvKernel<Table>::aggregate_burst(std::span<const FrameRef> frames) {
    // The address filter and the gate (--key, --allow) as template arguments: the loop without
    // them is the loop as it was (a per-frame filter in the one loop cost 29 % at 1 tuple a
    // packet, bench/run builds).
    cfg_.listen.count ? aggregate_burst_gated<true>(frames) : aggregate_burst_gated<false>(frames);
}

template class KvKernel<AggTable>;
template class KvKernel<SharedAggTable>;

}  // namespace linerate::kvagg
