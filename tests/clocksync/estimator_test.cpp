#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <random>
#include <stdexcept>

#include "clocksync/estimator.hpp"
#include "clocksync/sim_clock.hpp"

using namespace linerate::clocksync;

namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// One probe on a client clock `offset` ns off (local = master + offset, mod 2^64), sent at
// master time m: up, turnaround and down delays in ns.
Timestamps probe(uint64_t m, int64_t offset, uint64_t up, uint64_t turn, uint64_t down) {
    Timestamps ts;
    ts.t1 = m + uint64_t(offset);
    ts.t2 = m + up;
    ts.t3 = ts.t2 + turn;
    ts.t4 = ts.t3 + down + uint64_t(offset);
    return ts;
}

}  // namespace

TEST(CsEstimator, ThetaAndDeltaFromDesignFormulas) {
    // Master 4000 ns ahead of the client; 1000 ns each way, 500 ns in the master.
    Timestamps ts{1000, 6000, 6500, 3500};
    auto m = measure(ts);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->theta_ns, 4000);  // ((6000 − 1000) + (6500 − 3500)) / 2
    EXPECT_EQ(m->delta_ns, 2000);  // (3500 − 1000) − (6500 − 6000)
    EXPECT_EQ(m->t1, 1000u);
    EXPECT_EQ(m->t4, 3500u);
}

TEST(CsEstimator, AsymmetricPathErrorIsWithinHalfDelta) {
    auto m = measure(probe(1'000'000, -4000, 3000, 500, 1000));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->delta_ns, 4000);
    EXPECT_EQ(m->theta_ns, 4000 + 1000);  // (up − down)/2 of error
    EXPECT_LE(std::abs(m->theta_ns - 4000), m->delta_ns / 2);
}

TEST(CsEstimator, OddDeltaRoundsThetaUpByHalf) {
    auto m = measure(probe(10'000, 0, 3, 0, 0));  // exact θ = 1.5, δ = 3
    ASSERT_TRUE(m);
    EXPECT_EQ(m->delta_ns, 3);
    EXPECT_EQ(m->theta_ns, 2);
    m = measure(probe(10'000, 0, 0, 0, 3));  // exact θ = −1.5
    ASSERT_TRUE(m);
    EXPECT_EQ(m->theta_ns, -1);
}

TEST(CsEstimator, NegativeDeltaRejected) {
    // The master claims to have held the packet longer than the client's whole round trip.
    EXPECT_FALSE(measure(Timestamps{1000, 5000, 7000, 2000}));
    // t3 < t2: no clock can produce it.
    EXPECT_FALSE(measure(Timestamps{1000, 5000, 4999, 9000}));
    // t4 < t1 as well.
    EXPECT_FALSE(measure(Timestamps{1000, 5000, 5000, 999}));
    // δ = 0 is possible (zero-delay link) and kept.
    auto m = measure(Timestamps{1000, 5000, 5100, 1100});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->delta_ns, 0);
    EXPECT_EQ(m->theta_ns, 4000);
}

TEST(CsEstimator, LargeOffsetsBothWays) {
    const int64_t e18 = 1'000'000'000'000'000'000;
    // Client 1e18 ns ahead of a master near 0.
    auto m = measure(probe(5000, e18, 700, 100, 900));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->delta_ns, 1600);
    EXPECT_EQ(m->theta_ns, -e18 - 100);
    // Client 1e18 ns behind a master at 2e18.
    m = measure(probe(2 * uint64_t(e18), -e18, 700, 100, 900));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->theta_ns, e18 - 100);
    // Near the int64 limit: ±9.2e18 still exact.
    const int64_t huge = std::numeric_limits<int64_t>::max() - 1'000'000;
    m = measure(probe(123, huge, 1000, 0, 1000));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->theta_ns, -huge);
    m = measure(probe(123, -huge, 1000, 0, 1000));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->theta_ns, huge);
}

