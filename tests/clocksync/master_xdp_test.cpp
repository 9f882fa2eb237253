// clocksync's master on both datapaths, the same frames: answer_request (C++) called directly,
// and apps/clocksync/xdp/clocksync.bpf.c run by the kernel with BPF_PROG_TEST_RUN (root; skips
// otherwise). A request comes back byte-identical but for t2/t3, which the program reads from
// CLOCK_MONOTONIC between two reads of the test's; a warm-up frame that asks for its echo comes
// back identical, unstamped; a bad request is dropped under the C++ master's reason; a frame that
// is no request to the port goes to the kernel (XDP_PASS).
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <memory>
#include <string>
#include <vector>

#include "clocksync/cs_wire.hpp"
#include "clocksync/cs_xdp.hpp"
#include "clocksync/master.hpp"
#include "pkt/build.hpp"
#include "pkt/bytes.hpp"
#include "support/checksum.hpp"
#include "support/clock.hpp"
#include "xdp/datapath/datapath_program.hpp"

using namespace linerate;
using namespace linerate::clocksync;
using Frame = std::vector<uint8_t>;

namespace {

constexpr pkt::MacAddr kMasterMac{0x02, 0, 0, 0, 0, 0x4D};

std::unique_ptr<xdp::DatapathProgram> load(uint32_t flags, bool accept_offloaded,
                                           std::string& why) {
    try {
        auto p = std::make_unique<xdp::DatapathProgram>("clocksync.bpf.o", DP_PROGRAM);
        p->set_flags(flags | DP_RECORD_LAST | DP_MULTI_BUFFER);
        clocksync::set_xdp_master(*p, kCsUdpPort, accept_offloaded, kMasterMac);
        return p;
    } catch (const std::exception& e) {
        why = e.what();
        return nullptr;
    }
}

Frame request() {
    pkt::UdpFrameSpec s;
    s.src_mac = {0x02, 0, 0, 0, 0, 0xC1};
    s.dst_mac = kMasterMac;
    s.src_ip = pkt::ipv4_addr(10, 0, 0, 1);
    s.dst_ip = pkt::ipv4_addr(10, 0, 0, 2);
    s.src_port = 40000;  // the answer goes back to it
    s.dst_port = kCsUdpPort;
    Frame f(kCsFrameLen);
    build_request(f.data(), f.size(), s, 7, 0x1122334455667788, 0xA0A1A2A3A4A5A6A7);
    test::set_udp_checksum(f);
    return f;
}

// A warm-up frame (the request's layout, type 3) with `reserved` in its reserved field: the echo
// is asked for with kCsFlagEcho.
Frame warmup(uint16_t reserved) {
    Frame f = request();
    f[pkt::kUdpPayloadOffset + kCsOffType] = uint8_t(CsType::warmup);
    pkt::store_be16(&f[pkt::kUdpPayloadOffset + kCsOffReserved], reserved);
    test::set_udp_checksum(f);
    return f;
}

// The frame with a VLAN tag after the MACs.
Frame tagged(Frame f) {
    f.insert(f.begin() + 12, {0x81, 0x00, 0x00, 0x05});
    return f;
}

// The request with 4 bytes of IPv4 options (NOPs), checksums redone.
Frame with_ip_options(Frame f) {
    f.insert(f.begin() + 34, {1, 1, 1, 1});
    f[14] = 0x46;
    pkt::store_be16(&f[16], uint16_t(pkt::load_be16(&f[16]) + 4));
    test::set_ip_checksum(f);
    test::set_udp_checksum(f);
    return f;
}

struct Answer {
    xdp::TestRun run;
    Frame out;
    uint64_t before, after;
};

Answer run(xdp::DatapathProgram& prog, const Frame& f) {
    Answer a;
    a.before = test::monotonic_ns();
    a.run = prog.test_run(f.data(), uint32_t(f.size()), a.out);
    a.after = test::monotonic_ns();
    return a;
}

// The program's answer to `f` against the C++ master's with the program's t2/t3, and what a
// response must be on its own: addresses and ports swapped, checksums valid, stamps in order
// inside the test's reads.
void expect_answered(xdp::DatapathProgram& prog, const Frame& f, size_t l3 = 14) {
    const Answer a = run(prog, f);
    ASSERT_EQ(a.run.action, uint32_t(XDP_TX));
    ASSERT_EQ(a.run.slot, uint32_t(DP_TX));
    ASSERT_EQ(a.out.size(), f.size());
    const size_t udp = l3 + size_t(f[l3] & 0x0F) * 4, cs = udp + 8;
    const uint64_t t2 = pkt::load_be64(&a.out[cs + kCsOffT2]);
    const uint64_t t3 = pkt::load_be64(&a.out[cs + kCsOffT3]);
    EXPECT_LE(a.before, t2);
    EXPECT_LE(t2, t3);
    EXPECT_LE(t3, a.after);
    Frame cpp = f;
    ASSERT_TRUE(answer_request(cpp.data(), cpp.size(), t2, t3).ok);
    std::copy(kMasterMac.begin(), kMasterMac.end(), &cpp[6]);  // the master loop's source MAC
    EXPECT_EQ(a.out, cpp);
    EXPECT_TRUE(std::equal(&a.out[0], &a.out[6], &f[6]));  // destination: the client's MAC
    EXPECT_TRUE(std::equal(&a.out[6], &a.out[12], kMasterMac.begin()));  // source: the master's
    EXPECT_TRUE(std::equal(&a.out[l3 + 12], &a.out[l3 + 16], &f[l3 + 16]));
    EXPECT_TRUE(std::equal(&a.out[l3 + 16], &a.out[l3 + 20], &f[l3 + 12]));
    EXPECT_EQ(pkt::load_be16(&a.out[udp]), pkt::load_be16(&f[udp + 2]));
    EXPECT_EQ(pkt::load_be16(&a.out[udp + 2]), pkt::load_be16(&f[udp]));
    EXPECT_EQ(test::plain_sum(&a.out[l3], udp - l3), 0xFFFFu);  // the IPv4 checksum verifies
    EXPECT_EQ(pkt::load_be16(&a.out[udp + 6]), 0);              // UDP checksum: none
    EXPECT_EQ(a.out[cs + kCsOffType], uint8_t(CsType::response));
    EXPECT_EQ(pkt::load_be64(&a.out[cs + kCsOffT1]), 0xA0A1A2A3A4A5A6A7u);  // echoed
}

// The program sends the warm-up frame `f` back as the C++ master does: its echo, byte for byte
// (no stamps: t2 and t3 stay as sent), from the master's MAC to the client's.
void expect_echoed(xdp::DatapathProgram& prog, const Frame& f, size_t l3 = 14) {
    const Answer a = run(prog, f);
    ASSERT_EQ(a.run.action, uint32_t(XDP_TX));
    ASSERT_EQ(a.run.slot, uint32_t(DP_TX));
    Frame cpp = f;
    const CsPacket p = answer_request(cpp.data(), cpp.size(), 1, 2);
    ASSERT_TRUE(p.ok);
    ASSERT_EQ(p.type, CsType::warmup_echo);
    std::copy(kMasterMac.begin(), kMasterMac.end(), &cpp[6]);  // the master loop's source MAC
    EXPECT_EQ(a.out, cpp);
    const size_t udp = l3 + size_t(f[l3] & 0x0F) * 4, cs = udp + 8;
    EXPECT_TRUE(std::equal(&a.out[0], &a.out[6], &f[6]));  // destination: the client's MAC
    EXPECT_TRUE(std::equal(&a.out[l3 + 12], &a.out[l3 + 16], &f[l3 + 16]));
    EXPECT_EQ(pkt::load_be16(&a.out[udp]), pkt::load_be16(&f[udp + 2]));
    EXPECT_EQ(test::plain_sum(&a.out[l3], udp - l3), 0xFFFFu);  // the IPv4 checksum verifies
    EXPECT_EQ(pkt::load_be16(&a.out[udp + 6]), 0);              // UDP checksum: none
    EXPECT_EQ(a.out[cs + kCsOffType], uint8_t(CsType::warmup_echo));
    EXPECT_EQ(pkt::load_be16(&a.out[cs + kCsOffReserved]),
              pkt::load_be16(&f[cs + kCsOffReserved]));    // echoed
    EXPECT_EQ(pkt::load_be64(&a.out[cs + kCsOffT2]), 0u);  // not stamped
    EXPECT_EQ(pkt::load_be64(&a.out[cs + kCsOffT3]), 0u);
}

// The program drops `f` under the reason the C++ master gives it.
void expect_dropped(xdp::DatapathProgram& prog, const Frame& f, Drop reason, bool strict = false) {
    Frame cpp = f;
    const CsPacket p =
        answer_request(cpp.data(), cpp.size(), 0, 0, kCsUdpPort, {.accept_offloaded = !strict});
    ASSERT_FALSE(p.ok);
    ASSERT_EQ(p.drop, reason);
    const Answer a = run(prog, f);
    EXPECT_EQ(a.run.action, uint32_t(XDP_DROP)) << drop_name(reason);
    EXPECT_EQ(a.run.slot, DP_DROP_FIRST + xdp_drop_number(reason)) << drop_name(reason);
}

void expect_passed(xdp::DatapathProgram& prog, const Frame& f) {
    Frame cpp = f;
    EXPECT_EQ(answer_request(cpp.data(), cpp.size(), 0, 0).drop, Drop::not_clocksync);
    const Answer a = run(prog, f);
    EXPECT_EQ(a.run.action, uint32_t(XDP_PASS));
    EXPECT_EQ(a.run.slot, uint32_t(DP_PASSED));
    EXPECT_EQ(a.out, f);
}

}  // namespace

