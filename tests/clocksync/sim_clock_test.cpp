#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <stdexcept>

#include "clocksync/local_clock.hpp"
#include "clocksync/sim_clock.hpp"

using namespace linerate::clocksync;

TEST(CsSimClock, OffsetAndDrift) {
    auto c = SimClock::from_ppm(5'000'000, 8);
    EXPECT_EQ(c.drift_ppb, 8000);
    EXPECT_EQ(c.local(0), 5'000'000u);
    EXPECT_EQ(c.local(1'000'000'000), 1'005'008'000u);  // 8 µs fast after 1 s
    EXPECT_EQ(c.local(1'000), 5'001'000u);              // 8e-3 ns: floored
    auto slow = SimClock::from_ppm(-5'000'000, -8);
    EXPECT_EQ(slow.local(10'000'000'000ull), 10'000'000'000ull - 5'000'000 - 80'000);
    EXPECT_EQ(slow.local(1'000), uint64_t(1'000 - 5'000'000 - 1));  // floor of −8e-3, wraps
    EXPECT_EQ(SimClock::from_ppm(0, 0.0004).drift_ppb, 0);
    EXPECT_THROW(SimClock::from_ppm(0, -1e6), std::invalid_argument);
}

TEST(CsSimClock, EpochAndWrap) {
    const uint64_t epoch = std::numeric_limits<uint64_t>::max() - 499'999'999;  // wraps at +0.5 s
    auto c = SimClock::from_ppm(-1'000'000, 10, epoch);
    EXPECT_EQ(c.local(epoch), epoch - 1'000'000);
    EXPECT_EQ(c.local(epoch + 1'000'000'000), epoch + 1'000'000'000 - 1'000'000 + 10'000);
    EXPECT_EQ(c.true_offset_at(c.local(epoch + 1'000'000'000)), 1'000'000 - 10'000);
}

TEST(CsSimClock, TrueOffsetMatchesReadings) {
    std::mt19937_64 rng(3);
    for (int i = 0; i < 20000; ++i) {
        SimClock c{int64_t(rng() % 2'000'000'000) - 1'000'000'000,
                   int64_t(rng() % 200'001) - 100'000, rng()};
        uint64_t m = c.epoch_ns + rng() % (uint64_t(1) << 50);
        uint64_t l = c.local(m);
        // The local reading is the floor of the real clock: the offset at that reading lies
        // within 1 ns (plus the drift over that ns) of master − local.
        int64_t truth = int64_t(m - l);
        int64_t est = c.true_offset_at(l);
        ASSERT_LE(std::abs(est - truth), 1) << i;
        ASSERT_TRUE(c.within(l, truth, 1));
    }
}

TEST(CsSimClock, WithinIsExact) {
    auto c = SimClock::from_ppm(1000, 0);  // true offset exactly −1000 everywhere
    EXPECT_TRUE(c.within(5'000'000, -1000, 0));
    EXPECT_FALSE(c.within(5'000'000, -999, 0));
    EXPECT_TRUE(c.within(5'000'000, -999, 1));
    EXPECT_TRUE(c.within(5'000'000, -1100, 100));
    EXPECT_FALSE(c.within(5'000'000, -1101, 100));
    auto d = SimClock::from_ppm(0, 1);
    // local 1'000'001'000 ⇔ master 1e9 exactly (w = 1'000'001'000, p = 1000): offset −1000.
    EXPECT_EQ(d.true_offset_at(1'000'001'000), -1000);
    EXPECT_TRUE(d.within(1'000'001'000, -1000, 0));
    EXPECT_FALSE(d.within(1'000'001'001, -1000, 0));  // 1 ns later: −1000.000001
    EXPECT_TRUE(d.within(1'000'001'001, -1000, 1));
}

// A receive stamp of the XDP hook's clock (CLOCK_MONOTONIC) on the client's local clock: the
// stamp itself on CLOCK_MONOTONIC; on CLOCK_MONOTONIC_RAW the raw reading less the time since
// the stamp shrunk by CLOCK_MONOTONIC's fastest rate (1.10055: a tick 10% long, 500 ppm), so
// the result is never earlier than the true instant; through the simulated clock in
// verification mode. No stamp after the reading, none on CLOCK_REALTIME.
TEST(CsLocalClock, HookStampsComeOnTheLocalClockNeverEarly) {
    LocalClock mono;
    mono.system = CLOCK_MONOTONIC;
    const LocalClock::Reading m{9'000, 9'000, 9'000};
    EXPECT_EQ(mono.local_of_monotonic(8'000, m), 8'000u);
    EXPECT_EQ(mono.local_of_monotonic(9'000, m), 9'000u);
    EXPECT_FALSE(mono.local_of_monotonic(9'001, m));

    LocalClock raw;  // CLOCK_MONOTONIC_RAW, the default
    const LocalClock::Reading r{50'000, 50'000, 1'000'000};
    EXPECT_EQ(raw.local_of_monotonic(1'000'000, r), 50'000u);
    // 1100.55 ns on CLOCK_MONOTONIC is at least 1000 ns of raw time: 49 000, not earlier.
    EXPECT_EQ(raw.local_of_monotonic(1'000'000 - 1'101, r), 50'000u - 1'000);
    EXPECT_EQ(raw.local_of_monotonic(1'000'000 - 1'100, r), 50'000u - 999);
    EXPECT_FALSE(raw.local_of_monotonic(1'000'001, r));
    EXPECT_FALSE(raw.local_of_monotonic(5, LocalClock::Reading{50'000, 50'000, 0}));  // not read

    raw.sim = SimClock::from_ppm(5'000'000, 0);
    EXPECT_EQ(raw.local_of_monotonic(1'000'000 - 1'101, r), 5'000'000u + 49'000);

    LocalClock realtime;
    realtime.system = CLOCK_REALTIME;
    EXPECT_FALSE(realtime.local_of_monotonic(1'000, LocalClock::Reading{2'000, 2'000, 2'000}));
}

// read(): CLOCK_MONOTONIC right before the system clock, once when they are the same clock.
TEST(CsLocalClock, ReadingTakesMonotonicFirst) {
    LocalClock raw;
    const LocalClock::Reading without = raw.read(false);
    EXPECT_EQ(without.monotonic, 0u);
    EXPECT_EQ(without.local, without.system_ns);
    const uint64_t before = clock_ns(CLOCK_MONOTONIC);
    const LocalClock::Reading with = raw.read(true);
    EXPECT_GE(with.monotonic, before);
    EXPECT_LE(with.monotonic, clock_ns(CLOCK_MONOTONIC));
    LocalClock mono;
    mono.system = CLOCK_MONOTONIC;
    const LocalClock::Reading m = mono.read(false);
    EXPECT_EQ(m.monotonic, m.system_ns);
}
