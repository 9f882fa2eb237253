#include <gtest/gtest.h>

#include <array>
#include <map>
#include <set>
#include <vector>

#include "clocksync/cs_wire.hpp"
#include "clocksync/master.hpp"
#include "pkt/build.hpp"
#include "pkt/bytes.hpp"
#include "pkt/checksum.hpp"
#include "support/checksum.hpp"
#include "support/doc_table.hpp"

using namespace linerate::clocksync;
using namespace linerate::pkt;

namespace {

UdpFrameSpec client_spec() {
    UdpFrameSpec s;
    s.src_mac = {0x02, 0, 0, 0, 0, 0xC1};
    s.dst_mac = {0x02, 0, 0, 0, 0, 0x4D};
    s.src_ip = ipv4_addr(10, 0, 0, 1);
    s.dst_ip = ipv4_addr(10, 0, 0, 2);
    s.src_port = kCsUdpPort;
    s.dst_port = kCsUdpPort;
    return s;
}

std::vector<uint8_t> request(uint32_t client = 7, uint64_t seq = 42, uint64_t t1 = 1000) {
    std::vector<uint8_t> f(kCsFrameLen);
    EXPECT_EQ(build_request(f.data(), f.size(), client_spec(), client, seq, t1), kCsFrameLen);
    return f;
}

Drop drop_of(const std::vector<uint8_t>& f) {
    CsPacket p = parse_cs_packet(f.data(), f.size());
    EXPECT_FALSE(p.ok);
    return p.drop;
}

// `back` is the frame `sent` turned around (cs_wire.cpp's turn_around) as type `type`: MACs and
// IPs swapped, the IP checksum untouched and still valid, no UDP checksum.
void expect_turned_around(const uint8_t* back, const uint8_t* sent, uint8_t type) {
    EXPECT_EQ(0, memcmp(&back[0], &sent[6], 6));  // MACs swapped
    EXPECT_EQ(0, memcmp(&back[6], &sent[0], 6));
    EXPECT_EQ(0, memcmp(&back[26], &sent[30], 4));  // IPs swapped
    EXPECT_EQ(0, memcmp(&back[30], &sent[26], 4));
    EXPECT_EQ(0, memcmp(&back[24], &sent[24], 2));  // IP checksum untouched and still valid
    EXPECT_TRUE(checksum_ok(&back[14], 20));
    EXPECT_EQ(load_be16(&back[40]), 0);  // UDP checksum: none
    EXPECT_EQ(back[45], type);
}

}  // namespace

TEST(CsWire, RequestLayoutFollowsDesign) {
    auto f = request(0x01020304, 0x1122334455667788, 0xA0A1A2A3A4A5A6A7);
    ASSERT_EQ(f.size(), 84u);
    EXPECT_EQ(load_be16(&f[42]), 0x4353);
    EXPECT_EQ(f[44], 1);
    EXPECT_EQ(f[45], 1);
    EXPECT_EQ(load_be16(&f[46]), 0);
    EXPECT_EQ(load_be32(&f[48]), 0x01020304u);
    EXPECT_EQ(load_be64(&f[52]), 0x1122334455667788u);
    EXPECT_EQ(load_be64(&f[60]), 0xA0A1A2A3A4A5A6A7u);
    EXPECT_EQ(load_be64(&f[68]), 0u);
    EXPECT_EQ(load_be64(&f[76]), 0u);
    EXPECT_TRUE(checksum_ok(&f[14], 20));
    EXPECT_EQ(UdpView{&f[34]}.length(), 8 + 42);
}

// docs/wire-formats.md is the contract users read: its clocksync table must be the code's layout,
// and the message must end where the table ends (84-byte frame).
TEST(CsWire, DocumentedTableMatchesTheConstants) {
    using linerate::test::DocField;
    const size_t base = kUdpPayloadOffset;
    const std::map<std::string, DocField> code = {
        {"magic", {base + kCsOffMagic, kCsOffVersion - kCsOffMagic}},
        {"version", {base + kCsOffVersion, kCsOffType - kCsOffVersion}},
        {"type", {base + kCsOffType, kCsOffReserved - kCsOffType}},
        {"reserved", {base + kCsOffReserved, kCsOffClientId - kCsOffReserved}},
        {"client_id", {base + kCsOffClientId, kCsOffSeq - kCsOffClientId}},
        {"seq", {base + kCsOffSeq, kCsOffT1 - kCsOffSeq}},
        {"t1", {base + kCsOffT1, kCsOffT2 - kCsOffT1}},
        {"t2", {base + kCsOffT2, kCsOffT3 - kCsOffT2}},
        {"t3", {base + kCsOffT3, kCsHeaderLen - kCsOffT3}},
    };
    linerate::test::expect_wire_table("## clocksync", code);
    EXPECT_EQ(code.at("t3").offset + code.at("t3").size, 84u);
}

