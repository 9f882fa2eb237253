#pragma once
// The run-to-completion loop shared by the apps that send packets back out: RX a burst on each
// of the worker's queues, run the kernel on every frame (prefetching the next frames' data),
// transmit the kept ones on the same port and queue (or the paired port's, forward_mode.hpp),
// count the rest by reason, and free them or divert them to another port.
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <concepts>
#include <cstdint>
#include <optional>
#include <vector>

#include "pkt/checksum.hpp"
#include "runtime/runtime.hpp"
#include "runtime/rx_step.hpp"
#include "runtime/tx.hpp"
#include "worker/quiescence.hpp"

namespace linerate {

inline constexpr unsigned kPrefetchAhead = 3;

// Where a worker transmits the frames its kernel rejects instead of freeing them (an app's
// option for it, e.g. a --bad-port). They still count under their drop reason, so rx == tx +
// sum(drops) holds with or without a divert; two app counters of the board tell what became of
// them.
struct Divert {
    uint16_t port = 0;
    uint16_t queue = 0;         // this worker's own queue on `port`: no other lcore uses it
    unsigned sent_counter = 0;  // app counter: rejected frames transmitted on (port, queue)
    unsigned full_counter = 0;  // app counter: rejected frames that TX did not take (freed)
};

struct ForwardOptions {
    std::optional<Divert> divert;  // none: rejected frames are freed
    // Where the frames kept from each of the worker's RX queues go out (forward_tx_queues(),
    // same order as the slot's queues); empty: the queue they came in on.
    std::vector<worker::QueueRef> tx;
    // With --exception-path: frames the kernel rejects with this reason are not the app's
    // (e.g. not IPv4) and go to the host's kernel instead of being dropped.
    std::optional<unsigned> to_kernel_reason;
};

// A kernel that shortens the frames it transmits (one that trims Ethernet padding) says by how many
// bytes once per burst, so the loop reads no frame length after the kernel.
template <class Kernel>
concept TrimmingKernel = requires(Kernel& k) {
    { k.take_trimmed_bytes() } -> std::convertible_to<uint64_t>;
};

// A kernel that rejects only malformed frames (a reflector: a runt) says so with
// `static constexpr bool kRejectsRarely = true;`: the loop then leaves the frames it keeps in
// place and takes a rejected one out after the burst, which costs more than moving each kept
// frame forward as it goes once rejects are common (a header check on a trace with 10 % bad
// frames: 63.1 loop instructions a frame against 58.9, callgrind; docs/architecture.md).
template <class Kernel>
concept RejectsRarely = requires {
    requires Kernel::kRejectsRarely;
};

// Kernel: `unsigned operator()(rte_mbuf*)` returning kTransmit to send the (possibly modified)
// frame back out, or the board slot of a drop reason, stats::drop_slot(reason), leaving a frame
// it rejects unchanged.
template <class Kernel>
class ForwardLoop {
  public:
    ForwardLoop(WorkerContext& ctx, Kernel& kernel, const ForwardOptions& options)
        : ctx_(ctx),
          rx_step_(ctx),
          kernel_(kernel),
          c_(ctx.counters),
          rx_(ctx.slot.queues),
          tx_(options.tx.empty() ? ctx.slot.queues : options.tx),
          divert_(options.divert),
          to_kernel_reason_(rx_step_.exception_path() ? options.to_kernel_reason.value_or(kTransmit)
                                                      : kTransmit) {}

    void run() {
        while (worker::keep_polling()) {
            rx_step_.start_round();
            for (size_t qi = 0; qi < rx_.size(); ++qi) forward_burst(rx_[qi], tx_[qi]);
        }
    }

  private:
    // A burst's frames by the kernel's verdict: kept at the front of pkts_, dropped in drop_,
    // for the host's kernel in to_kernel_.
    struct Sorted {
        size_t keep = 0;  // an index as wide as a pointer: no zero-extension per frame
        unsigned dropped = 0, handed = 0;
        uint64_t rx_bytes = 0, drop_bytes = 0;
    };

    void forward_burst(worker::QueueRef q, worker::QueueRef out) {
        const RxBurst b = rx_step_.receive(q, pkts_, ServesAll{});
        if (b.received == 0) return;
        // The checksum test chosen per burst, not per frame (2 instructions a frame, callgrind).
        const Sorted s =
            ctx_.may_carry_unfinished_checksums(q.port) ? sort<true>(b.kept) : sort<false>(b.kept);
        // What is kept is what came in minus what was dropped or trimmed: the common case adds
        // one length per frame.
        uint64_t keep_bytes = s.rx_bytes - s.drop_bytes;
        if constexpr (TrimmingKernel<Kernel>) keep_bytes -= kernel_.take_trimmed_bytes();
        tx_step().send(out, pkts_, uint16_t(s.keep), keep_bytes);
        if (s.dropped) dispose(s.dropped);
        if (s.handed) rx_step_.to_kernel(to_kernel_, s.handed);
        rx_step_.count(b, s.rx_bytes);
    }

