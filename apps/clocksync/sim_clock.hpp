#pragma once
// Verification mode: a client clock derived from the master's, X ns off and Y ppm fast, so the
// true offset at any local reading is known and ε can be checked against it.
//   local(t) = t + offset_ns + floor((t − epoch_ns) · drift_ppb / 1e9)     (mod 2^64)
// epoch_ns is where the drift term is zero (the run's start; tests put it near 2^64 to make
// the counters wrap). Drift is kept in whole ppb.
#include <cstdint>

namespace linerate::clocksync {

struct SimClock {
    int64_t offset_ns = 0;
    int64_t drift_ppb = 0;  // > -1e9
    uint64_t epoch_ns = 0;

    // drift in ppm rounded to the nearest ppb; throws std::invalid_argument at <= -1e6 ppm.
    static SimClock from_ppm(int64_t offset_ns, double drift_ppm, uint64_t epoch_ns = 0);

    // The client's reading at master time `master`.
    uint64_t local(uint64_t master) const;
    // True offset (master − local) at the instant the local clock reads `local`, rounded down.
    int64_t true_offset_at(uint64_t local) const;
    // Exact test of |true offset − theta| <= eps at local reading `local` (rational arithmetic,
    // no rounding, so a reported violation is real).
    bool within(uint64_t local, int64_t theta_ns, uint64_t eps_ns) const;
};

}  // namespace linerate::clocksync
