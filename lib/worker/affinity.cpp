#include "worker/affinity.hpp"

#include <pthread.h>
#include <rte_lcore.h>
#include <sched.h>

#include <algorithm>
#include <thread>

namespace linerate::worker {

std::vector<unsigned> cpus_besides(const std::vector<unsigned>& busy, unsigned cpus) {
    std::vector<unsigned> all, free;
    for (unsigned c = 0; c < cpus; ++c) {
        all.push_back(c);
        if (std::find(busy.begin(), busy.end(), c) == busy.end()) free.push_back(c);
    }
    return free.empty() ? all : free;
}

void pin_beside_workers(const WorkerMap& map) {
    std::vector<unsigned> busy;
    for (const WorkerSlot& slot : map.slots())
        busy.push_back(unsigned(rte_lcore_to_cpu_id(int(slot.lcore))));
    const unsigned cpus = std::min(unsigned(CPU_SETSIZE), std::thread::hardware_concurrency());
    cpu_set_t set;
    CPU_ZERO(&set);
    for (unsigned c : cpus_besides(busy, cpus)) CPU_SET(c, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

}  // namespace linerate::worker
