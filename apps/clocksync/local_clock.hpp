#pragma once
// The clocks of clocksync, read in ns. Master and client read the same system clock,
// CLOCK_MONOTONIC_RAW: not slewed by NTP (a slew is a drift, up to 500 ppm, far past rho), and
// the same counter in every process of a machine, so verification mode's simulated client clock
// (derived from it) has a known true offset to the master's.
#include <time.h>

#include <algorithm>
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

// The host's CLOCK_REALTIME at the instant of a local reading: read on both sides of it, the
// midpoint paired with it, the half-width the most that pairing can be off (--chrony-shm's
// sample, --clockbound's distance of CLOCK_REALTIME from the synchronized clock).
struct RealtimePair {
    uint64_t local_ns = 0;
    uint64_t realtime_ns = 0;  // since the Unix epoch
    uint64_t half_width_ns = 0;
};

inline RealtimePair read_realtime_pair(const LocalClock& local) {
    const uint64_t before = clock_ns(CLOCK_REALTIME);
    const uint64_t at = local.now();
    const uint64_t after = clock_ns(CLOCK_REALTIME);
    // A step of CLOCK_REALTIME between the two reads may put `after` first: the span is then
    // unknown, and the midpoint is as good as either read.
    const uint64_t span = after >= before ? after - before : before - after;
    return {at, std::min(before, after) + span / 2, (span + 1) / 2};
}

}  // namespace linerate::clocksync
