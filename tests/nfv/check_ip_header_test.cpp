// Unit tests of the nfv kernel: every CheckIPHeader reason, its boundaries and the check order.
// Suite names start with "nfv_" so `ctest -R nfv` selects them.
#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "nfv/check_ip_header.hpp"
#include "pkt/build.hpp"
#include "pkt/checksum.hpp"
#include "pkt/headers.hpp"

using namespace linerate;
using namespace linerate::nfv;
using pkt::ipv4_addr;

namespace {

struct FrameSpec {
    std::vector<uint16_t> tags;  // TPIDs of VLAN tags, outermost first
    uint16_t ethertype = pkt::kEtherTypeIpv4;
    uint8_t version = 4;
    uint8_t ihl = 5;                    // 32-bit words
    size_t payload = 8;                 // bytes after the IP header, inside the datagram
    size_t padding = 0;                 // bytes after the datagram (Ethernet padding)
    std::optional<uint16_t> total_len;  // overrides IHL*4 + payload
    uint32_t src = ipv4_addr(10, 0, 0, 1);
    uint32_t dst = ipv4_addr(10, 0, 0, 2);
};

size_t l2_len(const FrameSpec& s) {
    return pkt::kEthHdrLen + pkt::kVlanTagLen * s.tags.size();
}

// Ethernet (+ tags) + IPv4 with a valid checksum + payload + padding.
std::vector<uint8_t> make_frame(const FrameSpec& s) {
    const size_t hlen = size_t(s.ihl) * 4;
    const size_t l2 = l2_len(s);
    std::vector<uint8_t> f(l2 + std::max<size_t>(hlen, 20) + s.payload + s.padding, 0);
    for (size_t i = 0; i < 12; ++i) f[i] = uint8_t(0x10 + i);
    size_t off = 12;
    for (uint16_t tpid : s.tags) {
        pkt::store_be16(&f[off], tpid);
        pkt::store_be16(&f[off + 2], 100);  // TCI: VLAN 100
        off += 4;
    }
    pkt::store_be16(&f[off], s.ethertype);
    uint8_t* ip = &f[l2];
    ip[0] = uint8_t(s.version << 4 | s.ihl);
    pkt::store_be16(ip + 2, s.total_len.value_or(uint16_t(hlen + s.payload)));
    ip[8] = 64;
    ip[9] = pkt::kIpProtoUdp;
    pkt::store_be32(ip + 12, s.src);
    pkt::store_be32(ip + 16, s.dst);
    for (size_t i = 20; i < hlen; ++i) ip[i] = uint8_t(0xA0 + i);  // options: any bytes
    for (size_t i = 0; i < s.payload; ++i) ip[std::max<size_t>(hlen, 20) + i] = uint8_t(i);
    if (s.ihl >= 5) pkt::fix_ipv4_checksum(ip);
    return f;
}

Result check(const std::vector<uint8_t>& f, const Config& c = {}) {
    return CheckIpHeader(c).check(f.data(), f.size());
}

Verdict verdict(const std::vector<uint8_t>& f, const Config& c = {}) {
    return check(f, c).verdict;
}

Config no_checksum() {
    Config c;
    c.verify_checksum = false;
    return c;
}

Config pass_non_ip() {
    Config c;
    c.pass_non_ip = true;
    return c;
}

}  // namespace

// gtest prints Verdict values by name.
namespace linerate::nfv {
void PrintTo(Verdict v, std::ostream* os) {
    *os << verdict_name(v);
}
}  // namespace linerate::nfv