// A request written byte by byte from the documented layout (not by build_request): exactly 84
// bytes is a whole message, and a longer datagram is accepted with its extra bytes echoed.
TEST(CsWire, FrameOfExactlyTheDocumentedSizeAndLongerAreAccepted) {
    for (size_t extra : {size_t(0), size_t(1), size_t(16)}) {
        std::vector<uint8_t> f(84 + extra, 0);
        write_udp_headers(f.data(), f.size(), client_spec());
        store_be16(&f[42], 0x4353);
        f[44] = 1;
        f[45] = 1;
        store_be32(&f[48], 77);
        store_be64(&f[52], 5);
        store_be64(&f[60], 1234);
        for (size_t i = 84; i < f.size(); ++i) f[i] = uint8_t(i);
        CsPacket p = parse_cs_packet(f.data(), f.size());
        ASSERT_TRUE(p.ok) << "extra " << extra << ": " << drop_name(p.drop);
        EXPECT_EQ(p.client_id, 77u);
        EXPECT_EQ(p.seq, 5u);
        EXPECT_EQ(p.t1, 1234u);
        auto original = f;
        ASSERT_TRUE(answer_request(f.data(), f.size(), 10, 20).ok);
        EXPECT_TRUE(std::equal(f.begin() + 84, f.end(), original.begin() + 84));
        EXPECT_EQ(parse_cs_packet(f.data(), f.size()).t3, 20u);
    }
}

TEST(CsWire, RequestRoundTrip) {
    auto f = request(7, 42, 123456789);
    CsPacket p = parse_cs_packet(f.data(), f.size());
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.type, CsType::request);
    EXPECT_EQ(p.l3_offset, 14);
    EXPECT_EQ(p.payload_offset, 42);
    EXPECT_EQ(p.client_id, 7u);
    EXPECT_EQ(p.seq, 42u);
    EXPECT_EQ(p.t1, 123456789u);
    EXPECT_EQ(p.t2, 0u);
    EXPECT_EQ(p.t3, 0u);
}

TEST(CsWire, BuildRequestNeedsRoom) {
    std::array<uint8_t, kCsFrameLen - 1> small{};
    EXPECT_EQ(build_request(small.data(), small.size(), client_spec(), 1, 1, 1), 0u);
}

TEST(CsWire, AnswerRequestMakesResponseInPlace) {
    auto req = request(7, 42, 1000);
    auto f = req;
    CsPacket p = answer_request(f.data(), f.size(), 5000, 5600);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.type, CsType::response);
    expect_turned_around(f.data(), req.data(), 2);
    EXPECT_EQ(load_be64(&f[68]), 5000u);
    EXPECT_EQ(load_be64(&f[76]), 5600u);
    EXPECT_EQ(0, memcmp(&f[46], &req[46], 22));  // reserved, client id, seq, t1 echoed

    CsPacket r = parse_cs_packet(f.data(), f.size());
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.type, CsType::response);
    EXPECT_EQ(r.client_id, 7u);
    EXPECT_EQ(r.seq, 42u);
    EXPECT_EQ(r.t1, 1000u);
    EXPECT_EQ(r.t2, 5000u);
    EXPECT_EQ(r.t3, 5600u);
}

TEST(CsWire, SwappedPortsAndAddressesKeepChecksumForAnyAddresses) {
    UdpFrameSpec s = client_spec();
    s.src_ip = ipv4_addr(192, 168, 200, 77);
    s.dst_ip = ipv4_addr(10, 255, 1, 3);
    s.src_port = 40000;  // a client on another source port gets its answer on that port
    std::vector<uint8_t> f(kCsFrameLen);
    build_request(f.data(), f.size(), s, 1, 1, 1);
    ASSERT_TRUE(answer_request(f.data(), f.size(), 2, 3).ok);
    EXPECT_TRUE(checksum_ok(&f[14], 20));
    EXPECT_EQ(UdpView{&f[34]}.src_port(), kCsUdpPort);
    EXPECT_EQ(UdpView{&f[34]}.dst_port(), 40000);
    EXPECT_EQ(parse_cs_packet(f.data(), f.size(), 40000).type, CsType::response);
}

