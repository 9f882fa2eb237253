// What comes back: stamps to round-trip times and reordering; clocksync responses; pacing.
#include <gtest/gtest.h>

#include <vector>

#include "clocksync/cs_wire.hpp"
#include "gen/returns.hpp"
#include "gen/stamp.hpp"
#include "gen/traffic.hpp"
#include "pkt/headers.hpp"
#include "worker/pacer.hpp"

using namespace linerate;
using namespace linerate::gen;

namespace {

std::vector<std::vector<uint8_t>> stamped(const TrafficPlan& plan, size_t n, uint64_t tsc) {
    Traffic t(plan);
    std::vector<std::vector<uint8_t>> out;
    for (size_t i = 0; i < n; ++i) {
        std::vector<uint8_t> f(plan.frame_len());
        f.resize(t.next(f.data()).len);
        t.stamp_tx(f.data(), tsc + i, 0);
        lr_swap_macs(f.data(), f.data() + f.size());  // as l2reflect sends it back
        out.push_back(f);
    }
    return out;
}

}  // namespace

TEST(GenReturns, RoundTripInNsAndInOrder) {
    TrafficConfig c;
    c.flows = 4;
    TrafficPlan plan(c);
    ReturnTracker r(c, {0, 0.5});  // a 2 GHz TSC
    auto fs = stamped(plan, 100, 1000);
    for (size_t i = 0; i < fs.size(); ++i)
        EXPECT_EQ(r.on_frame(fs[i].data(), fs[i].size(), 1000 + i + 2000), Return::in_order);
    EXPECT_EQ(r.latency_ns().count(), 100u);
    EXPECT_EQ(r.latency_ns().min(), 1000u);
    EXPECT_EQ(r.latency_ns().max(), 1000u);
}

TEST(GenReturns, ReorderingIsPerFlow) {
    TrafficConfig c;
    c.flows = 2;
    TrafficPlan plan(c);
    ReturnTracker r(c, {});
    auto fs = stamped(plan, 6, 0);  // seq 0..5, flows 0 1 0 1 0 1
    // Flow 0 gets 4, 0, 2 (0 and 2 late); flow 1 gets 1, 3, 5 in order, interleaved.
    EXPECT_EQ(r.on_frame(fs[4].data(), fs[4].size(), 10), Return::in_order);
    EXPECT_EQ(r.on_frame(fs[1].data(), fs[1].size(), 10), Return::in_order);
    EXPECT_EQ(r.on_frame(fs[0].data(), fs[0].size(), 10), Return::reordered);
    EXPECT_EQ(r.on_frame(fs[3].data(), fs[3].size(), 10), Return::in_order);
    EXPECT_EQ(r.on_frame(fs[2].data(), fs[2].size(), 10), Return::reordered);
    EXPECT_EQ(r.on_frame(fs[5].data(), fs[5].size(), 10), Return::in_order);
}

TEST(GenReturns, ForeignFramesAreNotCounted) {
    TrafficConfig c;
    c.flows = 2;
    TrafficPlan plan(c);
    ReturnTracker r(c, {});
    auto fs = stamped(plan, 1, 0);
    std::vector<uint8_t> zero(60, 0);
    EXPECT_EQ(r.on_frame(zero.data(), zero.size(), 0), Return::foreign);
    auto f = fs[0];
    EXPECT_EQ(r.on_frame(f.data(), 59, 0), Return::foreign);  // stamp cut short
    pkt::store_be16(&f[34], 1024 + 2);                        // a flow we never sent
    EXPECT_EQ(r.on_frame(f.data(), f.size(), 0), Return::foreign);
    f = fs[0];
    f[kStampMagicOffset] ^= 1;
    EXPECT_EQ(r.on_frame(f.data(), f.size(), 0), Return::foreign);
    EXPECT_EQ(r.latency_ns().count(), 0u);
}

TEST(GenReturns, ClocksyncResponsesGiveRoundTrips) {
    TrafficConfig c;
    c.kind = Kind::clocksync;
    c.flows = 3;
    TrafficPlan plan(c);
    Traffic t(plan);
    TscClock clock{100, 1.0};
    ReturnTracker r(c, clock);
    for (uint64_t i = 0; i < 6; ++i) {
        std::vector<uint8_t> f(plan.frame_len());
        f.resize(t.next(f.data()).len);
        t.stamp_tx(f.data(), 0, clock.ns(100 + 10 * i));
        // The request itself is not a response.
        EXPECT_EQ(r.on_frame(f.data(), f.size(), 0), Return::foreign);
        auto p = clocksync::parse_cs_packet(f.data(), f.size());
        ASSERT_TRUE(p.ok);
        clocksync::make_response(f.data(), p, 5, 6);
        EXPECT_EQ(r.on_frame(f.data(), f.size(), 100 + 10 * i + 250), Return::in_order);
    }
    EXPECT_EQ(r.latency_ns().count(), 6u);
    EXPECT_EQ(r.latency_ns().max(), 250u);
}

TEST(GenPacer, CreditFollowsTheClockAndLagIsBounded) {
    worker::Pacer unpaced;
    EXPECT_FALSE(unpaced.paced());
    EXPECT_GT(unpaced.credit(0), 1e9);

    worker::Pacer p(1000, 1000000, 5000, 64);  // 1000 units/s, 1 MHz clock
    EXPECT_TRUE(p.paced());
    EXPECT_DOUBLE_EQ(p.credit(5000), 0);
    EXPECT_DOUBLE_EQ(p.credit(5000 + 10000), 10);  // 10 ms -> 10 units
    p.spend(10);
    EXPECT_DOUBLE_EQ(p.credit(5000 + 10000), 0);
    p.spend(1);  // one over: must wait a unit's time
    EXPECT_LT(p.credit(5000 + 10500), 0);
    EXPECT_NEAR(p.credit(5000 + 11000), 0, 1e-9);
    // A second of stall: only 64 units of catch-up, then the rate again.
    EXPECT_DOUBLE_EQ(p.credit(5000 + 1011000), 64);
    p.spend(64);
    EXPECT_NEAR(p.credit(5000 + 1012000), 1, 1e-9);
}

TEST(GenPacer, SendingAtTheCreditGivesTheRate) {
    worker::Pacer p(2.5e6, 2000000000, 0, 32);  // 2.5 Mpps on a 2 GHz clock
    uint64_t sent = 0;
    for (uint64_t now = 0; now <= 2000000000; now += 1000) {  // 0.5 us polls
        double credit = p.credit(now);
        while (credit > 0) {
            p.spend(1);
            credit -= 1;
            ++sent;
        }
    }
    EXPECT_NEAR(double(sent), 2.5e6, 2);
}