TEST(nfv_verdict, NamesAreClickReasonTexts) {
    EXPECT_EQ(kVerdictCount, 10u);  // the runtime's 2 slots, Click's 7 reasons, ok
    EXPECT_EQ(stats::drop_slot(Verdict::not_ipv4), stats::drop_slot(Drop::not_ipv4));
    EXPECT_EQ(kDrops[stats::drop_slot(Verdict::bad_source)].key, "bad_source");
    EXPECT_STREQ(verdict_name(Verdict::ok), "ok");
    EXPECT_STREQ(verdict_name(Verdict::not_ipv4), "not IPv4");
    EXPECT_STREQ(verdict_name(Verdict::tiny_packet), "tiny packet");
    EXPECT_STREQ(verdict_name(Verdict::bad_version), "bad IP version");
    EXPECT_STREQ(verdict_name(Verdict::bad_header_length), "bad IP header length");
    EXPECT_STREQ(verdict_name(Verdict::bad_length), "bad IP length");
    EXPECT_STREQ(verdict_name(Verdict::bad_checksum), "bad IP checksum");
    EXPECT_STREQ(verdict_name(Verdict::bad_source), "bad source address");
}

TEST(nfv_check, ValidUdpFrameFromBuilder) {
    auto f = pkt::make_udp_frame({}, 64);
    Result r = check(f);
    EXPECT_EQ(r.verdict, Verdict::ok);
    EXPECT_EQ(r.out_len, 64u);
}

TEST(nfv_tiny, Frames0To14Bytes) {
    // Frames cut inside the Ethernet header, or with no IP byte at all, are tiny, whatever the
    // configuration: there is no ethertype to pass on.
    auto full = make_frame({});
    for (size_t len = 0; len <= pkt::kEthHdrLen; ++len) {
        EXPECT_EQ(CheckIpHeader().check(full.data(), len).verdict, Verdict::tiny_packet) << len;
        EXPECT_EQ(CheckIpHeader(no_checksum()).check(full.data(), len).verdict,
                  Verdict::tiny_packet)
            << len;
    }
    for (size_t len = 0; len < pkt::kEthHdrLen; ++len)
        EXPECT_EQ(CheckIpHeader(pass_non_ip()).check(full.data(), len).verdict,
                  Verdict::tiny_packet)
            << len;
}

TEST(nfv_tiny, NineteenIpBytesTinyTwentyOk) {
    auto f = make_frame({.payload = 0});  // 14 + 20 bytes, total length 20
    EXPECT_EQ(verdict(f), Verdict::ok);
    EXPECT_EQ(CheckIpHeader().check(f.data(), f.size() - 1).verdict, Verdict::tiny_packet);
}

TEST(nfv_tiny, TinyBeforeVersion) {
    auto f = make_frame({.version = 6});
    EXPECT_EQ(CheckIpHeader().check(f.data(), pkt::kEthHdrLen + 19).verdict, Verdict::tiny_packet);
}

TEST(nfv_version, NotFourIsBad) {
    for (uint8_t v : {0, 1, 5, 6, 15})
        EXPECT_EQ(verdict(make_frame({.version = v})), Verdict::bad_version) << int(v);
}

TEST(nfv_header_length, BelowFiveWordsIsBad) {
    for (uint8_t ihl = 0; ihl < 5; ++ihl)
        EXPECT_EQ(verdict(make_frame({.ihl = ihl})), Verdict::bad_header_length) << int(ihl);
}

TEST(nfv_header_length, FiveAndFifteenWordsOk) {
    auto f5 = make_frame({.ihl = 5, .payload = 8});
    EXPECT_EQ(check(f5).verdict, Verdict::ok);
    EXPECT_EQ(check(f5).out_len, 14u + 28u);
    auto f15 = make_frame({.ihl = 15, .payload = 8});  // 40 option bytes, valid checksum
    EXPECT_EQ(check(f15).verdict, Verdict::ok);
    EXPECT_EQ(check(f15).out_len, 14u + 68u);
}

TEST(nfv_header_length, EveryIhlWithOptionsOk) {
    for (uint8_t ihl = 5; ihl <= 15; ++ihl)
        EXPECT_EQ(verdict(make_frame({.ihl = ihl})), Verdict::ok) << int(ihl);
}

TEST(nfv_length, TotalEqualToAvailableOkOneMoreBad) {
    auto f = make_frame({.payload = 26});  // 60-byte frame, datagram to the last byte
    ASSERT_EQ(f.size(), 60u);
    EXPECT_EQ(check(f).verdict, Verdict::ok);
    EXPECT_EQ(check(f).out_len, 60u);
    auto g = make_frame({.payload = 26, .total_len = 47});
    EXPECT_EQ(verdict(g), Verdict::bad_length);
}

