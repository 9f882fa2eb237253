#pragma once
// kvagg's worker loop: a sink. RX a burst on each of the worker's queues, aggregate it with the
// kernel's burst path, free it in bulk, transmit nothing. The loop counts onto the stats board;
// the kernel's own plain counters are carried onto it once per burst (stats::CarriedTotal).
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "kvagg/kv_control.hpp"
#include "kvagg/kv_kernel.hpp"
#include "kvagg/worker_link.hpp"
#include "runtime/bulk_free.hpp"
#include "runtime/forward_loop.hpp"
#include "runtime/mbuf_frame.hpp"
#include "runtime/runtime.hpp"
#include "runtime/rx_step.hpp"
#include "runtime/tx.hpp"
#include "worker/quiescence.hpp"

namespace linerate::kvagg {

// App counters of the board, in this order.
#define LINERATE_KVAGG_COUNTERS(X)                                                             \
    X(tuples, "tuples")                         /* of aggregated packets: stored + overflow */ \
    X(aggregated_packets, "aggregated packets") /* packets whose tuples went to the table */   \
    X(overflow_tuples, "overflow tuples")       /* refused by the table: value -> overflow */  \
    X(requests, "requests")                     /* read/status/flush requests handed over */   \
    X(responses, "responses")                   /* response frames transmitted */              \
    X(responses_dropped, "responses dropped")   /* lost: no mbuf, or TX full after retries */  \
    X(udp_checksum_offloaded,                                                                  \
      "udp checksum offloaded") /* accepted: the sender left the UDP checksum to offload */
LINERATE_COUNTERS(AppCounter, kAppCounters, LINERATE_KVAGG_COUNTERS);

template <class Table>
class SinkLoop {
  public:
    SinkLoop(KvKernel<Table>& kernel, WorkerLink& link, KvControl<Table>& control,
             rte_mempool* pool, uint16_t udp_port)
        : kernel_(kernel), link_(link), control_(control), pool_(pool), udp_port_(udp_port) {}

    void run(WorkerContext& ctx) {
        rte_mbuf* pkts[kMaxBurst];
        RxStep rx_step(ctx);
        const pkt::UdpPortFilter kvagg_frames{udp_port_};
        auto sink = [&](worker::QueueRef, rte_mbuf** got, const RxBurst& b) {
            if (b.kept == 0) return uint64_t(0);  // all handed to the host's kernel
            BulkFree free(got[0]);
            const uint64_t bytes = aggregate(got, b.kept, free);
            // Requests are rare: one compare per burst on the tuple path.
            if (kernel_.counters()[KvVerdict::request] != handed_) [[unlikely]]
                hand_over(ctx, got, b.kept);
            free.free(got, b.kept);
            publish(ctx.counters);
            return bytes;
        };
        while (worker::keep_polling()) {
            // Telemetry's and the control thread's requests: one relaxed load per round.
            if (link_.has_pending()) [[unlikely]] {
                if (serve_requests(link_, kernel_.table(), kernel_.dup_filter()))
                    send_responses(ctx);
            }
            rx_step.round(pkts, kvagg_frames, sink);
        }
        link_.stopped.store(true, std::memory_order_release);
    }

  private:
    // The burst's requests, copied to the control inbox (or refused as control_busy).
    void hand_over(WorkerContext& ctx, rte_mbuf* const* pkts, uint16_t n) {
        for (uint16_t i = 0; i < n; ++i) {
            const rte_mbuf* m = pkts[i];
            const LinearFrame::Bytes b = linear_.of(m);
            // The kernel counted a request at an address kvagg does not listen on as
            // other_address: it is not handed over either.
            if (b.data == nullptr) continue;
            const KvRequest r = parse_kv_request(b.data, b.len, udp_port_);
            if (r.verdict != KvVerdict::request || !kernel_.config().listen.admits(b.data, b.len))
                continue;
            // Who may ask, before the control thread sees anything of it (--key, --allow).
            if (const KvVerdict gate = kernel_.request_gate(b.data, r); gate != KvVerdict::request)
                refuse(ctx, m->port, b.data, r, gate);
            else if (control_.submit(ctx.slot.index, m->port, b.data, b.len))
                ctx.counters.app_counter(AppCounter::requests).add(1);
            else
                ctx.counters.drop(Drop::control_busy).add(1);
        }
        handed_ = kernel_.counters()[KvVerdict::request];
    }

    // A request refused by the gate: a drop, and an error reply (rate-limited) queued on this
    // worker's own slot, sent with the next round's responses.
    void refuse(WorkerContext& ctx, uint16_t port, const uint8_t* frame, const KvRequest& r,
                KvVerdict why) {
        ctx.counters.drop(kv_drop(why)).add(1);
        const uint16_t code = why == KvVerdict::bad_auth ? kKvErrAuth : kKvErrNotAllowed;
        if (std::optional<std::vector<uint8_t>> reply = control_.refuse(frame, r, code)) {
            std::vector<std::vector<uint8_t>> frames;
            frames.push_back(std::move(*reply));
            post_frames(link_, port, std::move(frames));
        }
    }

