#pragma once
// Which worker runs on which lcore and polls which (port, queue) pairs. Every port gets one
// queue pair per worker (fewer if the device has fewer); worker i polls queue i of each port. A
// port made for one queue of an interface (--af-xdp) starts at the worker of that queue.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace linerate::worker {

struct QueueRef {
    uint16_t port;
    uint16_t queue;
};

struct WorkerSlot {
    unsigned index = 0;
    unsigned lcore = 0;
    std::vector<QueueRef> queues;
};

struct PortQueues {
    uint16_t port;
    uint16_t queues;
    unsigned first_worker = 0;  // queue q goes to worker (first_worker + q) % workers
};

class WorkerMap {
  public:
    WorkerMap(const std::vector<unsigned>& lcores, const std::vector<PortQueues>& ports);

    const std::vector<WorkerSlot>& slots() const { return slots_; }
    unsigned size() const { return unsigned(slots_.size()); }
    // True when the main lcore is the only worker (a single-lcore run).
    bool main_is_worker() const { return main_is_worker_; }
    std::string describe() const;

  private:
    std::vector<WorkerSlot> slots_;
    bool main_is_worker_ = false;
};

// The EAL worker lcores, or the main lcore alone when there are none (`-l N`).
std::vector<unsigned> worker_lcores();

// Runs fn(slot) on each slot's lcore and `monitor` on the main lcore until the workers return.
// When the main lcore is the worker, `monitor` runs on a control thread beside it.
void run_workers(const WorkerMap& map, const std::function<void(const WorkerSlot&)>& fn,
                 const std::function<void()>& monitor);

}  // namespace linerate::worker