TEST(CsWire, SetT3Restamps) {
    auto f = request();
    CsPacket p = answer_request(f.data(), f.size(), 10, 0);
    set_t3(f.data(), p, 99);
    EXPECT_EQ(parse_cs_packet(f.data(), f.size()).t3, 99u);
}

TEST(CsWire, VlanTaggedAndPaddedFrames) {
    auto plain = request(3, 4, 5);
    std::vector<uint8_t> f(plain.begin(), plain.begin() + 12);
    const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x64};
    f.insert(f.end(), tag, tag + 4);
    f.insert(f.end(), plain.begin() + 12, plain.end());
    f.resize(f.size() + 10, 0);  // trailing padding beyond the IP length is fine
    CsPacket p = parse_cs_packet(f.data(), f.size());
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.l3_offset, 18);
    EXPECT_EQ(p.payload_offset, 46);
    EXPECT_EQ(p.seq, 4u);
    ASSERT_TRUE(answer_request(f.data(), f.size(), 8, 9).ok);
    EXPECT_EQ(load_be16(&f[12]), kEtherTypeVlan);
    EXPECT_TRUE(checksum_ok(&f[18], 20));
    EXPECT_EQ(parse_cs_packet(f.data(), f.size()).t3, 9u);
}

TEST(CsWire, NotClocksync) {
    auto f = request();
    EXPECT_EQ(drop_of(std::vector<uint8_t>(f.begin(), f.begin() + 10)), Drop::not_clocksync);
    // Cut before the UDP destination port: cannot be told to be ours.
    EXPECT_EQ(drop_of(std::vector<uint8_t>(f.begin(), f.begin() + 37)), Drop::not_clocksync);

    auto g = f;
    store_be16(&g[12], 0x86DD);
    EXPECT_EQ(drop_of(g), Drop::not_clocksync);

    g = f;
    g[14 + 9] = 6;  // TCP
    fix_ipv4_checksum(&g[14]);
    EXPECT_EQ(drop_of(g), Drop::not_clocksync);

    g = f;
    g[14] = 0x65;  // IP version 6 in an IPv4 ethertype
    EXPECT_EQ(drop_of(g), Drop::not_clocksync);

    g = f;
    g[14] = 0x44;  // IHL 4 (< 20 bytes)
    EXPECT_EQ(drop_of(g), Drop::not_clocksync);

    g = f;
    store_be16(&g[36], 9000);  // another UDP port
    EXPECT_EQ(drop_of(g), Drop::not_clocksync);

    g = f;
    store_be16(&g[20], 0x0010);  // a later fragment: no UDP header there
    fix_ipv4_checksum(&g[14]);
    EXPECT_EQ(drop_of(g), Drop::not_clocksync);

    // The client may listen on another port: then 9001 frames are not its own.
    EXPECT_EQ(parse_cs_packet(f.data(), f.size(), 40000).drop, Drop::not_clocksync);
}

TEST(CsWire, Malformed) {
    auto f = request();
    // Port readable, clocksync header cut.
    EXPECT_EQ(drop_of(std::vector<uint8_t>(f.begin(), f.begin() + 60)), Drop::malformed);
    EXPECT_EQ(drop_of(std::vector<uint8_t>(f.begin(), f.end() - 1)), Drop::malformed);

    auto g = f;
    store_be16(&g[20], 0x2000);  // more fragments
    fix_ipv4_checksum(&g[14]);
    EXPECT_EQ(drop_of(g), Drop::malformed);

    g = f;
    g[24] ^= 0x01;  // IP checksum
    EXPECT_EQ(drop_of(g), Drop::bad_ip_checksum);

    g = f;
    store_be16(&g[16], 20 + 7);  // IP total length cannot hold UDP
    fix_ipv4_checksum(&g[14]);
    EXPECT_EQ(drop_of(g), Drop::malformed);

    g = f;
    store_be16(&g[16], 70 + 1);  // IP total length beyond the frame
    fix_ipv4_checksum(&g[14]);
    EXPECT_EQ(drop_of(g), Drop::malformed);

    g = f;
    store_be16(&g[38], 8 + 41);  // UDP length cannot hold the clocksync header
    EXPECT_EQ(drop_of(g), Drop::malformed);

    g = f;
    store_be16(&g[38], 50 + 1);  // UDP length beyond the IP payload
    EXPECT_EQ(drop_of(g), Drop::malformed);

    g = f;
    store_be16(&g[38], 7);
    EXPECT_EQ(drop_of(g), Drop::malformed);
}

