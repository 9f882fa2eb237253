#pragma once
// The first step of every worker loop, shared so that every loop gets the runtime's worker-side
// features without code of its own: once per round, the frames the host's kernel sent on the
// exception path go out (by the worker that owns queue 0 of its port); per queue, an RX burst,
// with the frames the app does not serve handed to the host's kernel when --exception-path is on
// (and kept, for the app to count as its own drop, when it is off).
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "runtime/exception_path.hpp"
#include "runtime/runtime.hpp"

namespace linerate {

inline constexpr unsigned kMaxBurst = 512;

// One burst as the RX step left it: `kept` frames at the front of the caller's array.
struct RxBurst {
    uint16_t received = 0;      // what the queue gave
    uint16_t kept = 0;          // the app's, in order
    uint64_t handed_bytes = 0;  // bytes of the frames handed to the kernel
};

// What an app that serves every frame passes (a forwarding app, which judges after its kernel ran).
struct ServesAll {
    bool operator()(const uint8_t*, size_t) const { return true; }
};

class RxStep {
  public:
    explicit RxStep(WorkerContext& ctx)
        : ctx_(ctx),
          exception_(ctx.exception),
          sends_for_kernel_(ctx.exception && ctx.exception->transmits_for(ctx.slot)) {}

    bool exception_path() const { return exception_ != nullptr; }

    // Once per round of the worker's loop.
    void start_round() {
        if (sends_for_kernel_) [[unlikely]]
            exception_->transmit_from_kernel(ctx_.counters, ctx_.tx_retries);
    }

    // A burst from `q` into pkts (room for the context's burst), with the frames `serves(frame,
    // len)` rejects handed to the host's kernel when the exception path is on (a second look at
    // each frame's headers, only then). Forced inline, as count(): GCC called both out of line
    // in a header check's forward loop (callgrind).
    template <class Serves>
    [[gnu::always_inline]] RxBurst receive(worker::QueueRef q, rte_mbuf** pkts,
                                           const Serves& serves) {
        // One TSC read per poll: the previous poll's packets kept the worker busy until now.
        const uint64_t now = rte_rdtsc();
        if (busy_since_ != 0) ctx_.counters.busy_cycles.add(now - busy_since_);
        const uint16_t n = rte_eth_rx_burst(q.port, q.queue, pkts, uint16_t(ctx_.burst));
        busy_since_ = n ? now : 0;
        RxBurst b{n, n, 0};
        if constexpr (std::is_same_v<Serves, ServesAll>) return b;
        if (exception_ == nullptr || n == 0) [[likely]]
            return b;
        rte_mbuf* other[kMaxBurst];
        uint16_t keep = 0, moved = 0;
        for (uint16_t i = 0; i < n; ++i) {
            rte_mbuf* m = pkts[i];
            if (serves(rte_pktmbuf_mtod(m, const uint8_t*), size_t(rte_pktmbuf_data_len(m)))) {
                pkts[keep++] = m;
            } else {
                b.handed_bytes += rte_pktmbuf_pkt_len(m);
                other[moved++] = m;
            }
        }
        if (moved) exception_->to_kernel(ctx_.counters, other, moved);
        b.kept = keep;
        return b;
    }

    // One round of a worker's loop: start_round(), then a burst from each of the worker's
    // queues; `on_burst(queue, pkts, burst)` handles the kept frames and returns their bytes,
    // and the burst is counted after it.
    template <class Serves, class OnBurst>
    void round(rte_mbuf** pkts, const Serves& serves, OnBurst&& on_burst) {
        start_round();
        for (const worker::QueueRef& q : ctx_.slot.queues) {
            const RxBurst b = receive(q, pkts, serves);
            if (b.received == 0) continue;
            count(b, on_burst(q, pkts, b));
        }
    }

    // Frames the app judged not its own after its kernel ran (e.g. not IPv4), for the kernel.
    void to_kernel(rte_mbuf* const* pkts, unsigned n) {
        exception_->to_kernel(ctx_.counters, pkts, n);
    }

    // The burst's RX counters: `app_bytes` of the kept frames plus the handed ones. Last, once
    // every frame's fate is counted: a reader that sees a packet received sees where it went.
    [[gnu::always_inline]] void count(const RxBurst& b, uint64_t app_bytes) {
        ctx_.counters.rx_bytes.add(app_bytes + b.handed_bytes);
        ctx_.counters.rx_packets.add(b.received);
    }

  private:
    WorkerContext& ctx_;
    ExceptionPath* const exception_;
    const bool sends_for_kernel_;
    uint64_t busy_since_ = 0;  // TSC at the start of the last poll that returned packets
};

}  // namespace linerate
