// nfv-mix traffic: every bad class gets exactly the nfv verdict it is named after (the nfv
// kernel is the oracle), and the shares come out as asked.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gen/nfv_mix.hpp"
#include "gen/stamp.hpp"
#include "gen/traffic.hpp"
#include "nfv/check_ip_header.hpp"

using namespace linerate;
using namespace linerate::gen;

namespace {

std::string verdict_of(const std::vector<uint8_t>& buf, uint32_t len) {
    return nfv::verdict_name(nfv::CheckIpHeader().check(buf.data(), len).verdict);
}

}  // namespace

class GenBadClass : public testing::TestWithParam<size_t> {};

TEST_P(GenBadClass, EveryFrameGetsItsVerdict) {
    const size_t cls = GetParam();
    for (uint32_t size : {64u, 100u, 1518u, 9000u}) {
        TrafficConfig c;
        c.kind = Kind::nfv_mix;
        c.frame_size = size;
        c.bad[cls] = 1.0;
        c.seed = size;
        TrafficPlan plan(c);
        Traffic t(plan);
        std::vector<uint8_t> buf(plan.frame_len());
        for (int i = 0; i < 300; ++i) {
            FrameInfo info = t.next(buf.data());
            ASSERT_EQ(info.cls, bad_class(cls));
            EXPECT_FALSE(info.expects_return);
            ASSERT_EQ(verdict_of(buf, info.len), kBadClassVerdicts[cls])
                << kBadClassOptions[cls] << " size " << size << " frame " << i;
            // Both the fast path and Click's full order agree.
            EXPECT_EQ(nfv::CheckIpHeader().check_full(buf.data(), info.len).verdict,
                      nfv::CheckIpHeader().check(buf.data(), info.len).verdict);
            if (bad_class(cls) == FrameClass::tiny) {
                EXPECT_GE(info.len, 14u);
                EXPECT_LT(info.len, 34u);
            } else {
                EXPECT_EQ(info.len, size - 4);
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(All, GenBadClass, testing::Range<size_t>(0, kBadClassCount),
                         [](const auto& p) {
                             std::string s = kBadClassOptions[p.param];
                             for (char& ch : s)
                                 if (ch == '-') ch = '_';
                             return s;
                         });

TEST(GenNfvMix, SharesAndValidFramesAreStamped) {
    TrafficConfig c;
    c.kind = Kind::nfv_mix;
    c.frame_size = 128;
    // 0.01, 0.02, ... 0.07: 28% bad in all.
    for (size_t i = 0; i < kBadClassCount; ++i) c.bad[i] = 0.01 * double(i + 1);
    TrafficPlan plan(c);
    Traffic t(plan);
    std::vector<uint8_t> buf(plan.frame_len());
    const int n = 200000;
    std::map<FrameClass, int> count;
    uint64_t next_seq = 0;
    for (int i = 0; i < n; ++i) {
        FrameInfo info = t.next(buf.data());
        ++count[info.cls];
        if (info.cls == FrameClass::normal) {
            ASSERT_TRUE(info.expects_return);
            ASSERT_EQ(verdict_of(buf, info.len), "ok");
            Stamp s = read_stamp(buf.data(), info.len);
            ASSERT_TRUE(s.valid);
            EXPECT_EQ(s.seq, next_seq++);  // valid frames number consecutively
        } else {
            ASSERT_EQ(verdict_of(buf, info.len), kBadClassVerdicts[size_t(info.cls) - 1]);
            EXPECT_FALSE(read_stamp(buf.data(), info.len).valid);  // nothing to wait for
        }
    }
    for (size_t i = 0; i < kBadClassCount; ++i) {
        const double p = c.bad[i];
        const double sigma = std::sqrt(p * (1 - p) / n);
        EXPECT_NEAR(double(count[bad_class(i)]) / n, p, 5 * sigma) << kBadClassOptions[i];
    }
    EXPECT_NEAR(double(count[FrameClass::normal]) / n, 0.72, 0.005);
}

TEST(GenNfvMix, NoBadShareIsPlainUdp) {
    TrafficConfig c;
    c.kind = Kind::nfv_mix;
    TrafficPlan plan(c);
    c.kind = Kind::udp;
    TrafficPlan udp(c);
    Traffic a(plan), b(udp);
    std::vector<uint8_t> fa(plan.frame_len()), fb(plan.frame_len());
    for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(a.next(fa.data()).cls, FrameClass::normal);
        b.next(fb.data());
        ASSERT_EQ(fa, fb);
    }
}