TEST(nfv_length, TotalBelowHeaderLengthIsBad) {
    EXPECT_EQ(verdict(make_frame({.ihl = 6, .total_len = 23})), Verdict::bad_length);
    EXPECT_EQ(verdict(make_frame({.ihl = 6, .total_len = 24})), Verdict::ok);
    EXPECT_EQ(verdict(make_frame({.total_len = 0})), Verdict::bad_length);
    EXPECT_EQ(verdict(make_frame({.total_len = 19})), Verdict::bad_length);
}

TEST(nfv_length, HeaderLongerThanFrameIsBadLength) {
    // IHL 15 claims 60 header bytes but only 40 IP bytes are there: Click reports the length.
    auto f = make_frame({.ihl = 15, .payload = 0});
    EXPECT_EQ(CheckIpHeader(no_checksum()).check(f.data(), 14 + 40).verdict, Verdict::bad_length);
}

TEST(nfv_length, PaddingIsTrimmed) {
    // Minimum Ethernet frame carrying a 28-byte datagram: 18 bytes of padding.
    auto f = make_frame({.payload = 8, .padding = 18});
    ASSERT_EQ(f.size(), 60u);
    Result r = check(f);
    EXPECT_EQ(r.verdict, Verdict::ok);
    EXPECT_EQ(r.out_len, 42u);
}

TEST(nfv_checksum, CorruptHeaderIsBad) {
    auto f = make_frame({});
    f[14 + 8] ^= 0x01;  // TTL
    EXPECT_EQ(verdict(f), Verdict::bad_checksum);
    EXPECT_EQ(verdict(f, no_checksum()), Verdict::ok);
}

TEST(nfv_checksum, OptionsAreCovered) {
    auto f = make_frame({.ihl = 15});
    f[14 + 59] ^= 0x80;  // last option byte
    EXPECT_EQ(verdict(f), Verdict::bad_checksum);
    EXPECT_EQ(verdict(f, no_checksum()), Verdict::ok);
}

TEST(nfv_checksum, PayloadIsNotCovered) {
    auto f = make_frame({.payload = 8});
    f[14 + 20] ^= 0xFF;
    EXPECT_EQ(verdict(f), Verdict::ok);
}

TEST(nfv_checksum, FastSumAgreesWithRfc1071) {
    std::mt19937 rng(12345);
    uint8_t h[60];
    for (int n = 0; n < 20000; ++n) {
        const unsigned ihl = 5 + rng() % 11;
        for (auto& b : h) b = uint8_t(rng());
        h[0] = uint8_t(0x40 | ihl);
        if (n % 2) pkt::fix_ipv4_checksum(h);  // half valid, half random
        EXPECT_EQ(CheckIpHeader::header_checksum_ok(h, ihl), pkt::checksum_ok(h, ihl * 4)) << n;
    }
}

TEST(nfv_checksum, SixtyFourBitSumAgreesWithRfc1071) {
    // Random 20-byte headers, half fixed up to verify, and ones made of 0x00/0xFF-heavy bytes so
    // that both end-around carries of header20_checksum_ok() are taken.
    std::mt19937 rng(777);
    uint8_t h[20];
    size_t valid = 0;
    for (int n = 0; n < 200000; ++n) {
        const unsigned style = n % 4;
        for (auto& b : h) b = style < 2 ? uint8_t(rng()) : (rng() % 8 ? 0xFF : uint8_t(rng()));
        if (style % 2) {
            h[0] = 0x45;  // fix_ipv4_checksum() sums IHL words
            pkt::fix_ipv4_checksum(h);
        }
        const bool expected = pkt::checksum_ok(h, 20);
        valid += expected;
        ASSERT_EQ(CheckIpHeader::header20_checksum_ok(h), expected) << n;
    }
    EXPECT_GT(valid, 90000u);
}

