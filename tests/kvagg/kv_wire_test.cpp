#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "kv_wire_c.h"
#include "kvagg/kv_wire.hpp"
#include "linerate/kvagg_wire.h"
#include "pkt/checksum.hpp"
#include "support/checksum.hpp"
#include "support/doc_table.hpp"

using namespace linerate::kvagg;
using namespace linerate::pkt;

namespace {

UdpFrameSpec kv_spec() {
    UdpFrameSpec s;
    s.dst_port = kKvDefaultPort;
    return s;
}

const std::vector<KvTuple> kTuples = {{1, 10}, {0, 7}, {~0ull, 0x0102030405060708ull}};

std::vector<uint8_t> good_frame() {
    return make_kv_frame(kv_spec(), 0xA1B2C3D4, 0x1122334455667788ull, kTuples);
}

KvVerdict verdict(const std::vector<uint8_t>& f, uint16_t port = kKvDefaultPort) {
    return parse_kv_packet(f.data(), f.size(), port).verdict;
}

// Inserts bytes at `at` (tests build tagged frames and IPv4 options this way).
std::vector<uint8_t> insert(std::vector<uint8_t> f, size_t at, std::vector<uint8_t> bytes) {
    f.insert(f.begin() + long(at), bytes.begin(), bytes.end());
    return f;
}

// What the mutation tests hand both parsers: up to two bit flips in the first 70 bytes of `f`,
// its length cut one time in eight, another UDP port one time in sixteen.
struct Mutated {
    size_t len;
    uint16_t port;
};
Mutated mutate(std::vector<uint8_t>& f, std::mt19937& rng) {
    for (unsigned k = rng() % 3; k > 0; --k) {
        const size_t at = rng() % std::min<size_t>(f.size(), 70);
        f[at] ^= uint8_t(1u << (rng() % 8));
    }
    const size_t len = rng() % 8 ? f.size() : rng() % (f.size() + 1);
    const uint16_t port = rng() % 16 ? kKvDefaultPort : uint16_t(rng());
    return {len, port};
}

}  // namespace

TEST(KvWire, EncoderWritesTheDesignLayout) {
    const auto f = good_frame();
    ASSERT_EQ(f.size(), 64u + 16 * kTuples.size());
    EXPECT_EQ(kv_frame_len(3), f.size());
    EXPECT_TRUE(checksum_ok(&f[14], 20));
    EXPECT_EQ(Ipv4View{&f[14]}.total_len(), f.size() - 14);
    EXPECT_EQ(UdpView{&f[34]}.length(), f.size() - 34);
    EXPECT_EQ(UdpView{&f[34]}.dst_port(), 9000);
    // Offsets of docs/wire-formats.md, checked on raw bytes.
    EXPECT_EQ(f[42], 0x4B);
    EXPECT_EQ(f[43], 0x56);
    EXPECT_EQ(f[44], 1);
    EXPECT_EQ(f[45], 0);
    EXPECT_EQ(load_be16(&f[46]), 3);
    EXPECT_EQ(load_be32(&f[48]), 0xA1B2C3D4u);
    EXPECT_EQ(load_be64(&f[52]), 0x1122334455667788ull);
    EXPECT_EQ(load_be32(&f[60]), 0u);
    EXPECT_EQ(load_be64(&f[64]), 1u);
    EXPECT_EQ(load_be64(&f[72]), 10u);
    EXPECT_EQ(load_be64(&f[96]), ~0ull);
    EXPECT_EQ(f[104], 0x01);
    EXPECT_EQ(f[111], 0x08);
}

