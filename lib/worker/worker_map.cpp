#include "worker/worker_map.hpp"

#include <fmt/core.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include <atomic>
#include <thread>

#include "worker/quiescence.hpp"

namespace linerate::worker {

std::vector<unsigned> worker_lcores() {
    std::vector<unsigned> lcores;
    unsigned lc;
    RTE_LCORE_FOREACH_WORKER(lc) lcores.push_back(lc);
    if (lcores.empty()) lcores.push_back(rte_get_main_lcore());
    return lcores;
}

WorkerMap::WorkerMap(const std::vector<unsigned>& lcores, const std::vector<PortQueues>& ports) {
    main_is_worker_ = lcores.size() == 1 && lcores[0] == rte_get_main_lcore();
    for (unsigned i = 0; i < lcores.size(); ++i) {
        WorkerSlot slot;
        slot.index = i;
        slot.lcore = lcores[i];
        slots_.push_back(slot);
    }
    for (const PortQueues& p : ports)
        for (uint16_t q = 0; q < p.queues; ++q)
            slots_[(p.first_worker + q) % slots_.size()].queues.push_back({p.port, q});
}

std::string WorkerMap::describe() const {
    std::string s;
    for (const WorkerSlot& w : slots_) {
        s += fmt::format("worker {} -> lcore {}{} ->", w.index, w.lcore,
                         main_is_worker_ ? " (main)" : "");
        if (w.queues.empty()) s += " idle (no queue left for it)";
        for (const QueueRef& q : w.queues) s += fmt::format(" port {} queue {}", q.port, q.queue);
        s += "\n";
    }
    return s;
}

namespace {
// The hand-offs between the main lcore and the workers, stated in our code: DPDK orders them
// inside librte_eal (rte_eal_remote_launch, rte_eal_mp_wait_lcore) with atomics that
// ThreadSanitizer does not see, and what the workers read of the setup or the main lcore reads
// of their results after the join must not depend on that. Once per run, not per packet.
struct Handoff {
    std::atomic<bool> launched{false};  // release: the setup before it is visible to workers
    std::atomic<unsigned> finished{0};  // release by each worker, acquire after the join
};
// A worker polls its slot's queues: an unmap on the EAL interrupt thread waits for it
// (quiescence.hpp).
void run_slot(const std::function<void(const WorkerSlot&)>& fn, const WorkerSlot& slot) {
    PollingThread poller(slot.index);
    fn(slot);
}
struct LaunchArg {
    const std::function<void(const WorkerSlot&)>* fn;
    const WorkerSlot* slot;
    Handoff* handoff;
};
int launch_trampoline(void* arg) {
    auto* a = static_cast<LaunchArg*>(arg);
    while (!a->handoff->launched.load(std::memory_order_acquire)) {
    }
    run_slot(*a->fn, *a->slot);
    a->handoff->finished.fetch_add(1, std::memory_order_release);
    return 0;
}
}  // namespace

void run_workers(const WorkerMap& map, const std::function<void(const WorkerSlot&)>& fn,
                 const std::function<void()>& monitor) {
    if (map.main_is_worker()) {
        std::thread control(monitor);
        run_slot(fn, map.slots()[0]);
        control.join();
        return;
    }
    Handoff handoff;
    std::vector<LaunchArg> args;
    args.reserve(map.size());
    for (const WorkerSlot& s : map.slots()) args.push_back({&fn, &s, &handoff});
    handoff.launched.store(true, std::memory_order_release);
    for (auto& a : args) rte_eal_remote_launch(launch_trampoline, &a, a.slot->lcore);
    monitor();
    rte_eal_mp_wait_lcore();
    handoff.finished.load(std::memory_order_acquire);
}

}  // namespace linerate::worker