    // The burst sorted by the kernel's verdicts: the kept frames at the front of pkts_ in
    // order, the rejected ones in drop_ with their reasons (sort_rejected()). Across the kernel
    // call the per-frame path keeps only the index, the kept count and the bytes (GCC spilled
    // the rest to the stack on the hot path, callgrind).
    template <bool kCompleteChecksums>
    Sorted sort(unsigned n) {
        Sorted s;
        if constexpr (RejectsRarely<Kernel>) {
            // A kept frame stays where it is: no store and no count a frame (2 of a reflector's
            // 20 instructions, callgrind); a rejected one leaves its place and reason, and is
            // taken out after the loop.
            unsigned rejected = 0;
            each_frame(n, [&](size_t i) {
                if (unsigned r = judge<kCompleteChecksums>(s, pkts_[i]); r != kTransmit)
                    [[unlikely]] {
                    rejected_at_[rejected] = uint16_t(i);
                    reasons_[rejected++] = r;
                }
            });
            s.keep = n;
            if (rejected) [[unlikely]]
                take_rejected(s, rejected);
            return s;
        }
        // A kept frame to the front at the kept count, a rejected one to drop_ at the burst's
        // rejected count so far (i - keep), its reason beside it.
        each_frame(n, [&](size_t i) {
            rte_mbuf* m = pkts_[i];
            if (unsigned r = judge<kCompleteChecksums>(s, m); r == kTransmit) [[likely]] {
                pkts_[s.keep++] = m;
            } else {
                drop_[i - s.keep] = m;
                reasons_[i - s.keep] = r;
            }
        });
        if (s.keep < n) [[unlikely]]
            sort_rejected(s, unsigned(n - s.keep));
        return s;
    }

    // step(i) on each frame of the burst in order, frame i + kPrefetchAhead's data prefetched.
    template <class Step>
    [[gnu::always_inline]] void each_frame(unsigned n, Step&& step) {
        // A constant count in a full burst: no loop (1 instruction a frame of a reflector's).
        const unsigned first = n > kPrefetchAhead ? kPrefetchAhead : n;
        for (unsigned i = 0; i < first; ++i) rte_prefetch0(rte_pktmbuf_mtod(pkts_[i], void*));
        // Two loops rather than a bounds test per packet: the tail has nothing to prefetch.
        size_t i = 0;
#pragma GCC unroll 4
        for (; i + kPrefetchAhead < n; ++i) {
            rte_prefetch0(rte_pktmbuf_mtod(pkts_[i + kPrefetchAhead], void*));
            step(i);
        }
        for (; i < n; ++i) step(i);
    }

    // The frame's bytes counted and the kernel's verdict on it; a kept frame's checksum
    // completed when kCompleteChecksums.
    template <bool kCompleteChecksums>
    [[gnu::always_inline]] unsigned judge(Sorted& s, rte_mbuf* m) {
        s.rx_bytes += rte_pktmbuf_pkt_len(m);
        const unsigned reason = kernel_(m);
        if constexpr (kCompleteChecksums)
            if (reason == kTransmit)
                pkt::complete_offloaded_checksum(rte_pktmbuf_mtod(m, uint8_t*),
                                                 rte_pktmbuf_data_len(m));
        return reason;
    }

    // The rejected frames (indexes rejected_at_, ascending) out of pkts_ into drop_ in order,
    // each run of kept frames after one moved forward past it, then sorted by reason.
    void take_rejected(Sorted& s, unsigned rejected) {
        rejected_at_[rejected] = uint16_t(s.keep);  // the end of the last run
        rte_mbuf** to = pkts_ + rejected_at_[0];
        for (unsigned j = 0; j < rejected; ++j) {
            drop_[j] = pkts_[rejected_at_[j]];
            for (size_t i = rejected_at_[j] + 1u; i < rejected_at_[j + 1]; ++i) *to++ = pkts_[i];
        }
        s.keep = size_t(to - pkts_);
        sort_rejected(s, rejected);
    }

    // The rejected frames by reason: each counted, those for the host's kernel moved to
    // to_kernel_, the dropped ones left at the front of drop_ in order. A kernel leaves the
    // frames it rejects as they came, so their lengths are read here.
    void sort_rejected(Sorted& s, unsigned rejected) {
        for (unsigned j = 0; j < rejected; ++j) {
            rte_mbuf* m = drop_[j];
            s.drop_bytes += rte_pktmbuf_pkt_len(m);
            if (reasons_[j] == to_kernel_reason_) {
                to_kernel_[s.handed++] = m;
                continue;
            }
            c_.drops[reasons_[j]].add(1);
            drop_[s.dropped++] = m;
        }
    }

    // The rejected frames: freed, or transmitted on the divert port after the kept ones (the
    // forwarded traffic's latency comes first).
    void dispose(unsigned dropped) {
        if (!divert_) {
            rte_pktmbuf_free_bulk(drop_, dropped);
            return;
        }
        tx_step().send_aside({divert_->port, divert_->queue}, drop_, uint16_t(dropped),
                             c_.app[divert_->sent_counter], c_.app[divert_->full_counter]);
    }

    // The transmit step on this worker's board, made where it sends: the loop holds no second
    // reference to the board (a TxStep member cost the reflector's loop a register spill, 832
    // instructions a burst of 32 against 830, callgrind).
    TxStep tx_step() {
        return {c_, ctx_.tx_retries};
    }

    WorkerContext& ctx_;
    RxStep rx_step_;
    Kernel& kernel_;
    stats::WorkerCounters& c_;
    const std::vector<worker::QueueRef>& rx_;
    const std::vector<worker::QueueRef>& tx_;
    const std::optional<Divert> divert_;
    const unsigned to_kernel_reason_;
    rte_mbuf* pkts_[kMaxBurst];
    rte_mbuf* drop_[kMaxBurst];
    unsigned reasons_[kMaxBurst];          // of the rejected frames, during sort()
    uint16_t rejected_at_[kMaxBurst + 1];  // their places in the burst, during sort()
    rte_mbuf* to_kernel_[kMaxBurst];
};

template <class Kernel>
void forward_loop(WorkerContext& ctx, Kernel& kernel, const ForwardOptions& options = {}) {
    ForwardLoop<Kernel>(ctx, kernel, options).run();
}

}  // namespace linerate
