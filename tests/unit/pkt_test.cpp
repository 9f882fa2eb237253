#include <gtest/gtest.h>

#include "pkt/address.hpp"
#include "pkt/build.hpp"
#include "pkt/checksum.hpp"
#include "pkt/headers.hpp"
#include "support/checksum.hpp"

using namespace linerate::pkt;

TEST(Checksum, Rfc1071Example) {
    // RFC 1071 section 3 example: words 0001 f203 f4f5 f6f7 sum to ddf2.
    const uint8_t data[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
    EXPECT_EQ(ones_complement_sum(data, sizeof data), 0xddf2);
    EXPECT_EQ(internet_checksum(data, sizeof data), uint16_t(~0xddf2));
}

TEST(Checksum, OddLengthPadsWithZero) {
    const uint8_t odd[] = {0x12, 0x34, 0x56};
    EXPECT_EQ(ones_complement_sum(odd, 3), 0x1234 + 0x5600);
}

TEST(Build, UdpFrameHasValidIpChecksumAndLengths) {
    UdpFrameSpec spec;
    auto f = make_udp_frame(spec, 100);
    ASSERT_EQ(f.size(), 100u);
    EXPECT_EQ(load_be16(&f[12]), kEtherTypeIpv4);
    Ipv4View ip{&f[14]};
    EXPECT_EQ(ip.version(), 4);
    EXPECT_EQ(ip.header_len(), 20u);
    EXPECT_EQ(ip.total_len(), 86);
    EXPECT_TRUE(checksum_ok(&f[14], 20));
    UdpView udp{&f[34]};
    EXPECT_EQ(udp.length(), 66);
    EXPECT_EQ(udp.dst_port(), spec.dst_port);
}

// lib/pkt/mac_swap.h's one swap, on a 14-byte frame (byte moves) and a longer one (the 16-byte
// shuffle), which keeps the bytes after the MACs.
TEST(Headers, SwapMacs) {
    uint8_t f[14] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00};
    EXPECT_EQ(lr_swap_macs(f, f + sizeof f), 1);
    const uint8_t want[14] = {7, 8, 9, 10, 11, 12, 1, 2, 3, 4, 5, 6, 0x08, 0x00};
    EXPECT_EQ(0, memcmp(f, want, 14));
    EXPECT_EQ(lr_swap_macs(f, f + 11), 0);  // shorter than the two addresses: untouched
    EXPECT_EQ(0, memcmp(f, want, 14));
}

TEST(Headers, SwapMacsWideKeepsBytesAfterTheMacs) {
    uint8_t f[20];
    for (int i = 0; i < 20; ++i) f[i] = uint8_t(i + 1);
    lr_swap_macs(f, f + sizeof f);
    const uint8_t want[20] = {7, 8, 9,  10, 11, 12, 1,  2,  3,  4,
                              5, 6, 13, 14, 15, 16, 17, 18, 19, 20};
    EXPECT_EQ(0, memcmp(f, want, 20));
}

TEST(Headers, ParseL2SkipsUpToTwoTags) {
    uint8_t f[26] = {};
    store_be16(f + 12, kEtherTypeQinQ);
    store_be16(f + 16, kEtherTypeVlan);
    store_be16(f + 20, kEtherTypeIpv4);
    auto h = parse_l2(f, sizeof f);
    EXPECT_TRUE(h.complete);
    EXPECT_EQ(h.vlan_tags, 2);
    EXPECT_EQ(h.length, 22);
    EXPECT_EQ(h.ethertype, kEtherTypeIpv4);
    // Three tags: the third stays the ethertype.
    store_be16(f + 20, kEtherTypeVlan);
    store_be16(f + 24, kEtherTypeIpv4);
    h = parse_l2(f, sizeof f);
    EXPECT_EQ(h.ethertype, kEtherTypeVlan);
    EXPECT_EQ(h.length, 22);
}

TEST(Headers, ParseL2Truncated) {
    uint8_t f[18] = {};
    EXPECT_FALSE(parse_l2(f, 13).complete);
    store_be16(f + 12, kEtherTypeVlan);
    EXPECT_FALSE(parse_l2(f, 16).complete);  // tag cut short before its inner ethertype
    EXPECT_TRUE(parse_l2(f, 14 + 4).complete);
}

