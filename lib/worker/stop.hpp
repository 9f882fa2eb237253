#pragma once
// The process-wide run state: set to stopping by SIGINT/SIGTERM, --duration, or end of pcap
// input; read by every worker once per loop iteration (a relaxed load: no fence on the hot path).
#include <atomic>
#include <cstdint>

namespace linerate::worker {

// running until a stop. stall_asked and stalled exist for one test only (LINERATE_TEST_STALL,
// docs/operations.md): one polling worker stops polling, so the systemd watchdog's check sees it.
enum class RunState : uint8_t { running, stall_asked, stalled, stopping };

inline std::atomic<RunState> g_run_state{RunState::running};

inline bool stop_requested() {
    return g_run_state.load(std::memory_order_relaxed) == RunState::stopping;
}
inline void request_stop() {
    g_run_state.store(RunState::stopping, std::memory_order_relaxed);
}

// Out of line: what a polling loop does in a state other than running.
bool polling_goes_on_after(RunState state);

// A polling loop's test, once per round: true while the run goes on. While running: one relaxed
// load, as stop_requested().
inline bool polling_goes_on() {
    const RunState state = g_run_state.load(std::memory_order_relaxed);
    return state == RunState::running || polling_goes_on_after(state);
}

// SIGINT and SIGTERM request a stop; a second one lets the summary and JSON be finished; a third
// exits at once. SIGPIPE is ignored. With LINERATE_TEST_STALL=1 in the environment (tests only),
// SIGUSR2 makes one polling worker stop polling until a stop; without it SIGUSR2 keeps its
// default action.
void install_signal_handlers();
// The signal that requested the stop, or 0.
int stop_signal();

}  // namespace linerate::worker