// docs/wire-formats.md is the contract users read: its kvagg table must be the layout of
// include/linerate/kvagg_wire.h, the numbers kvagg and the C++ client are built with.
TEST(KvWire, DocumentedTableMatchesTheConstants) {
    using linerate::test::DocField;
    constexpr size_t at = kUdpPayloadOffset;  // the app header in a canonical frame
    const std::map<std::string, DocField> code = {
        {"magic", {at + LINERATE_KV_MAGIC_OFF, LINERATE_KV_VERSION_OFF - LINERATE_KV_MAGIC_OFF}},
        {"version", {at + LINERATE_KV_VERSION_OFF, LINERATE_KV_OP_OFF - LINERATE_KV_VERSION_OFF}},
        {"op", {at + LINERATE_KV_OP_OFF, LINERATE_KV_COUNT_OFF - LINERATE_KV_OP_OFF}},
        {"count", {at + LINERATE_KV_COUNT_OFF, LINERATE_KV_STREAM_OFF - LINERATE_KV_COUNT_OFF}},
        {"stream", {at + LINERATE_KV_STREAM_OFF, LINERATE_KV_SEQ_OFF - LINERATE_KV_STREAM_OFF}},
        {"seq", {at + LINERATE_KV_SEQ_OFF, LINERATE_KV_RESERVED_OFF - LINERATE_KV_SEQ_OFF}},
        {"reserved",
         {at + LINERATE_KV_RESERVED_OFF, LINERATE_KV_HEADER_LEN - LINERATE_KV_RESERVED_OFF}},
        {"tuple", {at + LINERATE_KV_HEADER_LEN, LINERATE_KV_TUPLE_LEN}},
    };
    linerate::test::expect_wire_table("## kvagg", code);
    static_assert(kKvTuplesOffset == at + LINERATE_KV_HEADER_LEN);
}

// kv_wire_c.c (the header compiled as C11) lists every LINERATE_KV_ constant the header defines.
TEST(KvWire, CListHasEveryConstantOfTheHeader) {
    std::ifstream in(linerate::test::source_file("include/linerate/kvagg_wire.h"));
    const std::regex define(R"(^#define LINERATE_KV_(\w+) )");
    std::set<std::string> in_header, in_list;
    std::smatch m;
    for (std::string line; std::getline(in, line);)
        if (std::regex_search(line, m, define)) in_header.insert(m[1]);
    size_t n = 0;
    const kv_wire_constant* c = kv_wire_c_constants(&n);
    for (size_t i = 0; i < n; ++i) in_list.insert(c[i].name);
    EXPECT_GT(in_header.size(), 20u);
    EXPECT_EQ(in_list, in_header);
}

// python/linerate_kvagg.py keeps its own copy of the numbers (one file users copy): it must be
// the header's, name by name, its header struct's layout and its Client's default port included.
TEST(KvWire, PythonClientHasTheNumbersOfTheHeader) {
    const std::string cmd = "python3 " +
                            linerate::test::source_file("tests/kvagg/py_wire_constants.py") + " " +
                            linerate::test::source_file("python") + " 2>&1";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr) << cmd;
    char buf[4096];
    for (size_t got; (got = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, got);
    ASSERT_EQ(pclose(p), 0) << cmd << ": " << out;
    const nlohmann::json py = nlohmann::json::parse(out);
    size_t n = 0;
    const kv_wire_constant* c = kv_wire_c_constants(&n);
    for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(py.contains(c[i].name)) << "python/linerate_kvagg.py lacks " << c[i].name;
        EXPECT_EQ(py[c[i].name].get<uint64_t>(), c[i].value) << c[i].name;
    }
    EXPECT_EQ(py["CLIENT_DEFAULT_PORT"].get<uint64_t>(), uint64_t(LINERATE_KV_DEFAULT_PORT));
}

TEST(KvWire, ParsesAGoodFrame) {
    const auto f = good_frame();
    const KvPacket p = parse_kv_packet(f.data(), f.size(), kKvDefaultPort);
    ASSERT_EQ(p.verdict, KvVerdict::ok);
    EXPECT_EQ(p.stream, 0xA1B2C3D4u);
    EXPECT_EQ(p.seq, 0x1122334455667788ull);
    ASSERT_EQ(p.tuple_count, 3);
    EXPECT_EQ(p.tuples, f.data() + 64);
    for (size_t i = 0; i < kTuples.size(); ++i) {
        EXPECT_EQ(kv_tuple_key(p.tuples, i), kTuples[i].key);
        EXPECT_EQ(kv_tuple_value(p.tuples, i), kTuples[i].value);
    }
}

TEST(KvWire, ZeroTuplesIsValid) {
    const auto f = make_kv_frame(kv_spec(), 1, 2, {});
    EXPECT_EQ(f.size(), 64u);
    const KvPacket p = parse_kv_packet(f.data(), f.size(), kKvDefaultPort);
    EXPECT_EQ(p.verdict, KvVerdict::ok);
    EXPECT_EQ(p.tuple_count, 0);
}

