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

// CLOCK_MONOTONIC's rate against CLOCK_MONOTONIC_RAW at most: the kernel's tick adjustment
// (adjtimex ADJ_TICK, ±10%) times its frequency adjustment (±500 ppm), in parts of 10^5.
inline constexpr uint64_t kMonotonicMaxRate_1e5 = 110'055;

// The client's local clock: the system clock, or in verification mode the simulated clock
// derived from it (every time handed to the session must come from here).
struct LocalClock {
    std::optional<SimClock> sim;
    clockid_t system = CLOCK_MONOTONIC_RAW;

    uint64_t now() const { return local_of(clock_ns(system)); }
    // The local time of a reading `system_ns` of the system clock.
    uint64_t local_of(uint64_t system_ns) const { return sim ? sim->local(system_ns) : system_ns; }

    // A reading of the local clock, with CLOCK_MONOTONIC read right before it: what converts a
    // stamp of the XDP hook's clock taken a moment earlier (`monotonic` 0: not read).
    struct Reading {
        uint64_t local = 0;
        uint64_t system_ns = 0;
        uint64_t monotonic = 0;
    };
    Reading read(bool with_monotonic) const {
        Reading r;
        if (with_monotonic && system != CLOCK_MONOTONIC) r.monotonic = clock_ns(CLOCK_MONOTONIC);
        r.system_ns = clock_ns(system);
        r.local = local_of(r.system_ns);
        if (system == CLOCK_MONOTONIC) r.monotonic = r.system_ns;
        return r;
    }

    // The local time of `stamp`, a CLOCK_MONOTONIC reading taken before `at`, never earlier
    // than the true instant (a late receive stamp stays late). On CLOCK_MONOTONIC it is the
    // stamp itself. On CLOCK_MONOTONIC_RAW the time since the stamp on CLOCK_MONOTONIC, shrunk
    // by the fastest rate the kernel may give that clock, comes off the raw reading: no more
    // than the raw time really elapsed (which also covers the span between the two reads).
    // nullopt on another clock, or for a stamp after `at` (not one of this instant's frames).
    std::optional<uint64_t> local_of_monotonic(uint64_t stamp, const Reading& at) const {
        if (system != CLOCK_MONOTONIC && system != CLOCK_MONOTONIC_RAW) return std::nullopt;
        if (at.monotonic == 0 || stamp > at.monotonic) return std::nullopt;
        if (system == CLOCK_MONOTONIC) return local_of(stamp);
        const uint64_t raw_since = (at.monotonic - stamp) * 100'000 / kMonotonicMaxRate_1e5;
        return local_of(at.system_ns - raw_since);
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
