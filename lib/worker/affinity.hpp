#pragma once
// CPU affinity of the threads an app starts beside its workers. A thread inherits the affinity
// of the thread that creates it: one created on the main lcore is bound to that lcore's one CPU,
// in a single-lcore run the busy-polling worker's.
#include <vector>

#include "worker/worker_map.hpp"

namespace linerate::worker {

// The CPUs 0 .. cpus-1 that are not in `busy`; all of them when `busy` covers every one.
std::vector<unsigned> cpus_besides(const std::vector<unsigned>& busy, unsigned cpus);

// Pins the calling thread to the CPUs no worker of `map` runs on (all CPUs when the workers take
// every one), e.g. first thing on an app's control thread.
void pin_beside_workers(const WorkerMap& map);

}  // namespace linerate::worker