TEST(KvWire, EthernetPaddingAndTrailingPayloadAreAccepted) {
    auto f = good_frame();
    f.resize(f.size() + 8, 0);  // padding after the IPv4 datagram
    EXPECT_EQ(verdict(f), KvVerdict::ok);
    // UDP payload longer than the N tuples (e.g. a fixed-size generator frame).
    auto g = make_kv_frame(kv_spec(), 1, 2, kTuples);
    store_be16(&g[46], 2);
    EXPECT_EQ(verdict(g), KvVerdict::ok);
}

// Cut before the UDP destination port: nothing says the frame is kvagg's (pkt/udp_payload.hpp).
// Cut after it: kvagg's, and malformed.
TEST(KvWire, TruncatedFramesAreNotKvaggUntilThePortThenMalformed) {
    const auto f = good_frame();
    for (size_t len : {size_t(0), size_t(10), size_t(13), size_t(14), size_t(33), size_t(41)})
        EXPECT_EQ(parse_kv_packet(f.data(), len, kKvDefaultPort).verdict, KvVerdict::not_kvagg)
            << "len " << len;
    for (size_t len : {size_t(42), size_t(50), size_t(63), f.size() - 1})
        EXPECT_EQ(parse_kv_packet(f.data(), len, kKvDefaultPort).verdict, KvVerdict::malformed)
            << "len " << len;
}

TEST(KvWire, IpTotalLengthBeyondFrameIsMalformed) {
    auto f = good_frame();
    store_be16(&f[16], uint16_t(f.size() - 14 + 1));
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
}

TEST(KvWire, BadIpHeaderIsNotKvaggAndBadLengthsAreMalformed) {
    auto f = good_frame();
    f[14] = 0x65;  // version 6 under the IPv4 ethertype: no IPv4 header to read a port from
    EXPECT_EQ(verdict(f), KvVerdict::not_kvagg);
    f = good_frame();
    f[14] = 0x44;  // IHL 4
    EXPECT_EQ(verdict(f), KvVerdict::not_kvagg);
    f = good_frame();
    store_be16(&f[16], 19);  // total length below the header length
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
    f = good_frame();
    store_be16(&f[16], 24);  // no room for the UDP header
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
}

TEST(KvWire, UdpLengthTooShortForTuplesIsMalformed) {
    auto f = good_frame();
    store_be16(&f[46], 4);  // N = 4 but the payload holds 3
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
    f = good_frame();
    store_be16(&f[38], uint16_t(8 + 22 + 16 * 3 - 1));  // UDP length one short of the tuples
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
    f = good_frame();
    store_be16(&f[38], 8 + 21);  // not even the app header
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
    f = good_frame();
    store_be16(&f[38], 7);  // below the UDP header
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
    f = good_frame();
    store_be16(&f[38], uint16_t(f.size() - 34 + 1));  // longer than the IPv4 payload
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
}

TEST(KvWire, UnknownMagicVersionOp) {
    auto f = good_frame();
    f[43] = 0x57;
    EXPECT_EQ(verdict(f), KvVerdict::bad_magic);
    f = good_frame();
    f[44] = 2;
    EXPECT_EQ(verdict(f), KvVerdict::bad_version);
    f = good_frame();
    f[44] = 0;
    EXPECT_EQ(verdict(f), KvVerdict::bad_version);
    f = good_frame();
    f[45] = 4;
    EXPECT_EQ(verdict(f), KvVerdict::bad_op);
    f = good_frame();
    f[45] = kKvOpRead | kKvOpResponse;  // responses are not accepted
    EXPECT_EQ(verdict(f), KvVerdict::bad_op);
    // Header fields written through the encoder too.
    f = good_frame();
    write_kv_header(&f[42], {.tuple_count = 3, .op = 7});
    EXPECT_EQ(verdict(f), KvVerdict::bad_op);
}

