#pragma once
// The kvagg packet kernel: parse -> duplicate check -> table adds (with prefetch), one instance
// per worker, plain counters. Templated on the table type (AggTable per worker, or
// SharedAggTable for --agg shared) so the tuple loop has no indirect calls.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "linerate/message_auth.hpp"
#include "pkt/address.hpp"

#include "kvagg/agg_table.hpp"
#include "kvagg/dup_window.hpp"
#include "kvagg/kv_wire.hpp"
#include "kvagg/shared_agg_table.hpp"

namespace linerate::kvagg {

// Per-worker counters, written by one thread only. Units:
//   by_verdict[v]           packets, for every v except table_full
//   by_verdict[table_full]  TUPLES refused by the table (their packets count as ok)
// so sum of the packet-unit entries == frames given to aggregate_frame.
struct alignas(64) KvCounters {
    std::array<uint64_t, kKvVerdictCount> by_verdict{};
    uint64_t tuples_aggregated = 0;
    uint64_t value_sum = 0;     // wrapping sum of the aggregated tuples' values
    uint64_t overflow_sum = 0;  // wrapping sum of the refused tuples' values
    // Accepted packets whose UDP checksum the sender left to TX offload (pkt::checksum.hpp).
    uint64_t udp_checksum_offloaded = 0;

    uint64_t packets() const;  // all frames seen
    uint64_t packets_ok() const { return by_verdict[size_t(KvVerdict::ok)]; }
    uint64_t tuples_overflowed() const { return by_verdict[size_t(KvVerdict::table_full)]; }
    uint64_t operator[](KvVerdict v) const { return by_verdict[size_t(v)]; }
    KvCounters& operator+=(const KvCounters& o);
};

struct KvKernelConfig {
    uint16_t udp_port = kKvDefaultPort;
    uint64_t dup_window = DupFilter::kDefaultWindow;  // 0 = no duplicate detection
    uint32_t max_streams = DupFilter::kDefaultMaxStreams;
    // Tuples per look-ahead block (0 = no prefetch, at most kMaxPrefetchAhead): a tuple's home
    // is prefetched a block before its add, across the frames of a burst.
    unsigned prefetch_ahead = 32;
    bool verify_checksums = true;   // IPv4 header and UDP checksums (--no-verify-checksums)
    bool strict_checksums = false;  // a UDP checksum left to TX offload is bad (--strict-checksums)
    ListenAddrs listen;             // --listen-ip: the destinations served (none: every one)
    // --key: every datagram (sum or request) needs a valid trailer, else bad_auth.
    std::optional<auth::Key> key;
    // --allow: the sources served (sum datagrams without --key, requests without a valid MAC
    // are not_allowed from others); empty: none listed.
    pkt::Ipv4AllowList allow;
};

inline constexpr unsigned kMaxPrefetchAhead = 256;

// One received frame: its bytes stay valid until aggregate_burst() returns.
struct FrameRef {
    const uint8_t* data;
    size_t len;
    pkt::RxChecksums port{};  // the port's checksum verdicts (unknown: verified in software)
};

template <class Table>
class KvKernel {
  public:
    using Writer = typename Table::Writer;
    // The table is not owned (the app places it in the --aggbuf region). writer: this kernel's
    // column of the shared table (its worker's index; a per-worker table has one writer).
    KvKernel(Table& table, const KvKernelConfig& cfg, unsigned writer = 0)
        : table_(table),
          writer_(table.writer(writer)),
          dup_(cfg.dup_window, cfg.max_streams),
          cfg_(cfg) {
        if (cfg.key) mac_.emplace(*cfg.key);
    }

    // Aggregates one frame; returns the packet's verdict (ok even if some tuples were refused:
    // those are counted in tuple units as table_full).
    KvVerdict aggregate_frame(const uint8_t* frame, size_t len, pkt::RxChecksums port = {});

    // The same for a burst, with the same result as aggregate_frame() on each frame in order:
    // every frame is parsed and checked first, then the tuples of the accepted ones are added
    // as one stream, so the slot look-ahead does not stall at every frame boundary (a restart
    // per 32-tuple frame lost 40 % of the rate).
    void aggregate_burst(std::span<const FrameRef> frames);

