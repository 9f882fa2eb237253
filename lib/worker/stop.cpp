#include "worker/stop.hpp"

#include <rte_pause.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace linerate::worker {

namespace {
// Lock-free atomics (signal-safe), not volatile sig_atomic_t: the handler runs on whichever
// thread the signal lands on (a worker, DPDK's interrupt thread), and the main thread reads them
// after the workers end; plain variables there are a data race (ThreadSanitizer said so).
std::atomic<int> g_signal{0};
std::atomic<int> g_count{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal state must be signal-safe");

void say(const char* text) {
    ssize_t ignored = write(2, text, __builtin_strlen(text));
    (void)ignored;
}

void on_signal(int sig) {
    // The first signal asks for a stop; the second only says the summary and JSON are being
    // finished (they take milliseconds, and a half-written JSON is worse than none); the third
    // means it: exit at once, nothing written.
    const int count = g_count.fetch_add(1, std::memory_order_relaxed) + 1;
    if (count >= 3) _exit(128 + sig);
    if (count == 2) {
        say("stopping: finishing the summary and JSON (signal once more to abort at once)\n");
        return;
    }
    g_signal.store(sig, std::memory_order_relaxed);
    request_stop();
}

// Test only (LINERATE_TEST_STALL=1): the watchdog test needs a worker that is alive but no
// longer polls, as a worker stuck in a kernel or a PMD would be.
void on_stall_signal(int) {
    RunState expected = RunState::running;
    if (g_run_state.compare_exchange_strong(expected, RunState::stall_asked,
                                            std::memory_order_relaxed))
        say("test: a worker stops polling until a stop (LINERATE_TEST_STALL)\n");
}
}  // namespace

static_assert(std::atomic<RunState>::is_always_lock_free, "run state must be signal-safe");

bool polling_goes_on_after(RunState state) {
    if (state == RunState::stopping) return false;
    RunState asked = RunState::stall_asked;
    // The first worker to see the request takes it; the others poll on.
    if (state == RunState::stall_asked &&
        g_run_state.compare_exchange_strong(asked, RunState::stalled, std::memory_order_relaxed)) {
        while (!stop_requested()) rte_pause();
        return false;
    }
    return true;
}

void install_signal_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    // A peer that went away (vhost-user socket, a pipe) is a link down for the port, not a
    // reason to die: writes fail with EPIPE instead.
    signal(SIGPIPE, SIG_IGN);
    const char* stall = std::getenv("LINERATE_TEST_STALL");
    if (stall != nullptr && std::strcmp(stall, "1") == 0) {
        sa.sa_handler = on_stall_signal;
        sigaction(SIGUSR2, &sa, nullptr);
    }
}

int stop_signal() {
    return g_signal.load(std::memory_order_relaxed);
}

}  // namespace linerate::worker