// The one parser and formatter of each address kind (lib/pkt/address.hpp).
TEST(Address, Ipv4IsStrictAndRoundTrips) {
    EXPECT_EQ(linerate::pkt::parse_ipv4("192.168.0.1"), 0xC0A80001u);
    EXPECT_EQ(linerate::pkt::parse_ipv4("0.0.0.0"), 0u);
    EXPECT_EQ(linerate::pkt::parse_ipv4("255.255.255.255"), 0xFFFFFFFFu);
    for (const char* bad : {"", "1.2.3", "1.2.3.4.", "1.2.3.256", "1..2.3", "1.2.3.4x",
                            "0001.2.3.4", "-1.2.3.4", " 1.2.3.4", "1.2.3.4/24", "0x1.2.3.4"})
        EXPECT_FALSE(linerate::pkt::parse_ipv4(bad)) << bad;
    for (uint32_t a : {0u, 1u, 0x0A000001u, 0xC0A80001u, 0xFFFFFFFFu})
        EXPECT_EQ(linerate::pkt::parse_ipv4(linerate::pkt::format_ipv4(a)), a);
    EXPECT_EQ(linerate::pkt::format_ipv4(0x0A0000FFu), "10.0.0.255");
}

TEST(Address, Ipv4NetsAreStrictAndMatchTheirPrefix) {
    using linerate::pkt::parse_ipv4_net;
    const auto net = parse_ipv4_net("10.81.0.0/24");
    ASSERT_TRUE(net);
    EXPECT_TRUE(net->contains(0x0A510002u));
    EXPECT_FALSE(net->contains(0x0A510102u));
    EXPECT_EQ(linerate::pkt::format_ipv4_net(*net), "10.81.0.0/24");
    const auto host = parse_ipv4_net("127.0.0.1");
    ASSERT_TRUE(host);
    EXPECT_TRUE(host->contains(0x7F000001u));
    EXPECT_FALSE(host->contains(0x7F000002u));
    const auto any = parse_ipv4_net("0.0.0.0/0");
    ASSERT_TRUE(any);
    EXPECT_TRUE(any->contains(0xC0A80001u));
    for (const char* bad : {"10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/08", "10.0.0/8",
                            "10.0.0.0/a", "", "/8"})
        EXPECT_FALSE(parse_ipv4_net(bad)) << bad;
    linerate::pkt::Ipv4AllowList allow;
    EXPECT_FALSE(allow.contains(0x7F000001u));
    allow.nets = {*net, *host};
    EXPECT_TRUE(allow.contains(0x7F000001u));
    EXPECT_TRUE(allow.contains(0x0A5100FEu));
    EXPECT_FALSE(allow.contains(0x0A520001u));
}

TEST(Address, MacIsStrictAndRoundTrips) {
    auto mac = linerate::pkt::parse_mac("02:aB:cd:00:10:ff");
    ASSERT_TRUE(mac);
    EXPECT_EQ(*mac, (linerate::pkt::MacAddr{0x02, 0xAB, 0xCD, 0x00, 0x10, 0xFF}));
    EXPECT_EQ(linerate::pkt::format_mac(*mac), "02:ab:cd:00:10:ff");
    for (const char* bad :
         {"", "ff:ff:ff:ff:ff", "ff-ff-ff-ff-ff-ff", " f:ff:ff:ff:ff:ff", "+f:ff:ff:ff:ff:ff",
          "ff:ff:ff:ff:ff:ff:", "gg:ff:ff:ff:ff:ff", "f:ff:ff:ff:ff:fff"})
        EXPECT_FALSE(linerate::pkt::parse_mac(bad)) << bad;
}

namespace {

// A canonical UDP frame of `len` bytes with a payload pattern and no UDP checksum yet.
std::vector<uint8_t> udp_frame_with_payload(size_t len) {
    auto f = make_udp_frame(UdpFrameSpec{}, len);
    for (size_t i = kUdpPayloadOffset; i < f.size(); ++i) f[i] = uint8_t(i * 7 + 3);
    return f;
}

ChecksumVerdict udp_verdict(const std::vector<uint8_t>& f, ChecksumCheck check = {}) {
    return check_ipv4_udp(&f[14], 20, &f[34], f.size() - 34, check);
}

}  // namespace

// docs/wire-formats.md, Checksums: a UDP checksum field holding the pseudo-header sum alone is
// what a Linux sender leaves for TX offload (a default veth delivers it so): accepted and told
// apart; anything else that does not verify stays bad.
TEST(Checksum, OffloadedUdpChecksumIsAcceptedAndToldApart) {
    for (size_t len : {size_t(60), size_t(61), size_t(1514)}) {
        auto f = udp_frame_with_payload(len);
        linerate::test::set_partial_udp_checksum(f);
        ASSERT_TRUE(f[40] != 0 || f[41] != 0);
        EXPECT_FALSE(udp_checksum_ok(&f[14], &f[34], f.size() - 34)) << len;
        EXPECT_TRUE(udp_checksum_offloaded(&f[14], &f[34])) << len;
        EXPECT_EQ(udp_verdict(f), ChecksumVerdict::offloaded) << len;
        EXPECT_TRUE(checksum_accepted(udp_verdict(f)));
        EXPECT_EQ(udp_verdict(f, {.accept_offloaded = false}), ChecksumVerdict::bad_udp) << len;
        // The port cannot know what the sender left unfinished: its "bad" is looked at again.
        EXPECT_EQ(udp_verdict(f, {.port = {RxCheck::good, RxCheck::bad}}),
                  ChecksumVerdict::offloaded);
        // The payload is not covered by such a field, but the pseudo header is.
        auto g = f;
        g[30] ^= 0x01;  // destination address
        linerate::test::set_ip_checksum(g);
        EXPECT_EQ(udp_verdict(g), ChecksumVerdict::bad_udp) << len;
    }
}