TEST(nfv_checksum, CarriesFoldIntoSum) {
    // All-0xFF words make every carry path matter; the stored checksum then is 0.
    uint8_t h[60];
    std::fill(std::begin(h), std::end(h), 0xFF);
    h[0] = 0x4F;
    pkt::fix_ipv4_checksum(h);
    EXPECT_TRUE(CheckIpHeader::header_checksum_ok(h, 15));
    h[59] = 0xFE;
    EXPECT_FALSE(CheckIpHeader::header_checksum_ok(h, 15));
}

TEST(nfv_source, DefaultBadSources) {
    EXPECT_EQ(verdict(make_frame({.src = 0})), Verdict::bad_source);
    EXPECT_EQ(verdict(make_frame({.src = 0xFFFFFFFF})), Verdict::bad_source);
    EXPECT_EQ(verdict(make_frame({.src = 1})), Verdict::ok);
    EXPECT_EQ(verdict(make_frame({.src = 0xFFFFFFFE})), Verdict::ok);
    // Only the source is checked.
    EXPECT_EQ(verdict(make_frame({.dst = 0xFFFFFFFF})), Verdict::ok);
}

TEST(nfv_source, GoodDestinationExempts) {
    Config c;
    c.good_dst = {ipv4_addr(10, 0, 0, 9), ipv4_addr(10, 0, 0, 2)};
    EXPECT_EQ(verdict(make_frame({.src = 0, .dst = ipv4_addr(10, 0, 0, 2)}), c), Verdict::ok);
    EXPECT_EQ(verdict(make_frame({.src = 0, .dst = ipv4_addr(10, 0, 0, 3)}), c),
              Verdict::bad_source);
}

TEST(nfv_source, CustomAndEmptyLists) {
    Config c;
    c.bad_src = {ipv4_addr(10, 0, 0, 1), ipv4_addr(192, 168, 1, 255), ipv4_addr(10, 0, 0, 1)};
    EXPECT_EQ(verdict(make_frame({}), c), Verdict::bad_source);
    EXPECT_EQ(verdict(make_frame({.src = ipv4_addr(192, 168, 1, 255)}), c), Verdict::bad_source);
    EXPECT_EQ(verdict(make_frame({.src = 0}), c), Verdict::ok);  // replaced the defaults
    EXPECT_EQ(CheckIpHeader(c).bad_src().size(), 2u);            // deduplicated
    c.bad_src.clear();
    EXPECT_EQ(verdict(make_frame({.src = 0}), c), Verdict::ok);
}

TEST(nfv_source, InterfacesMakeBroadcastBadAndAddressGood) {
    Interfaces itf = parse_interfaces("18.26.4.9/24");
    Config c;
    c.bad_src = itf.bad_src;
    c.good_dst = itf.good_dst;
    const uint32_t bcast = ipv4_addr(18, 26, 4, 255), me = ipv4_addr(18, 26, 4, 9);
    EXPECT_EQ(verdict(make_frame({.src = bcast, .dst = ipv4_addr(1, 2, 3, 4)}), c),
              Verdict::bad_source);
    EXPECT_EQ(verdict(make_frame({.src = bcast, .dst = me}), c), Verdict::ok);
    EXPECT_EQ(verdict(make_frame({.src = 0, .dst = ipv4_addr(1, 2, 3, 4)}), c),
              Verdict::bad_source);
    EXPECT_EQ(verdict(make_frame({.src = ipv4_addr(18, 26, 4, 10)}), c), Verdict::ok);
}

TEST(nfv_vlan, OneTagAndQinQ) {
    auto f1 = make_frame({.tags = {pkt::kEtherTypeVlan}, .payload = 8, .padding = 10});
    EXPECT_EQ(check(f1).verdict, Verdict::ok);
    EXPECT_EQ(check(f1).out_len, 18u + 28u);
    auto f2 = make_frame(
        {.tags = {pkt::kEtherTypeQinQ, pkt::kEtherTypeVlan}, .payload = 8, .padding = 10});
    EXPECT_EQ(check(f2).verdict, Verdict::ok);
    EXPECT_EQ(check(f2).out_len, 22u + 28u);
    auto f3 = make_frame({.tags = {pkt::kEtherTypeVlan, pkt::kEtherTypeVlan}});
    EXPECT_EQ(verdict(f3), Verdict::ok);
}