TEST(CsEstimator, CountersWrap) {
    // Master counter wraps between t2 and t3; client counter wraps between t1 and t4.
    uint64_t m = kU64Max - 800;  // t2 = m + 500 before the wrap, t3 = t2 + 600 after it
    auto ts = probe(m, -300, 500, 600, 400);
    ASSERT_LT(ts.t3, ts.t2);
    ASSERT_LT(ts.t4, ts.t1);
    auto r = measure(ts);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->delta_ns, 900);
    EXPECT_EQ(r->theta_ns, 300 + 50);
    // Local counter near 2^64, master near 0 (offset crosses the wrap).
    ts = probe(100, -1000, 500, 0, 500);
    ASSERT_GT(ts.t1, uint64_t(1) << 63);
    r = measure(ts);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->theta_ns, 1000);
    EXPECT_EQ(r->delta_ns, 1000);

    SyncState s;
    s.theta_ns = 1000;
    EXPECT_EQ(s.to_master(kU64Max - 499), 500u);  // local + θ wraps too
    s.theta_ns = -1000;
    EXPECT_EQ(s.to_master(10), kU64Max - 989);
}

TEST(CsEstimator, RandomProbesBoundTheTrueOffset) {
    std::mt19937_64 rng(11);
    for (int i = 0; i < 100000; ++i) {
        uint64_t m = rng();
        auto offset = int64_t(rng() >> 2) * (rng() % 2 ? 1 : -1);  // |offset| < 2^62
        uint64_t up = rng() % 100000, turn = rng() % 10000, down = rng() % 100000;
        auto r = measure(probe(m, offset, up, turn, down));
        ASSERT_TRUE(r);
        ASSERT_EQ(r->delta_ns, int64_t(up + down));
        // Integer clocks here: error <= δ/2, rounded up.
        ASSERT_LE(std::abs(r->theta_ns + offset), (r->delta_ns + 1) / 2);
    }
}