TEST(CsWire, BadMagicVersionType) {
    auto f = request();
    auto g = f;
    store_be16(&g[42], 0x4B56);  // kvagg's magic
    EXPECT_EQ(drop_of(g), Drop::bad_magic);
    g = f;
    g[44] = 2;
    EXPECT_EQ(drop_of(g), Drop::bad_version);
    for (uint8_t t : {0, 5, 255}) {
        g = f;
        g[45] = t;
        EXPECT_EQ(drop_of(g), Drop::bad_type);
    }
}

TEST(CsWire, MasterRejectsResponsesAndGarbageUntouched) {
    auto f = request();
    answer_request(f.data(), f.size(), 1, 2);
    auto before = f;
    CsPacket p = answer_request(f.data(), f.size(), 3, 4);
    EXPECT_FALSE(p.ok);
    EXPECT_EQ(p.drop, Drop::bad_type);
    EXPECT_EQ(f, before);

    auto g = request();
    g[44] = 9;
    before = g;
    EXPECT_EQ(answer_request(g.data(), g.size(), 3, 4).drop, Drop::bad_version);
    EXPECT_EQ(g, before);
}

// A warm-up frame: a request's layout with type 3; the master drops it as `warmup`, unanswered.
TEST(CsWire, WarmupIsParsedAndNeverAnswered) {
    std::array<uint8_t, kCsFrameLen> f{};
    ASSERT_EQ(build_warmup(f.data(), f.size(), client_spec(), 7), kCsFrameLen);
    EXPECT_EQ(f[45], 3);
    const CsPacket p = parse_cs_packet(f.data(), f.size());
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.type, CsType::warmup);
    EXPECT_EQ(p.client_id, 7u);
    const auto before = f;
    const CsPacket a = answer_request(f.data(), f.size(), 1, 2);
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.drop, Drop::warmup);
    EXPECT_EQ(f, before);
    EXPECT_EQ(build_warmup(f.data(), kCsFrameLen - 1, client_spec(), 7), 0u);
}

// A warm-up frame that asks for its echo (kCsFlagEcho in the reserved field) comes back turned
// around as a response is, type 4, unstamped; the echo itself is no request for the master.
TEST(CsWire, WarmupThatAsksIsEchoedUnstamped) {
    std::array<uint8_t, kCsFrameLen> w{};
    ASSERT_EQ(build_warmup(w.data(), w.size(), client_spec(), 7, true), kCsFrameLen);
    EXPECT_EQ(w[45], 3);
    EXPECT_EQ(load_be16(&w[46]), 0x0001);
    auto f = w;
    const CsPacket p = answer_request(f.data(), f.size(), 5000, 5600);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.type, CsType::warmup_echo);
    expect_turned_around(f.data(), w.data(), 4);
    EXPECT_EQ(0, memcmp(&f[46], &w[46], 38));  // reserved, client id, seq, t1, t2, t3 as sent
    EXPECT_EQ(load_be64(&f[68]), 0u);          // no stamps
    EXPECT_EQ(load_be64(&f[76]), 0u);
    const CsPacket e = parse_cs_packet(f.data(), f.size());
    ASSERT_TRUE(e.ok);
    EXPECT_EQ(e.type, CsType::warmup_echo);
    EXPECT_EQ(e.client_id, 7u);
    const auto echo = f;
    EXPECT_EQ(answer_request(f.data(), f.size(), 1, 2).drop, Drop::bad_type);  // never re-echoed
    EXPECT_EQ(f, echo);
    f[45] = 5;  // past the last type
    EXPECT_EQ(drop_of(std::vector<uint8_t>(f.begin(), f.end())), Drop::bad_type);
}

TEST(CsWire, ReservedFieldIsEchoedNotChecked) {
    auto f = request();
    store_be16(&f[46], 0xBEEF);
    ASSERT_TRUE(answer_request(f.data(), f.size(), 1, 2).ok);
    EXPECT_EQ(load_be16(&f[46]), 0xBEEF);
}

