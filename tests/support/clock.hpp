#pragma once
// CLOCK_MONOTONIC in ns: the clock an XDP program reads (bpf_ktime_get_ns), for tests that
// bracket a BPF_PROG_TEST_RUN with reads of their own.
#include <time.h>

#include <cstdint>

namespace linerate::test {

inline uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

}  // namespace linerate::test
