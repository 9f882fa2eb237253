#pragma once
// What the runtime tells a service manager that started it with a notification socket (systemd's
// Type=notify, sd_notify(3); the units under dist/systemd/, docs/operations.md):
// - READY=1 once start-up is over (ports up, the app's state loaded), as the `running` line is
//   printed: the unit becomes active only then;
// - STOPPING=1 when a stop begins;
// - with a watchdog asked for (WatchdogSec=, so WATCHDOG_USEC), WATCHDOG=1 at half its interval
//   from the main lcore's monitor, only while every polling worker keeps reporting quiescent
//   states (worker/quiescence.hpp): a worker that stops polling stops the pings, and the manager
//   kills and restarts the service.
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
    // The monitor's tick: WATCHDOG=1 when an interval has passed and every worker polled in it.
    void tick(double now_s);
    void stopping();

  private:
    void send(const std::string& message) const;

    std::string app_;
    bool listened_ = false;    // a manager gave a notification socket
    double ping_every_s_ = 0;  // half the manager's watchdog interval; 0: no watchdog
    double pinged_s_ = 0;      // when the last interval began
    uint64_t round_ = 0;       // the quiescence round started then (worker::start_poll_round)
    bool starved_ = false;     // a worker stopped polling (said once, until it polls again)
};

}  // namespace linerate