#define LOAD_OR_SKIP(prog, flags, accept_offloaded) \
    std::string why;                                \
    auto prog = load(flags, accept_offloaded, why); \
    if (!prog) GTEST_SKIP() << "cannot load clocksync.bpf.o: " << why

TEST(ClocksyncXdp, AnswersRequestsAsTheCppMasterDoes) {
    LOAD_OR_SKIP(prog, DP_VERIFY_CHECKSUM, true);
    expect_answered(*prog, request());
    Frame none = request();  // UDP checksum 0: none
    pkt::store_be16(&none[40], 0);
    expect_answered(*prog, none);
    Frame partial = request();  // a veth's CHECKSUM_PARTIAL: the pseudo-header sum alone
    test::set_partial_udp_checksum(partial);
    expect_answered(*prog, partial);
    Frame padded = request();  // Ethernet padding stays, as in the C++ master
    padded.resize(padded.size() + 6);
    expect_answered(*prog, padded);
    expect_answered(*prog, tagged(request()), 18);
    expect_answered(*prog, tagged(tagged(request())), 22);
    expect_answered(*prog, with_ip_options(request()));
    Frame broadcast = request();  // a client learning the master's MAC: answered from it
    std::fill(&broadcast[0], &broadcast[6], 0xFF);
    expect_answered(*prog, broadcast);
    xdp::SlotCounts expected{};
    expected[DP_TX] = 8;
    EXPECT_EQ(prog->counts(), expected);
}