TEST(KvWire, OtherTrafficIsNotKvagg) {
    const auto f = good_frame();
    EXPECT_EQ(verdict(f, 9001), KvVerdict::not_kvagg);  // wrong port
    auto g = f;
    store_be16(&g[12], 0x0806);  // ARP
    EXPECT_EQ(verdict(g), KvVerdict::not_kvagg);
    g = f;
    store_be16(&g[12], 0x86DD);  // IPv6
    EXPECT_EQ(verdict(g), KvVerdict::not_kvagg);
    g = f;
    g[23] = 6;  // TCP
    EXPECT_EQ(verdict(g), KvVerdict::not_kvagg);
    auto u = make_udp_frame(UdpFrameSpec{}, 100);  // plain UDP to port 9
    EXPECT_EQ(verdict(u), KvVerdict::not_kvagg);
}

TEST(KvWire, Fragments) {
    auto f = good_frame();
    store_be16(&f[20], 0x0010);  // non-first fragment: no UDP header inside
    EXPECT_EQ(verdict(f), KvVerdict::not_kvagg);
    f = good_frame();
    store_be16(&f[20], 0x2000);  // first fragment (MF) of a kvagg datagram
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
}

TEST(KvWire, VlanTagsAreAccepted) {
    const auto f = good_frame();
    auto one = insert(f, 12, {0x81, 0x00, 0x00, 0x05});
    KvPacket p = parse_kv_packet(one.data(), one.size(), kKvDefaultPort);
    ASSERT_EQ(p.verdict, KvVerdict::ok);
    EXPECT_EQ(p.tuples, one.data() + 68);
    EXPECT_EQ(kv_tuple_value(p.tuples, 2), kTuples[2].value);
    auto two = insert(one, 12, {0x88, 0xA8, 0x00, 0x07});
    EXPECT_EQ(verdict(two), KvVerdict::ok);
    auto three = insert(two, 12, {0x81, 0x00, 0x00, 0x09});
    EXPECT_EQ(verdict(three), KvVerdict::not_kvagg);  // beyond two tags: ethertype stays VLAN
    // A tagged frame cut inside the tag: nothing says it is kvagg's.
    EXPECT_EQ(parse_kv_packet(one.data(), 15, kKvDefaultPort).verdict, KvVerdict::not_kvagg);
}

TEST(KvWire, Ipv4OptionsShiftTheAppHeader) {
    auto f = insert(good_frame(), 34, {0x01, 0x01, 0x01, 0x00});  // 4 bytes of NOP/EOL options
    f[14] = 0x46;
    store_be16(&f[16], uint16_t(f.size() - 14));
    fix_ipv4_checksum(&f[14]);
    const KvPacket p = parse_kv_packet(f.data(), f.size(), kKvDefaultPort);
    ASSERT_EQ(p.verdict, KvVerdict::ok);
    EXPECT_EQ(p.seq, 0x1122334455667788ull);
    EXPECT_EQ(p.tuples, f.data() + 68);
    EXPECT_EQ(kv_tuple_key(p.tuples, 2), ~0ull);
    // IHL larger than the total length: the UDP header would start inside the tuples, where no
    // kvagg port is; with the port there, the lengths are wrong.
    f[14] = 0x4F;
    store_be16(&f[16], 40);
    EXPECT_EQ(verdict(f), KvVerdict::not_kvagg);
    store_be16(&f[14 + 60 + 2], kKvDefaultPort);
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
}

TEST(KvWire, EncoderIntoBufferAndLimits) {
    std::vector<uint8_t> buf(200, 0xEE);
    const size_t len = write_kv_frame(buf.data(), kv_spec(), 5, 6, kTuples);
    EXPECT_EQ(len, 112u);
    EXPECT_EQ(parse_kv_packet(buf.data(), len, kKvDefaultPort).verdict, KvVerdict::ok);
    EXPECT_EQ(buf[len], 0xEE);  // nothing written beyond the frame
    EXPECT_EQ(kv_max_tuples(1496), 89u);
    EXPECT_EQ(kv_max_tuples(63), 0u);
    std::vector<KvTuple> many(4092);
    EXPECT_EQ(verdict(make_kv_frame(kv_spec(), 0, 0, many)), KvVerdict::ok);
    many.resize(4093);  // IPv4 total length would exceed 65535
    EXPECT_THROW(make_kv_frame(kv_spec(), 0, 0, many), std::invalid_argument);
}

