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
}
