#include "clocksync/estimator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "linerate/truetime.h"

namespace linerate::clocksync {

namespace {
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
}  // namespace

std::optional<Measurement> measure(const Timestamps& ts) {
    int64_t turnaround = diff_ns(ts.t3, ts.t2);
    int64_t local_rtt = diff_ns(ts.t4, ts.t1);
    // Both checks keep the subtraction below from overflowing: both operands are >= 0.
    if (turnaround < 0 || local_rtt < turnaround) return std::nullopt;
    int64_t delta = local_rtt - turnaround;
    // (t3 − t4) = (t2 − t1) − δ, so θ = (t2 − t1) − δ/2: one large difference, no sum of two
    // large ones. Flooring δ/2 rounds θ up by at most 0.5 ns (covered by kEpsilonSlackNs).
    int64_t theta = int64_t(uint64_t(diff_ns(ts.t2, ts.t1)) - uint64_t(delta / 2));
    return Measurement{theta, delta, ts.t1, ts.t4};
}

uint64_t drift_bound_ppb(double ppm) {
    if (!(ppm >= 0 && ppm <= kMaxDriftBoundPpm)) {
        throw std::invalid_argument("drift bound must be within [0, 100000] ppm");
    }
    return uint64_t(std::ceil(ppm * 1000));
}

uint64_t drift_ns(uint64_t rho_ppb, uint64_t span_ns) {
    return tt_drift_ns(rho_ppb, span_ns);
}

// One formula for the client and the readers of its exported page (linerate/truetime.h).
uint64_t SyncState::epsilon_at(uint64_t local) const {
    if (!synced) return kMax;
    return tt_epsilon_ns(eps0_ns, rho_ppb, t1, t4, local);
}

ClockEstimator::ClockEstimator(double drift_bound_ppm, Estimator rule)
    : rho_ppb_(drift_bound_ppb(drift_bound_ppm)), rule_(rule) {
    state_.rho_ppb = rho_ppb_;
}

bool ClockEstimator::offer(const Timestamps& ts) {
    auto m = measure(ts);
    if (!m) return false;
    filter_.offer(*m);
    if (offered_ < round_.size()) round_[offered_++] = *m;
    return true;
}

namespace {
uint64_t eps0_of(const Measurement& m) {
    return (uint64_t(m.delta_ns) + 1) / 2 + kEpsilonSlackNs;
}
}  // namespace

// The bound a probe's sync would give at local time `local`.
uint64_t ClockEstimator::epsilon_of(const Measurement& m, uint64_t local) const {
    return tt_epsilon_ns(eps0_of(m), rho_ppb_, m.t1, m.t4, local);
}

bool ClockEstimator::keeps_previous(uint64_t keep_ns) const {
    const auto& best = filter_.best();
    if (rule_ != Estimator::min_rtt || !best || !state_.synced || keep_ns == 0) return false;
    if (diff_ns(best->t4, state_.t4) > int64_t(keep_ns)) return false;
    return state_.epsilon_at(best->t4) <= epsilon_of(*best, best->t4);
}

void ClockEstimator::keep_runner_up(const Measurement& m) {
    if (!runner_up_ || epsilon_of(m, m.t4) < epsilon_of(*runner_up_, m.t4)) runner_up_ = m;
}

void ClockEstimator::sync_to(const Measurement& m) {
    state_.synced = true;
    state_.theta_ns = m.theta_ns;
    state_.delta_ns = uint64_t(m.delta_ns);
    state_.eps0_ns = eps0_of(m);
    state_.t1 = m.t1;
    state_.t4 = m.t4;
}

void ClockEstimator::end_min_rtt_round(uint64_t keep_ns) {
    const Measurement& best = *filter_.best();
    if (keeps_previous(keep_ns)) {
        ++kept_;
        keep_runner_up(best);
        return;
    }
    // Replaced: by the tighter bound, or (the sync kept keep_ns long) the tightest since it.
    Measurement next = best;
    if (runner_up_ && epsilon_of(*runner_up_, best.t4) < epsilon_of(best, best.t4)) {
        next = *runner_up_;
        ++runner_up_syncs_;
    }
    runner_up_.reset();
    sync_to(next);
}

namespace {
// Offsets relative to a reference θ (wrap-safe: θ's are u64 differences), 128 bits wide so that
// any θ ± ε fits.
struct OffsetInterval {
    __int128 lo = 0, hi = 0;
    // Narrows to its intersection with θ ± ε.
    void narrow(int64_t ref, int64_t theta, uint64_t eps) {
        const __int128 at = diff_ns(uint64_t(theta), uint64_t(ref));
        lo = std::max(lo, at - __int128(eps));
        hi = std::min(hi, at + __int128(eps));
    }
};
}  // namespace

// Every interval holds the true offset at `at` (a probe's ε grown by drift from its t1, the
// sync's from its own), so their intersection does, and so does [θ − ε₀, θ + ε₀] around its
// middle: whole ns, θ the floor of the middle and ε₀ the ceil of the half-width. From `at` on
// the offset moves at most drift(|t − at|): the new sync's t1 = t4 = at.
void ClockEstimator::end_intersect_round() {
    const Measurement& best = *filter_.best();
    uint64_t at = best.t4;
    for (unsigned i = 0; i < offered_; ++i)
        if (diff_ns(round_[i].t4, at) > 0) at = round_[i].t4;
    const uint64_t best_eps = epsilon_of(best, at);
    OffsetInterval in{-__int128(best_eps), __int128(best_eps)};
    for (unsigned i = 0; i < offered_; ++i)
        in.narrow(best.theta_ns, round_[i].theta_ns, epsilon_of(round_[i], at));
    if (state_.synced) in.narrow(best.theta_ns, state_.theta_ns, state_.epsilon_at(at));
    if (in.lo > in.hi) {  // some bound was wrong: the round's least-delay probe alone
        ++intersections_empty_;
        sync_to(best);
        return;
    }
    const __int128 width = in.hi - in.lo;
    const __int128 half = width - width / 2;  // [mid − half, mid + half] ⊇ [lo, hi]
    state_.synced = true;
    state_.theta_ns = int64_t(uint64_t(best.theta_ns) + uint64_t(in.lo + width / 2));
    state_.eps0_ns = half > __int128(kMax) ? kMax : uint64_t(half);
    state_.delta_ns = uint64_t(best.delta_ns);
    state_.t1 = at;
    state_.t4 = at;
}

bool ClockEstimator::end_round(uint64_t keep_ns) {
    if (!filter_.best()) return false;
    ++syncs_;
    if (rule_ == Estimator::intersect)
        end_intersect_round();
    else
        end_min_rtt_round(keep_ns);
    filter_.reset();
    offered_ = 0;
    return true;
}

}  // namespace linerate::clocksync