TEST(Checksum, APayloadChangedAfterARealChecksumIsStillBad) {
    auto f = udp_frame_with_payload(200);
    linerate::test::set_udp_checksum(f);
    ASSERT_EQ(udp_verdict(f), ChecksumVerdict::ok);
    for (size_t at : {size_t(42), size_t(100), f.size() - 1}) {
        auto g = f;
        g[at] ^= 0x40;
        EXPECT_FALSE(udp_checksum_offloaded(&g[14], &g[34])) << at;
        EXPECT_EQ(udp_verdict(g), ChecksumVerdict::bad_udp) << at;
    }
    // No checksum (0) is no offload: the port's "bad" stands.
    auto z = udp_frame_with_payload(200);
    EXPECT_EQ(udp_verdict(z, {.port = {RxCheck::good, RxCheck::bad}}), ChecksumVerdict::bad_udp);
    EXPECT_EQ(udp_verdict(z), ChecksumVerdict::ok);
}

namespace {

// The pseudo-header sum of the TCP segment after the IPv4 header at f[14] (RFC 793).
uint32_t tcp_pseudo_sum(const std::vector<uint8_t>& f) {
    const size_t tcp_len = f.size() - 34;
    const uint8_t pseudo[12] = {f[26],
                                f[27],
                                f[28],
                                f[29],
                                f[30],
                                f[31],
                                f[32],
                                f[33],
                                0,
                                kIpProtoTcp,
                                uint8_t(tcp_len >> 8),
                                uint8_t(tcp_len)};
    return linerate::test::plain_sum(pseudo, sizeof pseudo);
}

// A TCP segment (20-byte header, `payload` bytes) in an IPv4 frame, checksum field left as the
// sender's TX offload leaves it: the pseudo-header sum.
std::vector<uint8_t> offloaded_tcp_frame(size_t payload) {
    auto f = udp_frame_with_payload(kUdpPayloadOffset + 12 + payload);  // 8 more header bytes
    f[23] = kIpProtoTcp;
    linerate::test::set_ip_checksum(f);
    const uint32_t s = tcp_pseudo_sum(f);
    f[50] = uint8_t(s >> 8);
    f[51] = uint8_t(s);
    return f;
}

// The segment's checksum over pseudo header and segment verifies.
bool tcp_checksum_verifies(const std::vector<uint8_t>& f) {
    return linerate::test::plain_sum(&f[34], f.size() - 34, tcp_pseudo_sum(f)) == 0xFFFF;
}

}  // namespace

// A forwarder between kernel interfaces finishes what the sender left to offload, as a NIC
// would; frames with a real checksum, none, or another protocol are left alone.
TEST(Checksum, OffloadedTcpAndUdpChecksumsAreCompletedForTheNextHop) {
    for (size_t payload : {size_t(0), size_t(1), size_t(1000)}) {
        auto t = offloaded_tcp_frame(payload);
        ASSERT_FALSE(tcp_checksum_verifies(t));
        EXPECT_TRUE(complete_offloaded_checksum(t.data(), t.size())) << payload;
        EXPECT_TRUE(tcp_checksum_verifies(t)) << payload;
        EXPECT_FALSE(complete_offloaded_checksum(t.data(), t.size()));  // now complete: untouched
    }
    auto u = udp_frame_with_payload(300);
    auto want = u;
    linerate::test::set_udp_checksum(want);
    linerate::test::set_partial_udp_checksum(u);
    EXPECT_TRUE(complete_offloaded_checksum(u.data(), u.size()));
    EXPECT_EQ(u, want);
    auto none = udp_frame_with_payload(300);  // no UDP checksum (0): stays none
    const auto none_before = none;
    EXPECT_FALSE(complete_offloaded_checksum(none.data(), none.size()));
    EXPECT_EQ(none, none_before);
    auto frag = offloaded_tcp_frame(100);
    frag[20] = 0x20;  // more fragments: the segment is not all here
    const auto frag_before = frag;
    EXPECT_FALSE(complete_offloaded_checksum(frag.data(), frag.size()));
    EXPECT_EQ(frag, frag_before);
    auto cut = offloaded_tcp_frame(100);
    EXPECT_FALSE(complete_offloaded_checksum(cut.data(), cut.size() - 1));  // total > frame
}
