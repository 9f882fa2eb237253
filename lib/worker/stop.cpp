#include "worker/stop.hpp"

#include <unistd.h>
#include <csignal>

namespace linerate::worker {

namespace {
volatile std::sig_atomic_t g_signal = 0;

volatile std::sig_atomic_t g_count = 0;

void say(const char* text) {
    ssize_t ignored = write(2, text, __builtin_strlen(text));
    (void)ignored;
}

void on_signal(int sig) {
    // The first signal asks for a stop; the second only says the summary and JSON are being
    // finished (they take milliseconds, and a half-written JSON is worse than none); the third
    // means it: exit at once, nothing written.
    g_count = g_count + 1;
    if (g_count >= 3) _exit(128 + sig);
    if (g_count == 2) {
        say("stopping: finishing the summary and JSON (signal once more to abort at once)\n");
        return;
    }
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
    // A peer that went away (vhost-user socket, a pipe) is a link down for the port, not a
    // reason to die: writes fail with EPIPE instead.
    signal(SIGPIPE, SIG_IGN);
}

int stop_signal() {
    return g_signal;
}

}  // namespace linerate::worker
