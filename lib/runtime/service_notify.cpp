#include "runtime/service_notify.hpp"

#include <fmt/core.h>
#include <systemd/sd-daemon.h>

#include <cstdlib>

#include "worker/quiescence.hpp"

namespace linerate {

ServiceNotify::ServiceNotify(std::string app) : app_(std::move(app)) {
    const char* socket = std::getenv("NOTIFY_SOCKET");
    listened_ = socket != nullptr && *socket != '\0';
    uint64_t usec = 0;
    // > 0 only when WATCHDOG_USEC is set (and WATCHDOG_PID, if set, is this process).
    if (listened_ && sd_watchdog_enabled(0, &usec) > 0) ping_every_s_ = double(usec) / 2e6;
}

void ServiceNotify::send(const std::string& message) const {
    if (!listened_) return;
    if (const int rc = sd_notify(0, message.c_str()); rc < 0)
        fmt::print(stderr, "{}: warning: sd_notify({}): error {}\n", app_, message, -rc);
}

void ServiceNotify::ready(double now_s) {
    send(fmt::format("READY=1\nSTATUS={}: running", app_));
    if (ping_every_s_ == 0) return;
    pinged_s_ = now_s;
    round_ = worker::start_poll_round();
    fmt::print("{}: systemd watchdog: pinged every {:.3g} s while every worker polls\n", app_,
               ping_every_s_);
}

// A round of quiescent reports per interval: the ping says every worker polled since the last
// one. Without it the manager's timer runs out (twice the interval) and it restarts the service.
void ServiceNotify::tick(double now_s) {
    if (ping_every_s_ == 0 || now_s - pinged_s_ < ping_every_s_) return;
    // Once a stop began the workers leave their loops (and stop reporting): STOPPING=1 follows.
    if (worker::stop_requested()) return;
    if (!worker::poll_round_done(round_)) {
        // Said once, in the journal and in `systemctl status` (STATUS=, sent first).
        if (!starved_) {
            send(fmt::format("STATUS={}: a worker stopped polling", app_));
            fmt::print(stderr,
                       "{}: a worker has not polled for {:.3g} s: the systemd watchdog is no "
                       "longer pinged\n",
                       app_, now_s - pinged_s_);
        }
        starved_ = true;
        return;
    }
    if (starved_) {
        send(fmt::format("STATUS={}: running", app_));
        fmt::print(stderr, "{}: every worker polls again: watchdog pinged\n", app_);
    }
    starved_ = false;
    send("WATCHDOG=1");
    pinged_s_ = now_s;
    round_ = worker::start_poll_round();
}

void ServiceNotify::stopping() {
    send(fmt::format("STOPPING=1\nSTATUS={}: stopping", app_));
}

}  // namespace linerate
