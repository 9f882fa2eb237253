#include "l2reflect/memory_work_feature.hpp"
#include "l2reflect/reflect_mbuf.hpp"

namespace linerate::l2reflect {

namespace {

// The memory work on each frame, then the reflector's verdict.
template <bool kSwap, class Work>
struct WorkingReflector {
    static constexpr bool kRejectsRarely = true;
    Work& work;
    unsigned operator()(rte_mbuf* m) {
        work(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m));
        return reflect_mbuf<kSwap>(m);
    }
};

template <bool kSwap, class Work>
void run_working(WorkerContext& ctx, const ForwardOptions& forward, Work& work) {
    WorkingReflector<kSwap, Work> kernel{work};
    forward_loop(ctx, kernel, forward);
}

}  // namespace

void run_memory_worker(MemoryWorkFeature& work, WorkerContext& ctx, const ForwardOptions& forward,
                       bool swap) {
    work.with_frame_work(ctx.slot.index, [&](auto& w) {
        swap ? run_working<true>(ctx, forward, w) : run_working<false>(ctx, forward, w);
    });
}

}  // namespace linerate::l2reflect