TEST(CsEstimator, DriftBoundRoundsUp) {
    EXPECT_EQ(drift_bound_ppb(10), 10000u);
    EXPECT_EQ(drift_bound_ppb(0), 0u);
    EXPECT_EQ(drift_bound_ppb(0.0015), 2u);
    EXPECT_THROW(drift_bound_ppb(-1), std::invalid_argument);
    EXPECT_THROW(drift_bound_ppb(kMaxDriftBoundPpm + 1), std::invalid_argument);
    EXPECT_THROW(drift_bound_ppb(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);

    // 10 µs per master second is 10.0001 µs per local second of a clock 10 ppm slow.
    EXPECT_EQ(drift_ns(10000, 1'000'000'000), 10001u);
    EXPECT_EQ(drift_ns(10000, 100'000'000), 1001u);
    EXPECT_EQ(drift_ns(10000, 99'999'000), 1000u);  // exactly 1000: no rounding
    EXPECT_EQ(drift_ns(10000, 1), 1u);              // any span > 0 costs at least 1 ns
    EXPECT_EQ(drift_ns(10000, 0), 0u);
    EXPECT_EQ(drift_ns(0, kU64Max), 0u);
    EXPECT_EQ(drift_ns(10000, kU64Max), 184469285429950u);  // no overflow
    EXPECT_EQ(drift_ns(100'000'000, kU64Max), 2049638230412172402u);
    EXPECT_EQ(drift_ns(1'000'000'000, 1), kU64Max);
}

TEST(CsEstimator, EpsilonGrowsFromSync) {
    ClockEstimator est(10, Estimator::min_rtt);     // the probe itself is the sync
    EXPECT_EQ(est.state().epsilon_at(0), kU64Max);  // not synced yet
    est.begin_round();
    ASSERT_TRUE(est.offer(Timestamps{1000, 6000, 6500, 3500}));
    ASSERT_TRUE(est.end_round());
    const SyncState& s = est.state();
    EXPECT_TRUE(s.synced);
    EXPECT_EQ(s.theta_ns, 4000);
    EXPECT_EQ(s.delta_ns, 2000u);
    EXPECT_EQ(s.eps0_ns, 1000 + kEpsilonSlackNs);
    EXPECT_EQ(s.t1, 1000u);
    EXPECT_EQ(s.t4, 3500u);
    EXPECT_EQ(s.to_master(3500), 7500u);

    const uint64_t e0 = s.eps0_ns;
    EXPECT_EQ(s.epsilon_at(1000 + 1'000'000'000), e0 + 10001);  // ρ·1 s, see drift_ns
    EXPECT_EQ(s.epsilon_at(1000 + 100'000'000), e0 + 1001);     // ρ·100 ms
    EXPECT_EQ(s.epsilon_at(1000 + 99'999'000), e0 + 1000);
    EXPECT_EQ(s.epsilon_at(1000 + 10'000'000'000ull), e0 + 100002);
    EXPECT_EQ(s.epsilon_at(3500), e0 + 1);  // drift during the probe itself, rounded up
    uint64_t prev = 0;
    for (uint64_t t = 3500; t < 3500 + 50'000'000; t += 999'983) {
        uint64_t e = s.epsilon_at(t);
        EXPECT_GE(e, prev);
        EXPECT_GE(e, e0 + (t - 1000) / 100000);
        prev = e;
    }
    // Before the probe completed the bound still holds, growing away from t4.
    EXPECT_EQ(s.epsilon_at(3500 - 100'000'000), e0 + drift_ns(10000, 2500 + 100'000'000));
}

TEST(CsEstimator, EpsilonSaturates) {
    SyncState s;
    s.synced = true;
    s.eps0_ns = kU64Max - 5;
    s.rho_ppb = 100'000'000;
    s.t1 = 0;
    s.t4 = 0;
    EXPECT_EQ(s.epsilon_at(uint64_t(1) << 62), kU64Max);
}

TEST(CsEstimator, MinRttFilterPicksSmallestDelta) {
    ClockEstimator est(kDefaultDriftBoundPpm, Estimator::min_rtt);
    est.begin_round();
    // Same true offset (+4000), three different queueing delays.
    ASSERT_TRUE(est.offer(probe(10'000, -4000, 9000, 100, 1000)));  // δ 10000, θ err +4000
    ASSERT_TRUE(est.offer(probe(20'000, -4000, 600, 100, 400)));    // δ 1000, θ err +100
    ASSERT_TRUE(est.offer(probe(30'000, -4000, 1000, 100, 3000)));  // δ 4000
    EXPECT_FALSE(est.offer(Timestamps{1000, 5000, 7000, 2000}));    // δ < 0: not used
    ASSERT_TRUE(est.end_round());
    EXPECT_EQ(est.state().delta_ns, 1000u);
    EXPECT_EQ(est.state().theta_ns, 4100);
    EXPECT_EQ(est.state().t1, 20'000u - 4000);

    MinRttFilter f;
    EXPECT_FALSE(f.best());
    f.offer(Measurement{1, 50, 0, 0});
    f.offer(Measurement{2, 50, 0, 0});  // a tie keeps the first
    f.offer(Measurement{3, 70, 0, 0});
    EXPECT_EQ(f.best()->theta_ns, 1);
    f.reset();
    EXPECT_FALSE(f.best());
}

TEST(CsEstimator, LostRoundKeepsPreviousSync) {
    ClockEstimator est(10);
    est.begin_round();
    est.offer(probe(1'000'000, 0, 500, 0, 500));
    ASSERT_TRUE(est.end_round());
    SyncState before = est.state();
    uint64_t eps_at_200ms = before.epsilon_at(1'000'000 + 200'000'000);

    est.begin_round();  // every probe lost
    EXPECT_FALSE(est.has_candidate());
    EXPECT_FALSE(est.end_round());
    est.begin_round();  // only garbage
    EXPECT_FALSE(est.offer(Timestamps{1000, 5000, 7000, 2000}));
    EXPECT_FALSE(est.end_round());

    EXPECT_EQ(est.syncs(), 1u);
    EXPECT_EQ(est.state().theta_ns, before.theta_ns);
    EXPECT_EQ(est.state().t1, before.t1);
    EXPECT_EQ(est.state().epsilon_at(1'000'000 + 200'000'000), eps_at_200ms);
    EXPECT_GT(eps_at_200ms, before.epsilon_at(1'000'000 + 100'000'000));  // still growing
}

// A round of one probe sent at m (true offset 0), ended with keep_ns.
bool one_probe_round(ClockEstimator& est, uint64_t keep_ns, uint64_t m, uint64_t up,
                     uint64_t down) {
    est.begin_round();
    EXPECT_TRUE(est.offer(probe(m, 0, up, 0, down)));
    return est.end_round(keep_ns);
}

// keep_ns: a round's probe replaces the sync only when it is the tighter bound at its t4, or
// the sync is older than keep_ns.
TEST(CsEstimator, KeepsThePreviousSyncWhileItIsTheTighterBound) {
    ClockEstimator est(10, Estimator::min_rtt);  // 1001 ns per 100 ms
    const uint64_t keep = 250'000'000;
    auto round = [&](uint64_t m, uint64_t up, uint64_t down) {
        return one_probe_round(est, keep, m, up, down);
    };
    ASSERT_TRUE(round(0, 500, 500));  // δ 1000: ε0 503
    const SyncState first = est.state();
    // 100 ms on, the old ε is 503 + 1001 = 1504; a probe of δ 4000 would start at 2003.
    EXPECT_TRUE(round(100'000'000, 2000, 2000));  // a good round: the sync stays
    EXPECT_EQ(est.state().t1, first.t1);
    EXPECT_EQ(est.kept(), 1u);
    EXPECT_EQ(est.syncs(), 2u);
    // 200 ms on, 2505 against δ 4000's 2003: the probe wins.
    EXPECT_TRUE(round(200'000'000, 2000, 2000));
    EXPECT_EQ(est.state().t1, 200'000'000u);
    EXPECT_EQ(est.state().delta_ns, 4000u);
    // Never past keep_ns: 300 ms after, a sync of ε0 2003 is 2003 + 3003 ns; a probe of δ
    // 20000 (ε0 10003) replaces it all the same.
    EXPECT_TRUE(round(300'000'000, 10'000, 10'000));  // 100 ms old: kept
    EXPECT_TRUE(round(400'000'000, 10'000, 10'000));  // 200 ms: kept
    EXPECT_EQ(est.state().delta_ns, 4000u);
    EXPECT_TRUE(round(500'000'000, 10'000, 10'000));  // 300 ms > keep: replaced
    EXPECT_EQ(est.state().delta_ns, 20'000u);
    EXPECT_EQ(est.kept(), 3u);
    // keep_ns 0: every round replaces.
    est.begin_round();
    est.offer(probe(600'000'000, 0, 30'000, 0, 30'000));
    EXPECT_FALSE(est.keeps_previous(0));
    EXPECT_TRUE(est.end_round());
    EXPECT_EQ(est.state().delta_ns, 60'000u);
}

// A sync kept keep_ns long goes to the tightest bound of the rounds since it (the runner-up),
// not to the round that happens to end then, however loose.
TEST(CsEstimator, AnOldSyncGoesToTheTightestRoundSinceIt) {
    ClockEstimator est(10, Estimator::min_rtt);                     // 1001 ns per 100 ms
    const uint64_t k = 250'000'000;                                 // keep_ns
    ASSERT_TRUE(one_probe_round(est, k, 0, 500, 500));              // δ 1000: ε0 503
    EXPECT_TRUE(one_probe_round(est, k, 100'000'000, 2000, 2000));  // δ 4000, ε0 2003 > 1504: kept
    EXPECT_TRUE(one_probe_round(est, k, 200'000'000, 4000, 4000));  // δ 8000, ε0 4003 > 2505: kept
    EXPECT_TRUE(
        one_probe_round(est, k, 300'000'000, 400'000, 400'000));  // a flooded round, 300 ms > keep
    EXPECT_EQ(est.kept(), 2u);
    EXPECT_EQ(est.runner_up_syncs(), 1u);
    // The runner-up, the 100 ms round: at 300 ms its ε is about 2003 + 2002, the flood's 400003.
    EXPECT_EQ(est.state().t1, 100'000'000u);
    EXPECT_EQ(est.state().delta_ns, 4000u);
    EXPECT_EQ(est.state().eps0_ns, 2003u);
    // A round tighter than the sync replaces it as before: at 400 ms the sync's ε is about
    // 2003 + 3003, the round's 1003.
    EXPECT_TRUE(one_probe_round(est, k, 400'000'000, 1000, 1000));
    EXPECT_EQ(est.state().t1, 400'000'000u);
    EXPECT_EQ(est.runner_up_syncs(), 1u);
    EXPECT_EQ(est.syncs(), 5u);
}

TEST(CsEstimator, RejectsBadDriftBound) {
    EXPECT_THROW(ClockEstimator(-0.5), std::invalid_argument);
    EXPECT_EQ(ClockEstimator(2.5).rho_ppb(), 2500u);
}

// Estimator::intersect: two probes delayed in opposite directions (4 µs more up, then 4 µs more
// down) bound the offset from both sides; the sync is the middle of their overlap.
TEST(CsEstimator, OppositeDelaysIntersectToTheMiddle) {
    ClockEstimator est(10);
    const int64_t offset = -123'456'789;  // the master is 123456789 ns ahead
    est.begin_round();
    ASSERT_TRUE(est.offer(probe(1'000'000, offset, 1000, 0, 5000)));  // θ 2000 low
    ASSERT_TRUE(est.offer(probe(1'010'000, offset, 5000, 0, 1000)));  // 2000 high
    ASSERT_TRUE(est.end_round());
    const SyncState& s = est.state();
    // At T = the second's t4 (1016000 master ns): the first's ε is 3003 + drift(16000) = 3004,
    // [θ − 2000 − 3004, θ − 2000 + 3004]; the second's 3003 + drift(6000) = 3004, from θ + 2000.
    // Overlap [θ − 1004, θ + 1004]: the middle is the truth, ε₀ half the overlap.
    EXPECT_EQ(s.theta_ns, -offset);
    EXPECT_EQ(s.eps0_ns, 1004u);
    EXPECT_EQ(s.t1, 1'016'000u + uint64_t(offset));
    EXPECT_EQ(s.t4, s.t1);
    EXPECT_EQ(s.delta_ns, 6000u);  // the round's least δ (a tie: the first)
    EXPECT_EQ(s.epsilon_at(s.t4 + 100'000'000), 1004u + 1001);  // grows from T
    EXPECT_EQ(est.intersections_empty(), 0u);
    EXPECT_EQ(est.kept(), 0u);
}

// The sync's own interval, aged to the round's T, takes part: it narrows the result while it is
// the tighter bound, never widens it, and stops mattering once it has grown past the probes'.
TEST(CsEstimator, AnAgedSyncNarrowsButNeverWidens) {
    ClockEstimator est(10);
    auto round = [&est](uint64_t m, uint64_t up, uint64_t down) {
        est.begin_round();
        EXPECT_TRUE(est.offer(probe(m, 0, up, 0, down)));
        const SyncState before = est.state();
        const uint64_t t4 = m + up + down;
        const uint64_t probe_eps = (up + down + 1) / 2 + kEpsilonSlackNs +
                                   drift_ns(10000, up + down);  // at its own t4, which is T
        EXPECT_TRUE(est.end_round());
        EXPECT_EQ(est.state().t4, t4);
        EXPECT_LE(est.state().eps0_ns, probe_eps);
        if (before.synced) {
            EXPECT_LE(est.state().eps0_ns, before.epsilon_at(t4));
        }
        return est.state();
    };
    EXPECT_EQ(round(0, 500, 500).eps0_ns, 504u);  // δ 1000: 503, + drift(1000) at t4
    // 100 ms on the old bound is 504 + drift(100 ms + 3000) = 1505, the probe's 2003 + 1: kept.
    SyncState s = round(100'000'000, 2000, 2000);
    EXPECT_EQ(s.eps0_ns, 1505u);
    EXPECT_EQ(s.theta_ns, 0);
    // A flooded round (δ 800 µs) changes nothing: its interval holds the sync's.
    s = round(200'000'000, 400'000, 400'000);
    EXPECT_EQ(s.theta_ns, 0);
    EXPECT_EQ(s.eps0_ns, 1505u + drift_ns(10000, 100'000'000 + 800'000 - 4000));
    // An interval overlapping only part of the sync's: the overlap, narrower than both.
    const uint64_t old_eps = s.epsilon_at(300'000'000 + 6000);
    s = round(300'000'000, 6000, 0);  // θ 3000 high, ε 3004: [−4, 6004]
    EXPECT_EQ(s.eps0_ns, (old_eps + 4 + 1) / 2);
    EXPECT_LT(s.eps0_ns, old_eps);
    EXPECT_LE(s.theta_ns - int64_t(s.eps0_ns), -4);
    EXPECT_GE(s.theta_ns + int64_t(s.eps0_ns), 0);  // the truth inside
    // Old bounds grow by 1001 ns per 100 ms: a tight probe later is the sync, to the ns.
    for (uint64_t r = 4; r < 10; ++r) s = round(r * 100'000'000, 100, 100);
    EXPECT_EQ(s.theta_ns, 0);
    EXPECT_EQ(s.eps0_ns, 100u + kEpsilonSlackNs + 1);
    EXPECT_EQ(est.intersections_empty(), 0u);
}

// Intervals with no point in common: some bound was wrong (here the client's clock stepped by
// 1 ms between rounds). The round's least-delay probe alone is the sync, and it is counted.
TEST(CsEstimator, EmptyIntersectionFallsBackToTheMinRttProbe) {
    ClockEstimator est(10);
    est.begin_round();
    est.offer(probe(0, 0, 500, 0, 500));
    ASSERT_TRUE(est.end_round());
    est.begin_round();
    est.offer(probe(100'000'000, 1'000'000, 1500, 0, 1500));
    est.offer(probe(110'000'000, 1'000'000, 500, 100, 500));
    ASSERT_TRUE(est.end_round());
    EXPECT_EQ(est.intersections_empty(), 1u);
    const SyncState& s = est.state();
    EXPECT_EQ(s.theta_ns, -1'000'000);
    EXPECT_EQ(s.delta_ns, 1000u);
    EXPECT_EQ(s.eps0_ns, 500 + kEpsilonSlackNs);
    EXPECT_EQ(s.t1, 110'000'000u + 1'000'000);
    EXPECT_EQ(s.t4, 110'000'000u + 1'000'000 + 1100);
    EXPECT_EQ(est.syncs(), 2u);
    // The next round agrees with it again.
    est.begin_round();
    est.offer(probe(200'000'000, 1'000'000, 600, 0, 400));
    ASSERT_TRUE(est.end_round());
    EXPECT_EQ(est.intersections_empty(), 1u);
    EXPECT_EQ(est.syncs(), 3u);
}

// drift_ns rounds up, so growing a bound in two steps never gives less than in one: a sync
// re-anchored at T (ε₀ = its ε at T) bounds at least what the probe's own bound would.
TEST(CsEstimator, DriftIsSubadditive) {
    std::mt19937_64 rng(5);
    for (int i = 0; i < 100000; ++i) {
        const uint64_t rho = rng() % 100'000'001;
        const uint64_t a = rng() >> (rng() % 64), b = rng() >> (1 + rng() % 63);
        const uint64_t both = a + b < a ? kU64Max : a + b;
        ASSERT_GE(__int128(drift_ns(rho, a)) + drift_ns(rho, b), __int128(drift_ns(rho, both)))
            << rho << " " << a << " " << b;
    }
}

// Honesty: random rounds of 8 probes with random, often flooded, asymmetric delays (some lost)
// on a client clock drifting at ±ρ: the true offset is within θ ± ε at every instant checked,
// the intersection is never empty, and the sync is never looser than the round's best probe.
TEST(CsEstimator, IntersectionBoundsTheTruthAtEveryInstant) {
    std::mt19937_64 rng(47);
    for (double drift : {10.0, -10.0, 3.0}) {
        const SimClock sim =
            SimClock::from_ppm(int64_t(rng() >> 3) - (int64_t(1) << 60), drift, uint64_t(1) << 40);
        ClockEstimator est(10);
        auto delay = [&rng] {
            const uint64_t r = rng() % 100;
            return r < 60 ? 1000 + rng() % 20'000 : r < 90 ? rng() % 300'000 : rng() % 3'000'000;
        };
        uint64_t m = uint64_t(1) << 40, checks = 0;
        for (int round = 0; round < 3000; ++round, m += 100'000'000) {
            est.begin_round();
            uint64_t best_eps = kU64Max, last_t4 = 0;
            for (uint64_t k = 0; k < 8; ++k) {
                if (rng() % 10 == 0) continue;  // lost
                const uint64_t sent = m + k * 12'500'000, up = delay(), down = delay();
                const uint64_t turn = rng() % 5000;
                Timestamps ts{sim.local(sent), sent + up, sent + up + turn, 0};
                ts.t4 = sim.local(ts.t3 + down);
                ASSERT_TRUE(est.offer(ts));
                const Measurement p = *measure(ts);
                ASSERT_TRUE(sim.within(
                    p.t4, p.theta_ns,
                    (p.delta_ns + 1) / 2 + kEpsilonSlackNs + drift_ns(10000, p.t4 - p.t1)));
                last_t4 = p.t4;
                best_eps = std::min<uint64_t>(best_eps, (p.delta_ns + 1) / 2 + kEpsilonSlackNs);
            }
            if (!est.end_round()) continue;
            const SyncState s = est.state();
            EXPECT_EQ(s.t4, last_t4);
            for (uint64_t d = 0; d < 200'000'000; d += 997'003, ++checks) {
                const uint64_t t = s.t4 - 50'000'000 + d;
                ASSERT_TRUE(sim.within(t, s.theta_ns, s.epsilon_at(t)))
                    << "round " << round << " drift " << drift;
            }
            // Never looser than the tightest probe alone (aged to T; 1 ns of rounding).
            ASSERT_LE(s.eps0_ns, best_eps + drift_ns(10000, 100'000'000) + 1);
        }
        EXPECT_EQ(est.intersections_empty(), 0u);
        EXPECT_GT(checks, 500'000u);
    }
}
