#pragma once
// A good sync with given θ, t1, t4, ε0 and ρ, for the tests of what the client publishes.
#include <cstdint>

#include "clocksync/estimator.hpp"

namespace linerate::clocksync {

inline SyncState a_sync(int64_t theta, uint64_t t1, uint64_t t4, uint64_t eps0, uint64_t rho_ppb) {
    SyncState s;
    s.synced = true;
    s.theta_ns = theta;
    s.t1 = t1;
    s.t4 = t4;
    s.eps0_ns = eps0;
    s.delta_ns = eps0 > kEpsilonSlackNs ? 2 * (eps0 - kEpsilonSlackNs) : 0;
    s.rho_ppb = rho_ppb;
    return s;
}

}  // namespace linerate::clocksync
