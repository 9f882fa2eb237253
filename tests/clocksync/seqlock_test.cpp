#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "clocksync/seqlock.hpp"
#include "clocksync/synced_clock.hpp"

using namespace linerate::clocksync;

namespace {

// Every field derived from one number, so a torn read shows as fields that disagree.
struct Wide {
    uint64_t a = 0, b = 0, c = 0, d = 0, e = 0;
    uint32_t f = 0;
};

Wide make(uint64_t v) {
    return {v, ~v, v * 3, v ^ 0x5555, v + 7, uint32_t(v)};
}

bool consistent(const Wide& w) {
    const Wide m = make(w.a);
    return w.b == m.b && w.c == m.c && w.d == m.d && w.e == m.e && w.f == m.f;
}

}  // namespace

TEST(Seqlock, StartsWithTheDefaultValueAndCountsStores) {
    Seqlock<Wide> s;
    EXPECT_EQ(s.load().a, 0u);
    EXPECT_EQ(s.version(), 1u);
    s.store(make(5));
    EXPECT_TRUE(consistent(s.load()));
    EXPECT_EQ(s.load().a, 5u);
    EXPECT_EQ(s.version(), 2u);
}

TEST(Seqlock, ReadersNeverSeeATornValue) {
    Seqlock<Wide> s;
    s.store(make(1));
    std::atomic<bool> done{false};
    std::atomic<uint64_t> torn{0}, reads{0}, backwards{0};
    std::thread reader([&] {
        uint64_t last = 0;
        while (!done.load(std::memory_order_relaxed)) {
            Wide w = s.load();
            if (!consistent(w)) torn.fetch_add(1);
            if (w.a < last) backwards.fetch_add(1);
            last = w.a;
            reads.fetch_add(1, std::memory_order_relaxed);
        }
    });
    // Keep writing until the reader has raced the writer many times.
    for (uint64_t v = 2; v < 200'000 || reads.load(std::memory_order_relaxed) < 200'000; ++v)
        s.store(make(v));
    done = true;
    reader.join();
    EXPECT_EQ(torn.load(), 0u);
    EXPECT_EQ(backwards.load(), 0u);
    EXPECT_GT(reads.load(), 0u);
}

TEST(SyncedClock, ReadsTheMasterTimeAndBoundOfThePublishedSync) {
    SyncedClock clock(LocalClock{});
    ClockReading before = clock.now();
    EXPECT_FALSE(before.synced);
    EXPECT_EQ(before.epsilon_ns, UINT64_MAX);

    SyncSnapshot s;
    s.state.synced = true;
    s.state.theta_ns = -5'000'000;
    s.state.eps0_ns = 1000;
    s.state.t1 = 1'000'000;
    s.state.t4 = 1'000'000;
    s.state.rho_ppb = 10'000;  // 10 ppm
    s.syncs = 3;
    clock.publish(s);
    EXPECT_EQ(clock.snapshot().syncs, 3u);
    ClockReading r = SyncedClock::at(clock.snapshot(), 2'000'000);  // 1 ms after the sync
    EXPECT_TRUE(r.synced);
    EXPECT_EQ(r.master_ns, uint64_t(2'000'000) - uint64_t(5'000'000));  // u64 wraps
    EXPECT_EQ(r.epsilon_ns, 1000u + 11u);  // ρ·1 ms = 10.0001 ns, rounded up
}
