#pragma once
// The clocks of clocksync, read in ns. Master and client read the same system clock,
// CLOCK_MONOTONIC_RAW: not slewed by NTP (a slew is a drift, up to 500 ppm, far past rho), and
// the same counter in every process of a machine, so verification mode's simulated client clock
// (derived from it) has a known true offset to the master's.
#include <time.h>

#include <cstdint>
#include <optional>

#include "clocksync/sim_clock.hpp"

namespace linerate::clocksync {

inline uint64_t clock_ns(clockid_t clock) {
    timespec ts;
    clock_gettime(clock, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

inline uint64_t system_ns() {
    return clock_ns(CLOCK_MONOTONIC_RAW);
}

// The client's local clock: the system clock, or in verification mode the simulated clock
// derived from it (every time handed to the session must come from here).
struct LocalClock {
    std::optional<SimClock> sim;

    uint64_t now() const {
        const uint64_t t = system_ns();
        return sim ? sim->local(t) : t;
    }
};

}  // namespace linerate::clocksync
