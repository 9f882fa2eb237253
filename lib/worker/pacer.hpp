#pragma once
// TSC pacing: a worker may send while what it has sent (frames, or wire bytes for a Gb/s rate)
// stays within rate x elapsed time. A worker that falls behind (TX ring full, a preemption) may
// catch up by at most `max_lag` units, so it never fires a long burst to make up for a stall.
// Plain arithmetic on TSC values: no EAL, unit-tested with made-up clocks.
#include <cstdint>

namespace linerate::worker {

class Pacer {
  public:
    Pacer() = default;  // unpaced: always may send
    // units_per_s > 0: frames per second, or wire bytes per second.
    Pacer(double units_per_s, uint64_t tsc_hz, uint64_t start_tsc, double max_lag)
        : per_cycle_(units_per_s / double(tsc_hz)), start_(start_tsc), max_lag_(max_lag) {}

    bool paced() const { return per_cycle_ > 0; }

    // Units the worker may still send at `now` (<= 0: wait). Pulls the account forward when the
    // worker lags by more than max_lag.
    double credit(uint64_t now) {
        if (!paced()) return 1e300;
        const double allowed = double(now - start_) * per_cycle_;
        if (allowed - spent_ > max_lag_) spent_ = allowed - max_lag_;
        return allowed - spent_;
    }

    void spend(double units) { spent_ += units; }

  private:
    double per_cycle_ = 0;
    uint64_t start_ = 0;
    double max_lag_ = 0;
    double spent_ = 0;
};

}  // namespace linerate::worker
