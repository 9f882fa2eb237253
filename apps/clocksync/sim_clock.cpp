#include "clocksync/sim_clock.hpp"

#include <cmath>
#include <stdexcept>

#include "linerate/truetime.h"

namespace linerate::clocksync {

namespace {
using i128 = __int128;
constexpr int64_t kBillion = 1'000'000'000;

i128 floor_div(i128 a, i128 b) {  // b > 0
    i128 q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}
}  // namespace

SimClock SimClock::from_ppm(int64_t offset_ns, double drift_ppm, uint64_t epoch_ns) {
    if (!(drift_ppm > -1e6 && drift_ppm < 1e6)) {
        throw std::invalid_argument("simulated drift must be within (-1e6, 1e6) ppm");
    }
    return SimClock{offset_ns, std::llround(drift_ppm * 1000), epoch_ns};
}

uint64_t SimClock::local(uint64_t master) const {
    return tt_sim_local(master, offset_ns, drift_ppb, epoch_ns);  // shared with the page readers
}

// At master time epoch + s the real-valued local clock reads epoch + offset + w with
// w = s·(1e9 + p)/1e9, so at local reading g: w = g − offset − epoch, s = w·1e9/(1e9 + p),
// and the true offset master − local = s − w − offset = −(w·p/(1e9 + p)) − offset.
int64_t SimClock::true_offset_at(uint64_t local) const {
    i128 w = int64_t(local - uint64_t(offset_ns) - epoch_ns);
    i128 den = kBillion + drift_ppb;
    return int64_t(floor_div(-w * drift_ppb - i128(offset_ns) * den, den));
}

bool SimClock::within(uint64_t local, int64_t theta_ns, uint64_t eps_ns) const {
    i128 w = int64_t(local - uint64_t(offset_ns) - epoch_ns);
    i128 den = kBillion + drift_ppb;
    // |true − θ|·den = |−w·p − (offset + θ)·den|, compared with ε·den: all exact integers.
    i128 err = -w * drift_ppb - (i128(offset_ns) + theta_ns) * den;
    if (err < 0) err = -err;
    return err <= i128(eps_ns) * den;
}

}  // namespace linerate::clocksync