TEST(nfv_vlan, TagsMakingTheFrameTooShort) {
    auto f = make_frame({.tags = {pkt::kEtherTypeQinQ, pkt::kEtherTypeVlan}, .payload = 0});
    // Every cut inside the tags, and every cut leaving fewer than 20 IP bytes, is tiny.
    for (size_t len = 0; len < 22 + 20; ++len)
        EXPECT_EQ(CheckIpHeader(pass_non_ip()).check(f.data(), len).verdict, Verdict::tiny_packet)
            << len;
    EXPECT_EQ(CheckIpHeader().check(f.data(), 22 + 20).verdict, Verdict::ok);
    // 34 bytes would hold an untagged header, but the tags take 8 of them.
    EXPECT_EQ(CheckIpHeader().check(f.data(), 34).verdict, Verdict::tiny_packet);
}

TEST(nfv_vlan, ThirdTagIsNotIpv4) {
    auto f = make_frame({.tags = {pkt::kEtherTypeQinQ, pkt::kEtherTypeVlan, pkt::kEtherTypeVlan}});
    EXPECT_EQ(verdict(f), Verdict::not_ipv4);
}

TEST(nfv_non_ip, DroppedUnlessPassed) {
    for (uint16_t type : {uint16_t(0x0806), uint16_t(0x86DD), uint16_t(0x0000)}) {
        auto f = make_frame({.ethertype = type, .padding = 5});
        EXPECT_EQ(verdict(f), Verdict::not_ipv4) << type;
        Result r = check(f, pass_non_ip());
        EXPECT_EQ(r.verdict, Verdict::ok) << type;
        EXPECT_EQ(r.out_len, f.size()) << type;  // not trimmed
    }
    // A bare 14-byte non-IP header is complete: passed or not IPv4, never tiny.
    auto arp = make_frame({.ethertype = 0x0806});
    EXPECT_EQ(CheckIpHeader().check(arp.data(), 14).verdict, Verdict::not_ipv4);
    EXPECT_EQ(CheckIpHeader(pass_non_ip()).check(arp.data(), 14).verdict, Verdict::ok);
    auto tagged = make_frame({.tags = {pkt::kEtherTypeVlan}, .ethertype = 0x86DD});
    EXPECT_EQ(verdict(tagged), Verdict::not_ipv4);
}

TEST(nfv_order, FirstFailingCheckWins) {
    // bad version + bad checksum -> bad version
    auto f = make_frame({.version = 6});
    f[14 + 8] ^= 1;
    EXPECT_EQ(verdict(f), Verdict::bad_version);
    // bad version + bad header length -> bad version
    EXPECT_EQ(verdict(make_frame({.version = 6, .ihl = 2})), Verdict::bad_version);
    // bad header length + bad length -> bad header length
    EXPECT_EQ(verdict(make_frame({.ihl = 4, .total_len = 1000})), Verdict::bad_header_length);
    // bad length + bad checksum -> bad length
    auto g = make_frame({.total_len = 1000});
    g[14 + 8] ^= 1;
    EXPECT_EQ(verdict(g), Verdict::bad_length);
    // bad checksum + bad source -> bad checksum
    auto h = make_frame({.src = 0});
    h[14 + 8] ^= 1;
    EXPECT_EQ(verdict(h), Verdict::bad_checksum);
    EXPECT_EQ(verdict(h, no_checksum()), Verdict::bad_source);
    // tiny + bad version -> tiny (covered in nfv_tiny); not IPv4 comes before the IP checks
    auto n = make_frame({.ethertype = 0x0806, .version = 6});
    EXPECT_EQ(verdict(n), Verdict::not_ipv4);
}

