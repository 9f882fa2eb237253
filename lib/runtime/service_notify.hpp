#pragma once
// What the runtime tells a service manager that started it with a notification socket (systemd's
// Type=notify, sd_notify(3); the units under dist/systemd/, docs/operations.md):
// - READY=1 once start-up is over (ports up, the app's state loaded), as the `running` line is
//   printed: the unit becomes active only then;
// - STATUS= with what `systemctl status` shows: `running`, a feature's state (a time
//   client: synchronized or not), a stalled worker, and the error line a failed start ends with;
// - STOPPING=1 when a stop begins;
// - with a watchdog asked for (WatchdogSec=, so WATCHDOG_USEC), WATCHDOG=1 at half its interval
//   from the main lcore's monitor, each only once every polling worker has reported a quiescent
//   state (worker/quiescence.hpp) since that ping fell due: a worker that stops polling stops
//   the pings at once, and the manager kills the service WatchdogSec after the last one.
// Without NOTIFY_SOCKET every call does nothing.
#include <cstdint>
#include <string>

namespace linerate {

class ServiceNotify {
  public:
    explicit ServiceNotify(std::string app);

    // Start-up is over; `now_s` starts the first watchdog interval. Says (one line) when the
    // watchdog is on.
    void ready(double now_s);
    // The monitor's tick (every few ms): a round of quiescent reports ends and the next begins;
    // WATCHDOG=1 once a ping is due and a round that began after it fell due has ended.
    void tick(double now_s);
    // STATUS=APP: `text` (a feature's state), unless a stalled worker's status stands.
    void status(const std::string& text);
    void stopping();

  private:
    void send(const std::string& message) const;
    void say_starved(double now_s);

    std::string app_;
    bool listened_ = false;       // a manager gave a notification socket
    double ping_every_s_ = 0;     // half the manager's watchdog interval; 0: no watchdog
    double starved_after_s_ = 0;  // a worker silent this long is said to have stopped polling
    double pinged_s_ = 0;         // when the last ping was sent (or the run began)
    uint64_t round_ = 0;          // the quiescence round in progress (worker::start_poll_round)
    double round_began_s_ = 0;    // when it began
    double polled_s_ = 0;   // every worker has reported since then: the last ended round's start
    bool starved_ = false;  // a worker stopped polling (said once, until it polls again)
    std::string status_;    // the last STATUS= text a feature gave
};

// A start that fails (a usage error, exit 2; a start-up failure, exit 1) ends with one error
// line on stderr; under a service manager it is also STATUS=, so that `systemctl status` shows
// why, and the call returns once the manager has read it (the process exits right after, and a
// message read after the exit could not be told to be the service's). Any thread, any time.
void notify_error_line(const std::string& line);

}  // namespace linerate
