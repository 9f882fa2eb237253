#pragma once
// l2reflect's kernel on an mbuf (reflect.hpp on its first segment), and the worker that does the
// memory work beside it.
#include <rte_mbuf.h>

#include "l2reflect/reflect.hpp"
#include "runtime/forward_loop.hpp"

namespace linerate::l2reflect {

class MemoryWorkFeature;

// A first segment shorter than the MACs and the swap's 16-byte load (a runt, or a split header).
template <bool kSwap>
[[gnu::noinline, gnu::cold]] unsigned reflect_short_mbuf(rte_mbuf* m) {
    return reflect_frame<kSwap>(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m),
                                rte_pktmbuf_pkt_len(m));
}

// reflect_frame's common case inline and the short frame out of line: the loop then keeps no
// frame length alive across the swap for the short one (a register copy a frame, callgrind).
template <bool kSwap>
unsigned reflect_mbuf(rte_mbuf* m) {
    const uint16_t len = rte_pktmbuf_data_len(m);
    if (len < 16) [[unlikely]]
        return reflect_short_mbuf<kSwap>(m);
    return reflect_frame<kSwap>(rte_pktmbuf_mtod(m, uint8_t*), len);
}

// reflect_mbuf as forward_loop's kernel: it rejects malformed frames only (RejectsRarely).
template <bool kSwap>
struct MbufReflector {
    static constexpr bool kRejectsRarely = true;
    unsigned operator()(rte_mbuf* m) const { return reflect_mbuf<kSwap>(m); }
};

// A worker with --touch or --lookups (never with --datapath xdp): its memory work reads each
// frame's first segment, then the frame is reflected as without it. In a translation unit of
// its own (memory_work_worker.cpp): its ten loop instantiations beside the plain loop's changed
// what GCC inlined into the plain one (Counter::add, TxStep::send_aside came out of line).
void run_memory_worker(MemoryWorkFeature& work, WorkerContext& ctx, const ForwardOptions& forward,
                       bool swap);

}  // namespace linerate::l2reflect