TEST(KvWire, VerdictNamesAndUnitsComeFromOneList) {
    EXPECT_EQ(kv_verdict_name(KvVerdict::ok), "ok");
    EXPECT_EQ(kv_verdict_name(KvVerdict::not_kvagg), "not_kvagg");
    EXPECT_EQ(kv_verdict_name(KvVerdict::table_full), "table_full");
    EXPECT_EQ(kv_verdict_name(KvVerdict::request), "request");
    // A packet reason's value is its board slot: the name there is its own.
    for (size_t v = size_t(KvVerdict::not_kvagg); v < size_t(KvVerdict::table_full); ++v) {
        EXPECT_EQ(kDrops[linerate::stats::drop_slot(KvVerdict(v))].key,
                  kv_verdict_name(KvVerdict(v)));
    }
    EXPECT_EQ(kDrops[linerate::stats::drop_slot(Drop::tx_full)].key, "tx_full");
}

// The canonical-layout fast path must give the general parser's answer for every frame: random
// bit flips in the headers, truncations and padding, tagged and untagged, both ports.
TEST(KvWire, FastPathAgreesWithGeneralParserOnMutatedFrames) {
    std::mt19937 rng(11);
    std::array<size_t, kKvVerdictCount> seen{};
    for (int n = 0; n < 200000; ++n) {
        std::vector<KvTuple> tuples(rng() % 5);
        for (auto& t : tuples) t = {rng(), rng()};
        std::vector<uint8_t> f = make_kv_frame(kv_spec(), rng(), rng(), tuples);
        if (rng() % 8 == 0) f = insert(f, 12, {0x81, 0x00, 0x00, 0x05});  // a VLAN tag
        if (rng() % 8 == 0) f.resize(f.size() + rng() % 20);              // trailing bytes
        const auto [len, port] = mutate(f, rng);
        const KvPacket fast = parse_kv_packet(f.data(), len, port);
        const KvPacket general = parse_kv_packet_general(f.data(), len, port);
        ASSERT_EQ(fast.verdict, general.verdict) << n;
        ++seen[size_t(fast.verdict)];
        if (fast.verdict != KvVerdict::ok) continue;
        ASSERT_EQ(fast.tuple_count, general.tuple_count) << n;
        ASSERT_EQ(fast.stream, general.stream) << n;
        ASSERT_EQ(fast.seq, general.seq) << n;
        ASSERT_EQ(fast.tuples, general.tuples) << n;
    }
    // Each parser verdict (not_kvagg .. bad_op, and ok) was met.
    for (size_t v = size_t(KvVerdict::not_kvagg); v <= size_t(KvVerdict::bad_op); ++v)
        EXPECT_GT(seen[v], 50u) << v;
    EXPECT_GT(seen[size_t(KvVerdict::ok)], 50u);
}

// docs/wire-formats.md, Checksums: the IPv4 header checksum and a non-zero UDP checksum are
// verified after the lengths and before the app header; the port's verdict replaces a sum.
TEST(KvWireChecksums, ValidSumsAndNoUdpChecksumPass) {
    auto f = good_frame();
    ASSERT_EQ(f[40], 0);  // the encoder sends no UDP checksum
    ASSERT_EQ(f[41], 0);
    EXPECT_EQ(verdict(f), KvVerdict::ok);
    linerate::test::set_udp_checksum(f);
    ASSERT_TRUE(f[40] != 0 || f[41] != 0);
    EXPECT_EQ(verdict(f), KvVerdict::ok);
    EXPECT_EQ(parse_kv_packet_general(f.data(), f.size(), kKvDefaultPort).verdict, KvVerdict::ok);
}

