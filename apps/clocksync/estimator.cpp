#include "clocksync/estimator.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace linerate::clocksync {

namespace {
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

uint64_t add_sat(uint64_t a, uint64_t b) {
    return a > kMax - b ? kMax : a + b;
}
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
    using u128 = unsigned __int128;
    if (rho_ppb >= 1'000'000'000u) return kMax;  // no bound at all
    u128 den = 1'000'000'000u - rho_ppb;         // rho_ppb <= 1e8 (kMaxDriftBoundPpm)
    u128 ns = (u128(rho_ppb) * span_ns + den - 1) / den;
    return ns > kMax ? kMax : uint64_t(ns);
}

uint64_t SyncState::epsilon_at(uint64_t local) const {
    if (!synced) return kMax;
    // ρ·(t − t1) for t >= t4. Before t4 the offset at t4 anchors the bound, so the drift span
    // is (t4 − t1) + |t − t4|, which equals t − t1 from t4 on.
    int64_t since = diff_ns(local, t4);
    uint64_t dist = since >= 0 ? uint64_t(since) : uint64_t(0) - uint64_t(since);
    uint64_t span = uint64_t(diff_ns(t4, t1)) + dist;  // t4 − t1 in [0, 2^63): no overflow
    return add_sat(eps0_ns, drift_ns(rho_ppb, span));
}

ClockEstimator::ClockEstimator(double drift_bound_ppm)
    : rho_ppb_(drift_bound_ppb(drift_bound_ppm)) {
    state_.rho_ppb = rho_ppb_;
}

bool ClockEstimator::offer(const Timestamps& ts) {
    auto m = measure(ts);
    if (!m) return false;
    filter_.offer(*m);
    return true;
}

bool ClockEstimator::end_round() {
    const auto& best = filter_.best();
    if (!best) return false;
    state_.synced = true;
    state_.theta_ns = best->theta_ns;
    state_.delta_ns = uint64_t(best->delta_ns);
    state_.eps0_ns = (state_.delta_ns + 1) / 2 + kEpsilonSlackNs;
    state_.t1 = best->t1;
    state_.t4 = best->t4;
    ++syncs_;
    filter_.reset();
    return true;
}

}  // namespace linerate::clocksync
