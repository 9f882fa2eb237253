#pragma once
// Polling threads report, once per loop round, that they are outside every RX/TX burst (a
// quiescent state, DPDK's rte_rcu_qsbr), so that memory a PMD's bursts read is unmapped only once
// no lcore is still reading it.
//
// Why: net_memif (DPDK 22.11) unmaps a port's shared regions when its peer leaves, on the EAL
// interrupt thread: memif_disconnect() clears the port's "connected" flag, then
// memif_free_regions() munmap()s the regions, with no handshake with a lcore that checked the
// flag just before and is still inside rx_burst/tx_burst (SIGSEGV in librte_net_memif). The PMD
// raises no event the app could wait in first (no RTE_ETH_EVENT_INTR_LSC). So linerate's
// munmap() (quiescence.cpp) waits, on the EAL interrupt thread, until every polling thread has
// reported a quiescent state after the unmap began: by then each has left the burst it was in,
// and its next burst sees the flag cleared. docs/memif.md has the DPDK code path.
#include <rte_rcu_qsbr.h>

#include "worker/stop.hpp"

namespace linerate::worker {

// Worker indices (WorkerSlot::index) are poller ids; kMainPoller is the main lcore's after the
// workers returned (Port::reclaim_tx).
inline constexpr unsigned kMaxPollers = RTE_MAX_LCORE + 1;
inline constexpr unsigned kMainPoller = RTE_MAX_LCORE;
inline constexpr unsigned kNotAPoller = ~0u;

namespace detail {
extern rte_rcu_qsbr* const g_pollers;
inline thread_local unsigned t_poller = kNotAPoller;
}  // namespace detail

// The calling thread's reads of port memory so far are done. Four loads (its id, the QSBR
// pointer, the token, its own count), plus one store when an unmap is waiting: no fence, no
// atomic read-modify-write.
inline void report_quiescent() {
    if (const unsigned id = detail::t_poller; id != kNotAPoller)
        rte_rcu_qsbr_quiescent(detail::g_pollers, id);
}

// The condition of a polling loop: reports a quiescent state, then says whether to go on.
inline bool keep_polling() {
    report_quiescent();
    return polling_goes_on();
}

// While it lives, the calling thread polls ports: an unmap on the EAL interrupt thread waits for
// its next report_quiescent(). `id` < kMaxPollers, unique among the live ones. On a thread that
// already is a polling thread it changes nothing.
class PollingThread {
  public:
    explicit PollingThread(unsigned id);
    ~PollingThread();
    PollingThread(const PollingThread&) = delete;
    PollingThread& operator=(const PollingThread&) = delete;

  private:
    unsigned id_;  // kNotAPoller when nested
};

// A round of reports: once poll_round_done(start_poll_round()) is true, every polling thread has
// reported a quiescent state since the start, or is gone. Non-blocking, from any thread: the
// systemd watchdog's liveness check (runtime/service_notify.hpp) is one round per ping.
uint64_t start_poll_round();
bool poll_round_done(uint64_t round);

// Returns once every polling thread has reported a quiescent state since the call, or is gone.
void wait_for_pollers();

}  // namespace linerate::worker