TEST(KvWireChecksums, DamagedFramesAreDroppedByReason) {
    auto f = good_frame();
    linerate::test::set_udp_checksum(f);
    for (size_t at :
         {size_t(64), size_t(79), f.size() - 1}) {  // a tuple's key, a value, the last byte
        auto g = f;
        g[at] ^= 0x10;
        EXPECT_EQ(verdict(g), KvVerdict::bad_udp_checksum) << at;
        EXPECT_EQ(parse_kv_packet(g.data(), g.size(), kKvDefaultPort, {.verify = false}).verdict,
                  KvVerdict::ok);
    }
    auto g = f;
    g[40] ^= 0x01;  // the UDP checksum field itself
    EXPECT_EQ(verdict(g), KvVerdict::bad_udp_checksum);
    g = f;
    g[22] ^= 0x01;  // TTL
    EXPECT_EQ(verdict(g), KvVerdict::bad_ip_checksum);
    g = f;
    g[26] ^= 0x80;  // source address: in the IPv4 header and the UDP pseudo header
    EXPECT_EQ(verdict(g), KvVerdict::bad_ip_checksum);
    linerate::test::set_ip_checksum(g);
    EXPECT_EQ(verdict(g), KvVerdict::bad_udp_checksum);
    // Tagged, with IPv4 options: the general parser checks the same.
    auto t = insert(good_frame(), 12, {0x81, 0x00, 0x00, 0x05});
    t = insert(t, 18 + 20, {1, 1, 1, 1});
    t[18] = 0x46;
    store_be16(&t[20], uint16_t(load_be16(&t[20]) + 4));
    linerate::test::set_ip_checksum(t, 18);
    linerate::test::set_udp_checksum(t, 18);
    EXPECT_EQ(verdict(t), KvVerdict::ok);
    t[t.size() - 3] ^= 0x04;
    EXPECT_EQ(verdict(t), KvVerdict::bad_udp_checksum);
    t[18 + 8] ^= 0x01;
    EXPECT_EQ(verdict(t), KvVerdict::bad_ip_checksum);
}

// A datagram from a local socket over a default veth: the UDP checksum field holds the
// pseudo-header sum alone (TX offload). Accepted on both parse paths and marked; strict: bad.
TEST(KvWireChecksums, OffloadedUdpChecksumIsAcceptedAndMarked) {
    auto f = good_frame();
    linerate::test::set_partial_udp_checksum(f);
    const KvPacket p = parse_kv_packet(f.data(), f.size(), kKvDefaultPort);
    EXPECT_EQ(p.verdict, KvVerdict::ok);
    EXPECT_TRUE(p.udp_checksum_offloaded);
    EXPECT_EQ(p.tuple_count, kTuples.size());
    const KvPacket g = parse_kv_packet_general(f.data(), f.size(), kKvDefaultPort);
    EXPECT_EQ(g.verdict, KvVerdict::ok);
    EXPECT_TRUE(g.udp_checksum_offloaded);
    EXPECT_EQ(
        parse_kv_packet(f.data(), f.size(), kKvDefaultPort, {.accept_offloaded = false}).verdict,
        KvVerdict::bad_udp_checksum);
    const auto plain = good_frame();  // no UDP checksum (0): nothing left to offload
    EXPECT_FALSE(
        parse_kv_packet(plain.data(), plain.size(), kKvDefaultPort).udp_checksum_offloaded);
    // Changed after a real checksum was computed: still bad, never taken for offload.
    auto h = good_frame();
    linerate::test::set_udp_checksum(h);
    h[70] ^= 0x08;
    EXPECT_EQ(verdict(h), KvVerdict::bad_udp_checksum);
    // A request the same way (the Python client over a veth).
    auto r = good_frame();
    r[45] = kKvOpStatus;
    store_be16(&r[46], 0);
    linerate::test::set_partial_udp_checksum(r);
    EXPECT_EQ(parse_kv_request(r.data(), r.size(), kKvDefaultPort).verdict, KvVerdict::request);
}

TEST(KvWireChecksums, LengthsComeBeforeChecksumsAndMagicAfter) {
    auto f = good_frame();
    f[22] ^= 0x01;                                    // bad IP checksum ...
    store_be16(&f[16], uint16_t(f.size() - 14 + 1));  // ... and a total length beyond the frame
    EXPECT_EQ(verdict(f), KvVerdict::malformed);
    f = good_frame();
    f[22] ^= 0x01;
    store_be16(&f[42], 0x1234);  // bad magic too
    EXPECT_EQ(verdict(f), KvVerdict::bad_ip_checksum);
}

