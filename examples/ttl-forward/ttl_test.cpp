// The kernel alone: TTL and checksum against a full recomputation, and each drop reason.
#include <gtest/gtest.h>

#include <vector>

#include "ttl.hpp"

namespace {

using Frame = std::vector<uint8_t>;

uint16_t header_checksum(const uint8_t* h) {  // RFC 1071 over 20 bytes, checksum field as is
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += uint32_t(h[i] << 8 | h[i + 1]);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return uint16_t(~sum);
}

Frame ipv4_frame(uint8_t ttl, uint8_t proto = 17) {
    Frame f(60, 0);
    f[12] = 0x08;
    f[14] = 0x45;
    f[17] = 46;
    f[22] = ttl;
    f[23] = proto;
    for (int i = 0; i < 4; ++i) f[26 + i] = uint8_t(10 + i), f[30 + i] = uint8_t(200 + i);
    uint16_t c = header_checksum(&f[14]);
    f[24] = uint8_t(c >> 8);
    f[25] = uint8_t(c);
    return f;
}

unsigned slot(ttl_forward::Drop d) {
    return linerate::stats::drop_slot(d);
}

}  // namespace

TEST(DecrementTtl, LowersTheTtlAndKeepsTheChecksumValid) {
    for (int ttl = 2; ttl <= 255; ++ttl)
        for (uint8_t proto : {1, 6, 17, 255}) {
            Frame f = ipv4_frame(uint8_t(ttl), proto);
            ASSERT_EQ(ttl_forward::decrement_ttl(f.data(), f.size()), linerate::kTransmit);
            EXPECT_EQ(f[22], ttl - 1);
            EXPECT_EQ(header_checksum(&f[14]), 0) << "ttl " << ttl << " proto " << int(proto);
            Frame want = ipv4_frame(uint8_t(ttl - 1), proto);
            EXPECT_EQ(f, want);
        }
}

TEST(DecrementTtl, DropsWhatCannotBeForwarded) {
    Frame expired = ipv4_frame(1), zero = ipv4_frame(0);
    EXPECT_EQ(ttl_forward::decrement_ttl(expired.data(), expired.size()),
              slot(ttl_forward::Drop::ttl_expired));
    EXPECT_EQ(ttl_forward::decrement_ttl(zero.data(), zero.size()),
              slot(ttl_forward::Drop::ttl_expired));
    EXPECT_EQ(expired, ipv4_frame(1));  // untouched
    Frame arp = ipv4_frame(64);
    arp[13] = 0x06;
    EXPECT_EQ(ttl_forward::decrement_ttl(arp.data(), arp.size()),
              slot(ttl_forward::Drop::not_ipv4));
    Frame f = ipv4_frame(64);
    EXPECT_EQ(ttl_forward::decrement_ttl(f.data(), 33), slot(ttl_forward::Drop::truncated));
    EXPECT_EQ(ttl_forward::decrement_ttl(f.data(), 10), slot(ttl_forward::Drop::truncated));
}