    // Who may ask (docs/kvagg.md "Who is served"): request when the request in `frame` may be
    // answered, else bad_auth (--key: its MAC does not verify) or not_allowed (its source is
    // outside --allow, or neither --key nor --allow was given). The worker's thread (its MAC).
    KvVerdict request_gate(const uint8_t* frame, const KvRequest& r);

    const KvCounters& counters() const { return counters_; }
    const KvKernelConfig& config() const { return cfg_; }
    const DupFilter& dup_filter() const { return dup_; }
    DupFilter& dup_filter() { return dup_; }  // --state restores it before the workers run
    Table& table() { return table_; }

  private:
    struct TupleRange {
        const uint8_t* tuples;  // big-endian, 16 bytes each
        size_t count;
    };
    struct Admitted {
        KvVerdict verdict;
        TupleRange tuples;
    };
    static constexpr size_t kChunk = 64;  // frames admitted before their tuples are added
    // Frames of up to this many tuples (one line of them) are staged as they are admitted: the
    // homes are requested a chunk before the adds, and a look-ahead cursor per frame costs
    // more than the frame's own tuples (at 1 tuple per packet, twice the staging itself).
    static constexpr size_t kStageMaxTuples = 4;
    static constexpr size_t kStagedMax = 2 * kChunk;  // tuples staged per chunk at most
    static_assert(kStagedMax >= kChunk, "a chunk of one-tuple frames is staged whole");

    // A tuple between its look-ahead and its add: decoded, its home computed (and prefetched).
    struct StagedTuple {
        uint64_t key;
        uint64_t value;
        AggSlot* home;
    };
    // The look-ahead's place in a burst's tuple ranges.
    class TupleCursor {
      public:
        explicit TupleCursor(std::span<const TupleRange> r)
            : range_(r.data()), ranges_end_(r.data() + r.size()) {}
        // Stages the next tuples, at most `max`; returns how many (0: none left).
        template <IndexMode kMode, bool kPrefetch, class W>
        size_t take(const AggHomes& homes, const W& writer, StagedTuple* out, size_t max);

      private:
        const TupleRange* range_;
        const TupleRange* ranges_end_;
        const uint8_t* p_ = nullptr;
        const uint8_t* end_ = nullptr;
    };
    // What a block of adds leaves for the counters.
    struct AddSums {
        uint64_t tuples = 0, refused = 0, sum = 0, refused_sum = 0;
        AddSums& operator+=(const AddSums& o) {
            tuples += o.tuples;
            refused += o.refused;
            sum += o.sum;
            refused_sum += o.refused_sum;
            return *this;
        }
    };

