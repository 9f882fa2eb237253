#include "worker/stop.hpp"

#include <unistd.h>
#include <csignal>

namespace linerate::worker {

namespace {
volatile std::sig_atomic_t g_signal = 0;

void on_signal(int sig) {
    if (g_signal != 0) _exit(128 + sig);  // a second Ctrl-C: the user means it
    g_signal = sig;
    request_stop();
}
}  // namespace

static_assert(std::atomic<bool>::is_always_lock_free, "stop flag must be signal-safe");

void install_signal_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() {
    return g_signal;
}

}  // namespace linerate::worker