TEST(CsWire, DropNamesFollowEnum) {
    EXPECT_EQ(kDropCount, 15u);  // the runtime's 2, clocksync's 13
    EXPECT_EQ(drop_name(Drop::tx_full), "tx_full");
    EXPECT_EQ(drop_name(Drop::not_clocksync), "not_clocksync");
    EXPECT_EQ(drop_name(Drop::malformed), "malformed");
    EXPECT_EQ(drop_name(Drop::bad_ip_checksum), "bad_ip_checksum");
    EXPECT_EQ(drop_name(Drop::bad_udp_checksum), "bad_udp_checksum");
    EXPECT_EQ(drop_name(Drop::split_header), "split_header");
    EXPECT_EQ(drop_name(Drop::warmup), "warmup");
    EXPECT_EQ(drop_name(Drop::bad_magic), "bad_magic");
    EXPECT_EQ(drop_name(Drop::bad_version), "bad_version");
    EXPECT_EQ(drop_name(Drop::bad_type), "bad_type");
    EXPECT_EQ(drop_name(Drop::bad_auth), "bad_auth");
    EXPECT_EQ(drop_name(Drop::unknown_sequence), "unknown_sequence");
    EXPECT_EQ(drop_name(Drop::wrong_client), "wrong_client");
    EXPECT_EQ(drop_name(Drop::negative_rtt), "negative_rtt");

    DropCounters c;
    c.add(Drop::wrong_client);
    c.add(Drop::bad_magic, 2);
    EXPECT_EQ(c[Drop::wrong_client], 1u);
    EXPECT_EQ(c[Drop::bad_magic], 2u);
    EXPECT_EQ(c.total(), 3u);
}

// docs/wire-formats.md, Checksums: requests and responses with a wrong IPv4 header checksum or
// a wrong non-zero UDP checksum are dropped by reason (after the lengths, before the magic);
// the port's verdict replaces the sums; --no-verify-checksums takes them.
TEST(CsWireChecksums, VerifiedUnlessTurnedOff) {
    auto f = request();
    EXPECT_TRUE(parse_cs_packet(f.data(), f.size()).ok);  // UDP checksum 0: none
    linerate::test::set_udp_checksum(f);
    ASSERT_TRUE(parse_cs_packet(f.data(), f.size()).ok);
    auto g = f;
    g[62] ^= 0x20;  // t1
    EXPECT_EQ(drop_of(g), Drop::bad_udp_checksum);
    EXPECT_TRUE(parse_cs_packet(g.data(), g.size(), kCsUdpPort, {.verify = false}).ok);
    g = f;
    g[22] ^= 0x01;  // TTL
    EXPECT_EQ(drop_of(g), Drop::bad_ip_checksum);
    store_be16(&g[42], 0x4B56);  // the magic too: the checksum comes first
    EXPECT_EQ(drop_of(g), Drop::bad_ip_checksum);
    g = f;
    g[22] ^= 0x01;
    store_be16(&g[38], 7);  // lengths come before it
    EXPECT_EQ(drop_of(g), Drop::malformed);

    g = f;
    g[62] ^= 0x20;
    g[22] ^= 0x01;
    using linerate::pkt::RxCheck;
    EXPECT_TRUE(
        parse_cs_packet(g.data(), g.size(), kCsUdpPort, {.port = {RxCheck::good, RxCheck::good}})
            .ok);
    EXPECT_EQ(
        parse_cs_packet(f.data(), f.size(), kCsUdpPort, {.port = {RxCheck::good, RxCheck::bad}})
            .drop,
        Drop::bad_udp_checksum);
}

TEST(CsWireChecksums, OffloadedUdpChecksumIsAcceptedAndMarked) {
    auto f = request();
    linerate::test::set_partial_udp_checksum(f);
    const CsPacket p = parse_cs_packet(f.data(), f.size());
    EXPECT_TRUE(p.ok);
    EXPECT_TRUE(p.udp_checksum_offloaded);
    EXPECT_EQ(parse_cs_packet(f.data(), f.size(), kCsUdpPort, {.accept_offloaded = false}).drop,
              Drop::bad_udp_checksum);
    linerate::test::set_udp_checksum(f);
    EXPECT_FALSE(parse_cs_packet(f.data(), f.size()).udp_checksum_offloaded);
}

TEST(CsWireChecksums, TheResponseKeepsAValidIpChecksumAndSendsNoUdpChecksum) {
    auto f = request();
    linerate::test::set_udp_checksum(f);
    ASSERT_TRUE(answer_request(f.data(), f.size(), 5, 6).ok);
    EXPECT_TRUE(checksum_ok(&f[14], 20));
    EXPECT_EQ(load_be16(&f[40]), 0);
    EXPECT_TRUE(parse_cs_packet(f.data(), f.size()).ok);
}
