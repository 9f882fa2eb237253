#include <gtest/gtest.h>

#include "../../apps/l2reflect/reflect.hpp"

using namespace linerate::l2reflect;

TEST(ReflectFrame, SwapsMacsAndKeepsTheRest) {
    std::vector<uint8_t> f(60);
    for (size_t i = 0; i < f.size(); ++i) f[i] = uint8_t(i);
    auto want = f;
    for (int i = 0; i < 6; ++i) std::swap(want[i], want[6 + i]);
    EXPECT_EQ(reflect_frame(f.data(), f.size()), kTransmit);
    EXPECT_EQ(f, want);
}

TEST(ReflectFrame, ShorterThanEthernetHeaderIsRunt) {
    for (size_t len = 0; len < 14; ++len) {
        std::vector<uint8_t> f(len + 1, 7);
        EXPECT_EQ(reflect_frame(f.data(), len), unsigned(Drop::runt)) << len;
        EXPECT_EQ(f, std::vector<uint8_t>(len + 1, 7));  // untouched
    }
    uint8_t hdr[14] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0};
    EXPECT_EQ(reflect_frame(hdr, 14), kTransmit);
}

TEST(ReflectFrame, DropNamesMatchEnum) {
    EXPECT_STREQ(kDropNames[unsigned(Drop::tx_full)], "tx full");
    EXPECT_STREQ(kDropNames[unsigned(Drop::runt)], "runt");
    EXPECT_STREQ(kDropNames[unsigned(Drop::split_header)], "split header");
}

TEST(ReflectFrame, ChainFirstSegmentDecides) {
    // A 9000-byte frame whose first segment holds its MACs: swapped; one that ends inside them
    // cannot be swapped in place and has its own reason; shorter than a header: still a runt.
    std::vector<uint8_t> f(16);
    for (size_t i = 0; i < f.size(); ++i) f[i] = uint8_t(i);
    auto want = f;
    for (int i = 0; i < 6; ++i) std::swap(want[i], want[6 + i]);
    auto g = f;
    EXPECT_EQ(reflect_frame(g.data(), 12, 9000), kTransmit);
    EXPECT_TRUE(std::equal(g.begin(), g.begin() + 12, want.begin()));
    g = f;
    EXPECT_EQ(reflect_frame(g.data(), 11, 9000), unsigned(Drop::split_header));
    EXPECT_EQ(g, f);
    EXPECT_EQ(reflect_frame(g.data(), 11, 13), unsigned(Drop::runt));
    EXPECT_EQ(reflect_frame(g.data(), 6, 9000), unsigned(Drop::split_header));
}

TEST(ReflectFrame, WithoutSwapFramesPassUnchanged) {
    std::vector<uint8_t> f(60);
    for (size_t i = 0; i < f.size(); ++i) f[i] = uint8_t(i);
    const auto want = f;
    EXPECT_EQ(reflect_frame<false>(f.data(), f.size()), kTransmit);
    EXPECT_EQ(reflect_frame<false>(f.data(), 14), kTransmit);
    EXPECT_EQ(f, want);
    EXPECT_EQ(reflect_frame<false>(f.data(), 13), unsigned(Drop::runt));
}
