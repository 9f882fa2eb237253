#include "runtime/service_notify.hpp"

#include <fmt/core.h>
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <cstdlib>

#include "worker/quiescence.hpp"

namespace linerate {

namespace {

bool manager_listens() {
    const char* socket = std::getenv("NOTIFY_SOCKET");
    return socket != nullptr && *socket != '\0';
}

// A worker silent this long is said to have stopped polling: at once in a run-to-completion
// loop (which reports every few microseconds), but after at most a second.
constexpr double kStarvedAfterMaxS = 1.0;

}  // namespace

ServiceNotify::ServiceNotify(std::string app) : app_(std::move(app)), listened_(manager_listens()) {
    uint64_t usec = 0;
    // > 0 only when WATCHDOG_USEC is set (and WATCHDOG_PID, if set, is this process).
    if (listened_ && sd_watchdog_enabled(0, &usec) > 0) ping_every_s_ = double(usec) / 2e6;
    starved_after_s_ = std::min(ping_every_s_, kStarvedAfterMaxS);
}

void ServiceNotify::send(const std::string& message) const {
    if (!listened_) return;
    if (const int rc = sd_notify(0, message.c_str()); rc < 0)
        fmt::print(stderr, "{}: warning: sd_notify({}): error {}\n", app_, message, -rc);
}

void ServiceNotify::ready(double now_s) {
    send(fmt::format("READY=1\nSTATUS={}: running", app_));
    if (ping_every_s_ == 0) return;
    pinged_s_ = round_began_s_ = polled_s_ = now_s;
    round_ = worker::start_poll_round();
    fmt::print("{}: systemd watchdog: pinged every {:.3g} s while every worker polls\n", app_,
               ping_every_s_);
}

// Rounds of quiescent reports back to back, one per tick or so (a report costs a worker one
// store per round): polled_s_ is never more than two ticks behind while every worker polls. A
// ping vouches only for a round that began once it was due, so the last ping before a stall is
// at most a tick after it, and the manager's timer (WatchdogSec from the last ping) runs out
// WatchdogSec after the stall, not an interval later.
void ServiceNotify::tick(double now_s) {
    if (ping_every_s_ == 0) return;
    // Once a stop began the workers leave their loops (and stop reporting): STOPPING=1 follows.
    if (worker::stop_requested()) return;
    if (worker::poll_round_done(round_)) {
        polled_s_ = round_began_s_;
        round_ = worker::start_poll_round();
        round_began_s_ = now_s;
    }
    if (now_s - polled_s_ >= starved_after_s_) {
        say_starved(now_s);
        return;
    }
    if (starved_) {
        send(fmt::format("STATUS={}: {}", app_, status_.empty() ? "running" : status_));
        fmt::print(stderr, "{}: every worker polls again: watchdog pinged\n", app_);
        starved_ = false;
    }
    if (polled_s_ < pinged_s_ + ping_every_s_) return;  // not due, or no round since it fell due
    send("WATCHDOG=1");
    pinged_s_ = now_s;
}

// Said once, in the journal and in `systemctl status` (STATUS=, sent first).
void ServiceNotify::say_starved(double now_s) {
    if (starved_) return;
    starved_ = true;
    send(fmt::format("STATUS={}: a worker stopped polling", app_));
    fmt::print(stderr,
               "{}: a worker has not polled for {:.3g} s: the systemd watchdog is no longer "
               "pinged\n",
               app_, now_s - polled_s_);
}

void ServiceNotify::status(const std::string& text) {
    status_ = text;
    if (!starved_) send(fmt::format("STATUS={}: {}", app_, text));
}

void ServiceNotify::stopping() {
    send(fmt::format("STOPPING=1\nSTATUS={}: stopping", app_));
}

void notify_error_line(const std::string& line) {
    if (!manager_listens()) return;
    std::string text = line;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    if (sd_notify(0, ("STATUS=" + text).c_str()) <= 0) return;
    // The manager takes a notification as its service's only while the sender's PID is its
    // main PID: once it has read this one, the exit may follow.
    sd_notify_barrier(0, 5'000'000);
}

}  // namespace linerate
