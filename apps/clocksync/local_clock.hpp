#pragma once
// The clocks of clocksync, read in ns. Master and client read the same system clock, by default
// CLOCK_MONOTONIC_RAW: not slewed by NTP (a slew is a drift, up to 500 ppm, far past rho), and
// the same counter in every process of a machine, so verification mode's simulated client clock
// (derived from it) has a known true offset to the master's. The XDP master reads
// CLOCK_MONOTONIC (bpf_ktime_get_ns; an XDP program has no raw clock), and its clients then read
// CLOCK_MONOTONIC too (--master-clock monotonic): NTP slews it, but one machine's processes and
// its kernel see the same slewed counter, so the offset stays known.
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

// The system clocks clocksync reads. raw: CLOCK_MONOTONIC_RAW, the default on both ends.
// realtime: CLOCK_REALTIME (Unix time: the master's for chronyd and ClockBound). monotonic:
// CLOCK_MONOTONIC, the one an XDP program reads.
enum class SystemClock : uint8_t { raw, realtime, monotonic };

constexpr clockid_t clock_id(SystemClock c) {
    return c == SystemClock::realtime    ? CLOCK_REALTIME
           : c == SystemClock::monotonic ? CLOCK_MONOTONIC
                                         : CLOCK_MONOTONIC_RAW;
}

constexpr const char* clock_name(SystemClock c) {
    return c == SystemClock::realtime    ? "CLOCK_REALTIME"
           : c == SystemClock::monotonic ? "CLOCK_MONOTONIC"
                                         : "CLOCK_MONOTONIC_RAW";
}

// The client's local clock: the system clock, or in verification mode the simulated clock
// derived from it (every time handed to the session must come from here).
struct LocalClock {
    std::optional<SimClock> sim;
    clockid_t system = CLOCK_MONOTONIC_RAW;

    uint64_t now() const { return local_of(clock_ns(system)); }
    // The local time of a reading `system_ns` of the system clock (taken elsewhere: the XDP
    // hook's receive stamp).
    uint64_t local_of(uint64_t system_ns) const { return sim ? sim->local(system_ns) : system_ns; }
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