// A warm-up frame that asks for its echo (any other bits of the reserved field aside) goes back
// unstamped, as the C++ master sends it; one that does not ask is dropped (the next test).
TEST(ClocksyncXdp, EchoesAWarmupThatAsksAsTheCppMasterDoes) {
    LOAD_OR_SKIP(prog, DP_VERIFY_CHECKSUM, true);
    expect_echoed(*prog, warmup(kCsFlagEcho));
    expect_echoed(*prog, warmup(0x8000 | kCsFlagEcho));
    expect_echoed(*prog, tagged(warmup(kCsFlagEcho)), 18);
    Frame broadcast = warmup(kCsFlagEcho);  // a client that has not learned the master's MAC
    std::fill(&broadcast[0], &broadcast[6], 0xFF);
    expect_echoed(*prog, broadcast);
    xdp::SlotCounts expected{};
    expected[DP_TX] = 4;
    EXPECT_EQ(prog->counts(), expected);
}

TEST(ClocksyncXdp, DropsBadRequestsUnderTheCppMastersReason) {
    LOAD_OR_SKIP(prog, DP_VERIFY_CHECKSUM, true);
    const size_t cs = pkt::kUdpPayloadOffset;
    auto changed = [](size_t at, uint8_t value, bool redo_udp = true) {
        Frame f = request();
        f[at] = value;
        if (redo_udp) test::set_udp_checksum(f);
        return f;
    };
    expect_dropped(*prog, changed(16 + 1, 20 + 8 + 41), Drop::malformed);  // IP length short
    expect_dropped(*prog, changed(38 + 1, 8 + 41), Drop::malformed);       // UDP length short
    expect_dropped(*prog, changed(20, 0x20), Drop::malformed);             // more fragments
    Frame cut = request();
    cut.resize(cut.size() - 1);
    expect_dropped(*prog, cut, Drop::malformed);
    expect_dropped(*prog, changed(22, 63, false), Drop::bad_ip_checksum);  // TTL, checksum kept
    expect_dropped(*prog, changed(cs + kCsOffT1, 0, false), Drop::bad_udp_checksum);
    expect_dropped(*prog, changed(cs + kCsOffMagic, 0x44), Drop::bad_magic);
    expect_dropped(*prog, changed(cs + kCsOffVersion, 2), Drop::bad_version);
    expect_dropped(*prog, changed(cs + kCsOffType, uint8_t(CsType::response)), Drop::bad_type);
    expect_dropped(*prog, changed(cs + kCsOffType, 9), Drop::bad_type);
    expect_dropped(*prog, changed(cs + kCsOffType, uint8_t(CsType::warmup_echo)), Drop::bad_type);
    expect_dropped(*prog, changed(cs + kCsOffType, uint8_t(CsType::warmup)), Drop::warmup);
    expect_dropped(*prog, warmup(0x0002), Drop::warmup);  // another bit than the echo's
    xdp::SlotCounts expected{};
    for (Drop d :
         {Drop::malformed, Drop::malformed, Drop::malformed, Drop::malformed, Drop::bad_ip_checksum,
          Drop::bad_udp_checksum, Drop::bad_magic, Drop::bad_version, Drop::bad_type,
          Drop::bad_type, Drop::bad_type, Drop::warmup, Drop::warmup})
        ++expected[DP_DROP_FIRST + xdp_drop_number(d)];
    EXPECT_EQ(prog->counts(), expected);
}