TEST(nfv_order, DropsKeepTheFrameLength) {
    auto f = make_frame({.padding = 7, .src = 0});
    EXPECT_EQ(check(f).out_len, f.size());
}

// check()'s inline fast path must agree with check_full() on every frame.
TEST(nfv_fast_path, AgreesWithFullCheckOnMutatedFrames) {
    std::mt19937 rng(7);
    Config with_dst;
    with_dst.good_dst = {ipv4_addr(10, 0, 0, 2)};
    Config listed;  // not the default list: the fast path's filter instead of its 0/~0 test
    listed.bad_src = {0, 0xFFFFFFFF, ipv4_addr(10, 0, 0, 1)};
    Config listed_no_checksum = listed;
    listed_no_checksum.verify_checksum = false;
    const CheckIpHeader checkers[] = {
        CheckIpHeader(),         CheckIpHeader(no_checksum()), CheckIpHeader(pass_non_ip()),
        CheckIpHeader(with_dst), CheckIpHeader(listed),        CheckIpHeader(listed_no_checksum)};
    EXPECT_EQ(checkers[0].source_test(), SourceTest::rfc1812);
    EXPECT_EQ(checkers[3].source_test(), SourceTest::rfc1812);
    EXPECT_EQ(checkers[4].source_test(), SourceTest::filter);
    std::array<size_t, kVerdictCount> seen{};
    for (int n = 0; n < 200000; ++n) {
        FrameSpec s;
        if (rng() % 4 == 0) s.tags.push_back(pkt::kEtherTypeVlan);
        s.ihl = uint8_t(rng() % 8 ? 5 : 5 + rng() % 11);
        s.payload = rng() % 40;
        s.padding = rng() % 8 ? 0 : rng() % 30;
        const uint32_t srcs[] = {0, 0xFFFFFFFF, uint32_t(rng()), ipv4_addr(10, 0, 0, 1)};
        s.src = srcs[rng() % 4];
        auto f = make_frame(s);
        // A few random byte flips in the headers, and sometimes a shorter frame.
        for (unsigned k = rng() % 3; k > 0; --k) {
            const size_t at = rng() % std::min<size_t>(f.size(), l2_len(s) + 24);
            f[at] ^= uint8_t(1u << (rng() % 8));
        }
        const size_t len = rng() % 8 ? f.size() : rng() % (f.size() + 1);
        for (const auto& c : checkers) {
            const Result fast = c.check(f.data(), len), full = c.check_full(f.data(), len);
            ASSERT_EQ(fast.verdict, full.verdict) << n;
            ASSERT_EQ(fast.out_len, full.out_len) << n;
            ++seen[size_t(full.verdict)];
        }
    }
    // Every verdict of the check was exercised (the runtime's slots are no verdicts of it).
    for (size_t v = size_t(Verdict::not_ipv4); v < kVerdictCount; ++v)
        EXPECT_GT(seen[v], 100u) << verdict_name(Verdict(v));
}

TEST(nfv_fast_path, LongBadSourceList) {
    // Thousands of bad sources fill most of the filter: listed ones drop, others pass.
    std::mt19937 rng(3);
    Config c;
    for (int i = 0; i < 3000; ++i) c.bad_src.push_back(uint32_t(rng()) | 1);  // odd addresses
    const CheckIpHeader chk(c);
    EXPECT_EQ(chk.source_test(), SourceTest::filter);
    for (int i = 0; i < 3000; ++i) {
        auto bad = make_frame({.src = c.bad_src[size_t(i)]});
        EXPECT_EQ(chk.check(bad.data(), bad.size()).verdict, Verdict::bad_source);
        auto good = make_frame({.src = uint32_t(rng()) & ~1u});
        EXPECT_EQ(chk.check(good.data(), good.size()).verdict, Verdict::ok);
    }
}