    // Up to a burst of the response frames the control thread posted.
    void send_responses(WorkerContext& ctx) {
        const std::vector<OutgoingFrame> frames = take_frames(link_, ctx.burst);
        stats::WorkerCounters& c = ctx.counters;
        TxStep tx(c, ctx.tx_retries);
        const uint16_t room = uint16_t(rte_pktmbuf_data_room_size(pool_) - RTE_PKTMBUF_HEADROOM);
        for (const OutgoingFrame& f : frames) {
            const worker::QueueRef* q = nullptr;
            for (const worker::QueueRef& r : ctx.slot.queues)
                if (r.port == f.port) q = &r;
            rte_mbuf* m = q && f.frame.size() <= room ? rte_pktmbuf_alloc(pool_) : nullptr;
            if (m == nullptr) {
                c.app_counter(AppCounter::responses_dropped).add(1);
                continue;
            }
            std::memcpy(rte_pktmbuf_append(m, uint16_t(f.frame.size())), f.frame.data(),
                        f.frame.size());
            const TxResult t = tx.send(*q, &m, 1, rte_pktmbuf_pkt_len(m),
                                       c.app_counter(AppCounter::responses_dropped));
            c.app_counter(AppCounter::responses).add(t.sent);
        }
    }

    // Aggregates a burst (the kernel's burst path: the slot look-ahead runs across frames),
    // noting each mbuf for the burst's free; returns its bytes.
    uint64_t aggregate(rte_mbuf* const* pkts, uint16_t n, BulkFree& free) {
        FrameRef* const frames = frames_.data();
        FrameRef* f = frames;  // a pointer, not an index: no multiply by the element per frame
        uint64_t bytes = 0;
        for (rte_mbuf* const* p = pkts; p != pkts + n; ++p) {
            const rte_mbuf* m = *p;
            free.note(m);
            bytes += rte_pktmbuf_pkt_len(m);
            if (m->nb_segs == 1) [[likely]] {
                rte_prefetch0(rte_pktmbuf_mtod(m, const void*));  // the header, parsed first
                *f++ = {rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m),
                        rx_checksums(m)};
                continue;
            }
            // A chain (a jumbo frame): the frames before it first, then a linear copy of it
            // (one buffer, so one chain at a time).
            kernel_.aggregate_burst({frames, f});
            f = frames;
            const LinearFrame::Bytes b = linear_.of(m);
            kernel_.aggregate_frame(b.data, b.len, rx_checksums(m));
        }
        kernel_.aggregate_burst({frames, f});
        return bytes;
    }

    // Carries what the kernel counted onto the board, and its sums onto the link.
    void publish(stats::WorkerCounters& c) {
        const KvCounters& now = kernel_.counters();
        for (size_t v = size_t(KvVerdict::not_kvagg); v < size_t(KvVerdict::table_full); ++v)
            carried_.drops[v].carry(now.by_verdict[v], c.drop(kv_drop(KvVerdict(v))));
        carried_.tuples.carry(now.tuples_aggregated + now.tuples_overflowed(),
                              c.app_counter(AppCounter::tuples));
        carried_.aggregated_packets.carry(now.packets_ok(),
                                          c.app_counter(AppCounter::aggregated_packets));
        carried_.overflow_tuples.carry(now.tuples_overflowed(),
                                       c.app_counter(AppCounter::overflow_tuples));
        carried_.udp_checksum_offloaded.carry(now.udp_checksum_offloaded,
                                              c.app_counter(AppCounter::udp_checksum_offloaded));
        link_.keys.store(kernel_.table().size(), std::memory_order_relaxed);
        link_.value_sum.store(now.value_sum, std::memory_order_relaxed);
        link_.overflow_sum.store(now.overflow_sum, std::memory_order_relaxed);
        const SeqGaps& gaps = kernel_.dup_filter().gaps();
        link_.gaps_opened.store(gaps.opened, std::memory_order_relaxed);
        link_.gaps_filled.store(gaps.filled, std::memory_order_relaxed);
    }

    KvKernel<Table>& kernel_;
    WorkerLink& link_;
    KvControl<Table>& control_;
    rte_mempool* pool_;
    uint16_t udp_port_;
    // The kernel's counters, as far as the board has them.
    struct {
        std::array<stats::CarriedTotal, kKvVerdictCount> drops;  // by verdict
        stats::CarriedTotal tuples, aggregated_packets, overflow_tuples, udp_checksum_offloaded;
    } carried_;
    uint64_t handed_ = 0;  // request verdicts already handed over
    LinearFrame linear_;
    // A burst's frame references. A member: as a local, the array (whose elements initialise
    // their port verdicts) was cleared for all kMaxBurst frames at every burst, 36 instructions
    // a packet at bursts of 32 (callgrind).
    std::array<FrameRef, kMaxBurst> frames_;
};

}  // namespace linerate::kvagg