TEST(KvWireChecksums, ThePortsVerdictReplacesTheSoftwareSum) {
    auto bad = good_frame();
    linerate::test::set_udp_checksum(bad);
    bad[70] ^= 1;
    bad[22] ^= 1;
    using linerate::pkt::RxCheck;
    auto with = [&](const std::vector<uint8_t>& f, RxCheck ip, RxCheck l4) {
        return parse_kv_packet(f.data(), f.size(), kKvDefaultPort, {.port = {ip, l4}}).verdict;
    };
    EXPECT_EQ(with(bad, RxCheck::good, RxCheck::good), KvVerdict::ok);
    EXPECT_EQ(with(bad, RxCheck::unknown, RxCheck::good), KvVerdict::bad_ip_checksum);
    EXPECT_EQ(with(bad, RxCheck::good, RxCheck::unknown), KvVerdict::bad_udp_checksum);
    const auto good = good_frame();
    EXPECT_EQ(with(good, RxCheck::bad, RxCheck::good), KvVerdict::bad_ip_checksum);
    EXPECT_EQ(with(good, RxCheck::good, RxCheck::bad), KvVerdict::bad_udp_checksum);
    EXPECT_EQ(with(good, RxCheck::unknown, RxCheck::unknown), KvVerdict::ok);
}

// The software sum itself, against the plain RFC 1071 loop, on every length and alignment.
TEST(KvWireChecksums, WordSumAgreesWithThePlainSum) {
    std::mt19937 rng(3);
    for (size_t len = 1; len < 300; ++len) {
        std::vector<uint8_t> d(len + 3);
        for (auto& b : d) b = uint8_t(rng());
        d[0] |= 1;  // non-zero
        for (size_t off : {0u, 1u, 2u, 3u}) {
            if (off + len > d.size()) continue;
            const uint32_t plain = linerate::test::plain_sum(&d[off], len);
            // Verifies iff the plain sum folds to 0xFFFF.
            EXPECT_EQ(word_sum_verifies(word_sum(&d[off], len)), plain == 0xFFFF) << len;
            // Make it verify: append the complement as a 16-bit word at an even offset.
            std::vector<uint8_t> v(d.begin() + long(off), d.begin() + long(off + len));
            if (v.size() % 2) v.push_back(0);
            const uint16_t c = uint16_t(~linerate::test::plain_sum(v.data(), v.size()));
            v.push_back(uint8_t(c >> 8));
            v.push_back(uint8_t(c));
            EXPECT_TRUE(word_sum_verifies(word_sum(v.data(), v.size()))) << len << " " << off;
        }
    }
}

// The one-tuple shape (the kernel's test before the canonical parse) matches exactly the frames
// the canonical parse accepts as one tuple at offset 64 with no UDP checksum and exact lengths,
// given a valid IPv4 header sum: on frames of 0..3 tuples, flipped bits, trailing bytes, cut
// lengths, other ports, a UDP checksum.
TEST(KvWire, OneTupleShapeMatchesTheCanonicalOneTupleFrames) {
    std::mt19937 rng(12);
    size_t matched = 0, refused_good = 0;
    for (int n = 0; n < 200000; ++n) {
        std::vector<KvTuple> tuples(rng() % 4 ? 1 : rng() % 4);
        for (auto& t : tuples) t = {rng(), rng()};
        std::vector<uint8_t> f = make_kv_frame(kv_spec(), rng(), rng(), tuples);
        if (rng() % 8 == 0) linerate::test::set_udp_checksum(f);
        if (rng() % 8 == 0) f.resize(f.size() + rng() % 20);  // trailing bytes
        const auto [len, port] = mutate(f, rng);
        const bool shape = KvOneTupleShape(port).matches(f.data(), len);
        const std::optional<KvPacket> p = parse_kv_canonical(f.data(), len, port);
        const bool one_tuple_frame = p && p->verdict == KvVerdict::ok && p->tuple_count == 1 &&
                                     load_be16(&f[16]) == 66 && load_be16(&f[38]) == 46 &&
                                     load_be16(&f[40]) == 0;
        const bool sum_ok = len >= 34 && linerate::pkt::ipv4_header_checksum_ok(&f[14], 20);
        if (shape && sum_ok) {
            ASSERT_TRUE(one_tuple_frame) << n;
            ASSERT_EQ(p->tuples, f.data() + kKvTuplesOffset) << n;
            ASSERT_FALSE(p->udp_checksum_offloaded) << n;
            ++matched;
        } else if (one_tuple_frame) {
            ASSERT_TRUE(shape) << n << ": a one-tuple frame left to the canonical parse";
        }
        if (shape && !sum_ok) ++refused_good;
    }
    EXPECT_GT(matched, 50000u);
    EXPECT_GT(refused_good, 1000u);  // flipped header bits: the shape holds, the sum fails
}