TEST(nfv_parse, Ipv4List) {
    EXPECT_EQ(parse_ipv4_list("1.2.3.4"), std::vector<uint32_t>{ipv4_addr(1, 2, 3, 4)});
    EXPECT_EQ(parse_ipv4_list(" 1.2.3.4 , 0.0.0.0,255.255.255.255 "),
              (std::vector<uint32_t>{ipv4_addr(1, 2, 3, 4), 0, 0xFFFFFFFF}));
    EXPECT_TRUE(parse_ipv4_list("").empty());
    EXPECT_TRUE(parse_ipv4_list("  ").empty());
}

namespace {
// The parser throws std::invalid_argument whose message names `token`.
void expect_error(auto parse, const std::string& text, const std::string& token) {
    try {
        parse(text);
        ADD_FAILURE() << "no error for '" << text << "'";
    } catch (const std::invalid_argument& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(token), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
}
}  // namespace

TEST(nfv_parse, Ipv4ListErrors) {
    auto p = [](const std::string& s) { return parse_ipv4_list(s); };
    expect_error(p, "1.2.3", "'1.2.3'");
    expect_error(p, "1.2.3.256", "'1.2.3.256'");
    expect_error(p, "1.2.3.4x", "'1.2.3.4x'");
    expect_error(p, "1.2.3.4,nope", "'nope'");
    expect_error(p, "1.2.3.4 5.6.7.8", "'1.2.3.4 5.6.7.8'");
    expect_error(p, "1.2.3.4,,5.6.7.8", "'1.2.3.4,,5.6.7.8'");
    expect_error(p, "1.2.3.4,", "'1.2.3.4,'");
    expect_error(p, "1.2.3.4/24", "'1.2.3.4/24'");
}

TEST(nfv_parse, InterfacesClickExample) {
    // The example of Click's CheckIPHeader documentation.
    Interfaces i = parse_interfaces("18.26.4.9/24,18.32.9.44/28");
    EXPECT_EQ(i.bad_src, (std::vector<uint32_t>{ipv4_addr(18, 26, 4, 255), ipv4_addr(18, 32, 9, 47),
                                                0, 0xFFFFFFFF}));
    EXPECT_EQ(i.good_dst,
              (std::vector<uint32_t>{ipv4_addr(18, 26, 4, 9), ipv4_addr(18, 32, 9, 44)}));
}

TEST(nfv_parse, InterfacesPrefixEdgeCases) {
    // Click computes (addr & mask) | ~mask with no special case for /31 or /32.
    EXPECT_EQ(parse_interfaces("10.0.0.4/32").bad_src[0], ipv4_addr(10, 0, 0, 4));
    EXPECT_EQ(parse_interfaces("10.0.0.4").bad_src[0], ipv4_addr(10, 0, 0, 4));  // bare = /32
    EXPECT_EQ(parse_interfaces("10.0.0.4/31").bad_src[0], ipv4_addr(10, 0, 0, 5));
    EXPECT_EQ(parse_interfaces("10.0.0.5/31").bad_src[0], ipv4_addr(10, 0, 0, 5));
    EXPECT_EQ(parse_interfaces("10.1.2.3/8").bad_src[0], ipv4_addr(10, 255, 255, 255));
    EXPECT_EQ(parse_interfaces("10.1.2.3/0").bad_src[0], 0xFFFFFFFFu);
    Interfaces none = parse_interfaces("");
    EXPECT_EQ(none.bad_src, (std::vector<uint32_t>{0, 0xFFFFFFFF}));
    EXPECT_TRUE(none.good_dst.empty());
}

TEST(nfv_parse, InterfacesErrors) {
    auto p = [](const std::string& s) { return parse_interfaces(s); };
    expect_error(p, "10.0.0.1/33", "'10.0.0.1/33'");
    expect_error(p, "10.0.0.1/-1", "'10.0.0.1/-1'");
    expect_error(p, "10.0.0.1/", "'10.0.0.1/'");
    expect_error(p, "10.0.0.1/2x", "'10.0.0.1/2x'");
    expect_error(p, "10.0.0.1/24/8", "'10.0.0.1/24/8'");
    expect_error(p, "10.0.0/24", "'10.0.0'");
    expect_error(p, "10.0.0.1/24,,", "'10.0.0.1/24,,'");
}
