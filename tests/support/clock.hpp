#pragma once
// CLOCK_MONOTONIC in ns: the clock an XDP program reads (bpf_ktime_get_ns), for tests that
// bracket a BPF_PROG_TEST_RUN with reads of their own; CLOCK_MONOTONIC_RAW in ns: the clocksync
// master's default clock, for tests that bracket its stamps.
#include <time.h>

#include <cstdint>

namespace linerate::test {

inline uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

inline uint64_t monotonic_raw_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

}  // namespace linerate::test
