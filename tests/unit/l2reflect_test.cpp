#include <gtest/gtest.h>

#include "l2reflect/reflect.hpp"

using namespace linerate::l2reflect;
using linerate::kTransmit;
using linerate::stats::drop_slot;

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
        EXPECT_EQ(reflect_frame(f.data(), len), drop_slot(Drop::runt)) << len;
        EXPECT_EQ(f, std::vector<uint8_t>(len + 1, 7));  // untouched
    }
    uint8_t hdr[14] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0};
    EXPECT_EQ(reflect_frame(hdr, 14), kTransmit);
}

TEST(ReflectFrame, DropNamesMatchEnum) {
    EXPECT_EQ(kDrops[unsigned(Drop::runt)].key, "runt");
    EXPECT_EQ(kDrops[unsigned(Drop::split_header)].key, "split_header");
    EXPECT_EQ(kDrops[unsigned(Drop::split_header)].text, "split header");
    EXPECT_EQ(std::size(kDrops), 4u);  // after the runtime's tx_full and exception_ring_full
    EXPECT_EQ(kDrops[linerate::stats::kTxFullSlot].key, "tx_full");
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
    EXPECT_EQ(reflect_frame(g.data(), 11, 9000), drop_slot(Drop::split_header));
    EXPECT_EQ(g, f);
    EXPECT_EQ(reflect_frame(g.data(), 11, 13), drop_slot(Drop::runt));
    EXPECT_EQ(reflect_frame(g.data(), 6, 9000), drop_slot(Drop::split_header));
}

TEST(ReflectFrame, WithoutSwapFramesPassUnchanged) {
    std::vector<uint8_t> f(60);
    for (size_t i = 0; i < f.size(); ++i) f[i] = uint8_t(i);
    const auto want = f;
    EXPECT_EQ(reflect_frame<false>(f.data(), f.size()), kTransmit);
    EXPECT_EQ(reflect_frame<false>(f.data(), 14), kTransmit);
    EXPECT_EQ(f, want);
    EXPECT_EQ(reflect_frame<false>(f.data(), 13), drop_slot(Drop::runt));
}
