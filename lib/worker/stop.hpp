#pragma once
// The process-wide stop flag: set by SIGINT/SIGTERM, --duration, or end of pcap input; read by
// every worker once per loop iteration (a relaxed load: no fence on the hot path).
#include <atomic>

namespace linerate::worker {

inline std::atomic<bool> g_stop{false};

inline bool stop_requested() {
    return g_stop.load(std::memory_order_relaxed);
}
inline void request_stop() {
    g_stop.store(true, std::memory_order_relaxed);
}

// SIGINT and SIGTERM request a stop; a second one lets the summary and JSON be finished; a third
// exits at once. SIGPIPE is ignored.
void install_signal_handlers();
// The signal that requested the stop, or 0.
int stop_signal();

}  // namespace linerate::worker
