#pragma once
// l2reflect's kernel on an mbuf (reflect.hpp on its first segment), and the worker that does the
// memory work beside it.
#include <rte_mbuf.h>

#include "l2reflect/reflect.hpp"
#include "runtime/forward_loop.hpp"

namespace linerate::l2reflect {

class MemoryWorkFeature;

template <bool kSwap>
unsigned reflect_mbuf(rte_mbuf* m) {
    return reflect_frame<kSwap>(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m),
                                rte_pktmbuf_pkt_len(m));
}

// A worker with --touch or --lookups (never with --datapath xdp): its memory work reads each
// frame's first segment, then the frame is reflected as without it. In a translation unit of
// its own (memory_work_worker.cpp): its ten loop instantiations beside the plain loop's changed
// what GCC inlined into the plain one (Counter::add, TxStep::send_aside came out of line).
void run_memory_worker(MemoryWorkFeature& work, WorkerContext& ctx, const ForwardOptions& forward,
                       bool swap);

}  // namespace linerate::l2reflect