TEST(ClocksyncXdp, StrictChecksumsRefuseAnOffloadedOneAndNoVerifyTakesAnyChecksum) {
    {
        LOAD_OR_SKIP(strict, DP_VERIFY_CHECKSUM, false);
        Frame partial = request();
        test::set_partial_udp_checksum(partial);
        expect_dropped(*strict, partial, Drop::bad_udp_checksum, true);
    }
    LOAD_OR_SKIP(no_verify, 0, true);
    Frame bad = request();
    bad[22] =
        1;  // TTL: the IPv4 checksum is wrong, and so is UDP's (the pseudo header holds no TTL)
    bad[pkt::kUdpPayloadOffset + kCsOffT1] ^= 0xFF;
    const Answer a = run(*no_verify, bad);
    EXPECT_EQ(a.run.slot, uint32_t(DP_TX));
}

TEST(ClocksyncXdp, PassesWhatIsNoClocksyncDatagramAndLeavesLongOnesToTheSlowPath) {
    LOAD_OR_SKIP(prog, DP_VERIFY_CHECKSUM, true);
    Frame arp(60, 0);
    arp[12] = 0x08;
    arp[13] = 0x06;
    expect_passed(*prog, arp);
    Frame other_port = request();
    pkt::store_be16(&other_port[36], 9002);
    expect_passed(*prog, other_port);
    Frame tcp = request();
    tcp[23] = 6;
    test::set_ip_checksum(tcp);
    expect_passed(*prog, tcp);
    Frame later_fragment = request();
    pkt::store_be16(&later_fragment[20], 0x0010);
    test::set_ip_checksum(later_fragment);
    expect_passed(*prog, later_fragment);
    Frame ipv6 = request();
    ipv6[12] = 0x86;
    ipv6[13] = 0xDD;
    expect_passed(*prog, ipv6);
    Frame cut = request();
    cut.resize(40);  // inside the UDP header
    expect_passed(*prog, cut);

    // 8 bytes past the clocksync header: the C++ master answers it, the program hands it over.
    Frame longer = request();
    longer.resize(longer.size() + 8);
    pkt::store_be16(&longer[16], uint16_t(20 + 8 + kCsHeaderLen + 8));
    pkt::store_be16(&longer[38], uint16_t(8 + kCsHeaderLen + 8));
    test::set_ip_checksum(longer);
    test::set_udp_checksum(longer);
    Frame cpp = longer;
    EXPECT_TRUE(answer_request(cpp.data(), cpp.size(), 1, 2).ok);
    const Answer a = run(*prog, longer);
    EXPECT_EQ(a.run.slot, uint32_t(DP_SLOW_PATH));
    EXPECT_EQ(a.run.action, uint32_t(XDP_PASS));  // no AF_XDP socket in a test run
    xdp::SlotCounts expected{};
    expected[DP_PASSED] = 6;
    expected[DP_SLOW_PATH] = 1;
    EXPECT_EQ(prog->counts(), expected);
}