    // The bits of the gate's template argument: which checks a sum datagram passes before the
    // duplicate window sees its seq (none: the loop as before --key and --allow existed).
    static constexpr unsigned kGateAllow = 1;  // --allow: its source
    static constexpr unsigned kGateKey = 2;    // --key: its trailer
    unsigned gate() const { return (cfg_.allow.empty() ? 0 : kGateAllow) | (mac_ ? kGateKey : 0); }
    // The checksum checks of a frame. With a key the MAC covers every byte of the UDP payload, a
    // stronger check than the UDP checksum, which is then not computed (as RFC 3948 has it for
    // ESP in UDP; the IPv4 header checksum still covers the addresses): at 32 tuples a datagram
    // it cost as much as the MAC. (admit_chunk() writes the same with its locals.)
    pkt::ChecksumCheck checksum_check(pkt::RxChecksums port, bool keyed) const {
        if (keyed) port.l4 = pkt::RxCheck::good;
        return {cfg_.verify_checksums, port, !cfg_.strict_checksums};
    }
    // A parsed sum datagram's verdict after the gate's checks (v: the parser's).
    template <unsigned kGate>
    KvVerdict gated(KvVerdict v, const KvPacket& p, const FrameRef& frame);
    // A parsed packet's verdict once the duplicate window has seen it (records it if new).
    KvVerdict window_verdict(KvVerdict v, const KvPacket& p) {
        if (v != KvVerdict::ok) return v;
        switch (dup_.check(p.stream, p.seq)) {
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
    // Parse and duplicate check; counts the verdict.
    Admitted admit(const FrameRef& frame);
    // What admit_chunk() leaves for the adds: the tuples it staged (first, in frame order),
    // then the ranges of the frames after them.
    struct ChunkWork {
        size_t staged = 0, ranges = 0;
    };
    // What admit_one_tuple_frames() judged: the first `frames` of the chunk, `staged` of them
    // accepted (their tuple staged, one each), the others counted by the duplicate window.
    struct OneTupleRun {
        size_t frames = 0, staged = 0;
    };
    // The frames of the one-tuple shape (KvOneTupleShape) from the chunk's start, each judged
    // without the canonical parse: the shape's four words, the IPv4 header sum (unless the port
    // found both checksums good), the window, its tuple staged. Stops at the first other frame,
    // or one whose sum fails: admit_chunk()'s loop judges it and the rest, as before.
    // (No gate: with --key or --allow every frame takes admit_chunk()'s loop.)
    // Not inlined: inside admit_chunk() it made GCC call the canonical parse and the checksum
    // test out of line in admit_chunk()'s own loop (32 tuples: 150 instructions a packet more).
    template <IndexMode kMode, bool kPrefetch, bool kListen, class W>
    [[gnu::noinline]] OneTupleRun admit_one_tuple_frames(std::span<const FrameRef> frames,
                                                         StagedTuple* staged);
    // The same with the checksum test (kVerify: --no-verify-checksums not given) and the
    // duplicate window (kWindow: on) known.
    template <IndexMode kMode, bool kPrefetch, bool kListen, bool kVerify, bool kWindow, class W>
    OneTupleRun admit_one_tuple_frames_as(std::span<const FrameRef> frames, StagedTuple* staged);
    // admit() for each of `frames` (at most kChunk). The tuples of accepted frames of at most
    // kStageMaxTuples go to `staged` (decoded, homes hashed and requested) while it has room
    // and no range was recorded; the tuples of later frames go to `ranges`, their first lines
    // requested, for the look-ahead of add_tuples().
    // kListen: --listen-ip given (frames to other addresses are other_address); kGate: gate().
    // Not inlined, as GCC chose before W existed: inlined, 1.3 instructions a packet more.
    template <IndexMode kMode, bool kPrefetch, bool kListen, unsigned kGate, class W>
    [[gnu::noinline]] ChunkWork admit_chunk(std::span<const FrameRef> frames, StagedTuple* staged,
                                            TupleRange* ranges, W writer);
    template <bool kListen, unsigned kGate>
    void aggregate_burst_as(std::span<const FrameRef> frames);
    template <bool kListen>
    void aggregate_burst_gated(std::span<const FrameRef> frames);
    template <IndexMode kMode, bool kPrefetch, bool kListen, unsigned kGate, class W>
    void aggregate_burst_impl(std::span<const FrameRef> frames, W writer);
    // Adds what a block of adds leaves to the counters.
    void count_adds(const AddSums& sums);
    // Adds the tuples of accepted frames in blocks of `prefetch_ahead`, each key hashed once and
    // its home prefetched a block before its add.
    template <class W>
    void add_tuples(std::span<const TupleRange> ranges, W writer);
    template <bool kLookAhead, IndexMode kMode, class W>
    void add_tuples_impl(std::span<const TupleRange> ranges, W writer);
    template <IndexMode kMode, class W>
    AddSums add_staged(std::span<const StagedTuple> block, W writer);

    Table& table_;
    // Where this worker's sums are. The adds and prefetches take it as the kind
    // Table::visit_writer() names (W in the functions above), chosen once a burst.
    Writer writer_;
    DupFilter dup_;
    KvKernelConfig cfg_;
    KvCounters counters_;
    std::optional<auth::MessageMac> mac_;  // --key: this worker's (an OpenSSL context each)
};

extern template class KvKernel<AggTable>;
extern template class KvKernel<SharedAggTable>;

}  // namespace linerate::kvagg
