// lib/xdp/steer/steer.bpf.c run by the kernel on crafted frames (BPF_PROG_TEST_RUN, no NIC),
// configured and read through lib/xdp: the XDP action of each frame and the exact counters; and
// the same program with an app's hook compiled in (clocksync_steer.bpf.o, --xdp-turn).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "clocksync/cs_wire.h"
#include "clocksync/xdp/cs_xdp_abi.h"
#include "pkt/build.hpp"
#include "support/clock.hpp"
#include "xdp/steer/rx_stamp.hpp"
#include "xdp/steer/steer_program.hpp"

using namespace linerate;
using xdp::SteerFilter;
using xdp::SteerMode;

namespace {

const char* kSteerObject = LINERATE_BIN_DIR "/bpf/steer.bpf.o";
// The steering program with clocksync's hook (apps/clocksync/xdp/cs_steer_hook.h).
const char* kClocksyncSteerObject = LINERATE_BIN_DIR "/bpf/clocksync_steer.bpf.o";
constexpr uint16_t kPort = 7000;

std::vector<uint8_t> udp_to(uint16_t dst_port, size_t len = 64) {
    pkt::UdpFrameSpec spec;
    spec.dst_port = dst_port;
    return pkt::make_udp_frame(spec, len);
}

std::vector<uint8_t> with_ethertype(std::vector<uint8_t> f, uint16_t type) {
    f[12] = uint8_t(type >> 8);
    f[13] = uint8_t(type);
    return f;
}

std::vector<uint8_t> arp_request() {
    std::vector<uint8_t> f(60, 0);
    std::memset(f.data(), 0xFF, 6);
    f[6] = 0x02;
    return with_ethertype(f, 0x0806);
}

std::vector<uint8_t> icmp_echo() {
    auto f = udp_to(kPort);
    f[14 + 9] = 1;  // protocol ICMP; the bytes where UDP's destination port was are ICMP's
    pkt::fix_ipv4_checksum(&f[14]);
    return f;
}

std::vector<uint8_t> tcp_to(uint16_t port) {
    auto f = udp_to(port, 74);
    f[14 + 9] = 6;
    pkt::fix_ipv4_checksum(&f[14]);
    return f;
}

// A clocksync frame (apps/clocksync/cs_wire.h) from the master (192.168.0.2:9001) to the
// client (192.168.0.1:9001) of `type`, `flags` in the reserved field and sequence `seq`.
std::vector<uint8_t> clocksync_frame(uint8_t type, uint16_t flags, uint64_t seq) {
    pkt::UdpFrameSpec spec;
    std::swap(spec.src_mac, spec.dst_mac);
    std::swap(spec.src_ip, spec.dst_ip);
    spec.src_port = spec.dst_port = LR_CS_UDP_PORT;
    std::vector<uint8_t> f = pkt::make_udp_frame(spec, 42 + LR_CS_HEADER_LEN);
    uint8_t* cs = &f[42];
    cs[LR_CS_OFF_MAGIC] = LR_CS_MAGIC >> 8, cs[LR_CS_OFF_MAGIC + 1] = LR_CS_MAGIC & 0xFF;
    cs[LR_CS_OFF_VERSION] = LR_CS_VERSION;
    cs[LR_CS_OFF_TYPE] = type;
    cs[LR_CS_OFF_RESERVED] = uint8_t(flags >> 8), cs[LR_CS_OFF_RESERVED + 1] = uint8_t(flags);
    cs[LR_CS_OFF_CLIENT_ID + 3] = 1;
    for (int i = 0; i < 8; ++i) cs[LR_CS_OFF_SEQ + i] = uint8_t(seq >> (56 - 8 * i));
    return f;
}

uint64_t load_be64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
    return v;
}

std::vector<uint8_t> fragment(uint16_t frag_field) {
    auto f = udp_to(kPort);
    f[14 + 6] = uint8_t(frag_field >> 8);
    f[14 + 7] = uint8_t(frag_field);
    pkt::fix_ipv4_checksum(&f[14]);
    return f;
}

// UDP to kPort behind a 24-byte IPv4 header (one 4-byte option).
std::vector<uint8_t> udp_with_ip_options() {
    auto plain = udp_to(kPort);
    std::vector<uint8_t> f(plain.begin(), plain.begin() + 34);
    f[14] = 0x46;
    f.insert(f.end(), {1, 1, 1, 0});  // NOP NOP NOP EOL
    f.insert(f.end(), plain.begin() + 34, plain.end());
    f[16] = 0, f[17] = uint8_t(f.size() - 14);
    pkt::fix_ipv4_checksum(&f[14]);
    return f;
}

class SteerProgramTest : public ::testing::Test {
  protected:
    // The object under test: the plain steering program, or an app's (with its hook).
    virtual const char* object() const { return kSteerObject; }
    void SetUp() override {
        obj_ = bpf_object__open_file(object(), nullptr);
        ASSERT_TRUE(obj_) << object() << ": " << std::strerror(errno);
        if (int err = bpf_object__load(obj_)) {
            if (err == -EPERM || err == -EACCES)
                GTEST_SKIP() << "cannot load BPF programs here (needs root/CAP_BPF): "
                             << std::strerror(-err);
            FAIL() << "loading " << object() << ": " << std::strerror(-err);
        }
        bpf_program* prog = bpf_object__find_program_by_name(obj_, "xsk_def_prog");
        ASSERT_TRUE(prog);
        prog_fd_ = bpf_program__fd(prog);
        bpf_prog_info info{};
        uint32_t len = sizeof(info);
        ASSERT_EQ(bpf_obj_get_info_by_fd(prog_fd_, &info, &len), 0);
        steer_ = xdp::SteerProgram::from_id(info.id);
        ASSERT_TRUE(steer_) << "lib/xdp did not recognise the steering maps";
    }
    void TearDown() override {
        steer_.reset();
        if (obj_) bpf_object__close(obj_);
    }

    // What the program leaves of `frame`, received on queue 0 (XDP metadata included: the test
    // run's output starts at data_meta), and its action.
    struct Output {
        std::vector<uint8_t> bytes;
        int action;
    };
    Output run_keeping_metadata(std::vector<uint8_t> frame) {
        std::vector<uint8_t> out(frame.size() + 256);
        LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_out = out.data(),
                    .data_size_in = uint32_t(frame.size()), .data_size_out = uint32_t(out.size()));
        int err = bpf_prog_test_run_opts(prog_fd_, &opts);
        EXPECT_EQ(err, 0) << std::strerror(-err);
        out.resize(opts.data_size_out);
        return {out, int(opts.retval)};
    }

    // The XDP action the program returns for `frame`; the program never changes the frame.
    int run(const std::vector<uint8_t>& frame) {
        const Output o = run_keeping_metadata(frame);
        EXPECT_EQ(o.bytes, frame);
        return o.action;
    }

    bpf_object* obj_ = nullptr;
    int prog_fd_ = -1;
    std::unique_ptr<xdp::SteerProgram> steer_;
};

void expect_counters(const xdp::SteerProgram& p, uint64_t redirected, uint64_t passed,
                     uint64_t unclaimed) {
    auto q = p.queues();
    ASSERT_EQ(q.size(), 1u);
    EXPECT_EQ(q[0].redirected, redirected);
    EXPECT_EQ(q[0].passed, passed);
    EXPECT_EQ(q[0].unclaimed, unclaimed);
    auto t = p.total();
    EXPECT_EQ(t.redirected, redirected);
    EXPECT_EQ(t.passed, passed);
    EXPECT_EQ(t.unclaimed, unclaimed);
}

}  // namespace

TEST_F(SteerProgramTest, UnconfiguredPassesEverythingToTheKernel) {
    EXPECT_EQ(steer_->filter(), SteerFilter{});
    for (auto& f : {udp_to(kPort), arp_request(), icmp_echo()}) EXPECT_EQ(run(f), XDP_PASS);
    expect_counters(*steer_, 0, 3, 0);
}

TEST_F(SteerProgramTest, UdpPortModeClaimsOnlyUnfragmentedUdpToThePort) {
    steer_->set_filter({SteerMode::udp_port, kPort});
    EXPECT_EQ(steer_->filter(), (SteerFilter{SteerMode::udp_port, kPort}));
    // Claimed, but no AF_XDP socket sits on queue 0: the kernel gets them (unclaimed).
    EXPECT_EQ(run(udp_to(kPort)), XDP_PASS);
    EXPECT_EQ(run(udp_to(kPort, 1514)), XDP_PASS);
    EXPECT_EQ(run(udp_with_ip_options()), XDP_PASS);
    expect_counters(*steer_, 0, 0, 3);
    // Not claimed: ARP, ICMP, ssh, another UDP port, fragments, IPv6, a truncated IPv4 header.
    EXPECT_EQ(run(arp_request()), XDP_PASS);
    EXPECT_EQ(run(icmp_echo()), XDP_PASS);
    EXPECT_EQ(run(tcp_to(22)), XDP_PASS);
    EXPECT_EQ(run(tcp_to(kPort)), XDP_PASS);
    EXPECT_EQ(run(udp_to(kPort + 1)), XDP_PASS);
    EXPECT_EQ(run(udp_to(53)), XDP_PASS);
    EXPECT_EQ(run(fragment(0x2000)), XDP_PASS);  // first fragment (MF)
    EXPECT_EQ(run(fragment(0x0010)), XDP_PASS);  // a later fragment
    EXPECT_EQ(run(with_ethertype(udp_to(kPort), 0x86DD)), XDP_PASS);
    auto truncated = udp_to(kPort);
    truncated.resize(14 + 19);
    EXPECT_EQ(run(truncated), XDP_PASS);
    auto bad_ihl = udp_to(kPort);
    bad_ihl[14] = 0x44;
    EXPECT_EQ(run(bad_ihl), XDP_PASS);
    expect_counters(*steer_, 0, 11, 3);
}

TEST_F(SteerProgramTest, Ipv4ModeClaimsEveryIpv4FrameOnly) {
    steer_->set_filter({SteerMode::ipv4, 0});
    for (auto& f : {udp_to(kPort), udp_to(53), icmp_echo(), tcp_to(22), fragment(0x0010)})
        EXPECT_EQ(run(f), XDP_PASS);
    expect_counters(*steer_, 0, 0, 5);
    for (auto& f : {arp_request(), with_ethertype(udp_to(kPort), 0x86DD),
                    with_ethertype(udp_to(kPort), 0x8100)})
        EXPECT_EQ(run(f), XDP_PASS);
    expect_counters(*steer_, 0, 3, 5);
}

TEST_F(SteerProgramTest, AllModeClaimsEveryFrame) {
    steer_->set_filter({SteerMode::all, 0});
    for (auto& f : {udp_to(kPort), arp_request(), icmp_echo(), with_ethertype(udp_to(1), 0x86DD)})
        EXPECT_EQ(run(f), XDP_PASS);
    expect_counters(*steer_, 0, 0, 4);
    steer_->set_filter({SteerMode::none, 0});
    EXPECT_EQ(run(udp_to(kPort)), XDP_PASS);
    expect_counters(*steer_, 0, 1, 4);
}

// STEER_FLAG_RX_STAMP: each claimed frame comes out with struct steer_rx_stamp right before it,
// the kernel's CLOCK_MONOTONIC between the reads around the run; take_rx_stamp reads it once.
// Frames the program does not claim, and every frame without the flag, come out as they went in.
TEST_F(SteerProgramTest, RxStampPutsTheReceiveTimeAheadOfEachClaimedFrame) {
    const SteerFilter stamping{SteerMode::udp_port, kPort, true};
    steer_->set_filter(stamping);
    EXPECT_EQ(steer_->filter(), stamping);
    const std::vector<uint8_t> frame = udp_to(kPort);
    const uint64_t before = test::monotonic_ns();
    Output o = run_keeping_metadata(frame);
    const uint64_t after = test::monotonic_ns();
    EXPECT_EQ(o.action, XDP_PASS);  // claimed, no socket on queue 0
    ASSERT_EQ(o.bytes.size(), sizeof(steer_rx_stamp) + frame.size());
    EXPECT_TRUE(std::equal(frame.begin(), frame.end(), o.bytes.begin() + sizeof(steer_rx_stamp)));
    uint8_t* at = o.bytes.data() + sizeof(steer_rx_stamp);
    EXPECT_FALSE(xdp::take_rx_stamp(at, sizeof(steer_rx_stamp) - 1));  // no room: not looked at
    const std::optional<xdp::RxStamp> stamp = xdp::take_rx_stamp(at, sizeof(steer_rx_stamp));
    ASSERT_TRUE(stamp);
    EXPECT_GE(stamp->rx_ns, before);
    EXPECT_LE(stamp->rx_ns, after);
    EXPECT_FALSE(stamp->hook_ns);
    EXPECT_FALSE(xdp::take_rx_stamp(at, sizeof(steer_rx_stamp)));  // cleared once read

    for (auto& f : {arp_request(), udp_to(kPort + 1)}) {
        o = run_keeping_metadata(f);
        EXPECT_EQ(o.action, XDP_PASS);
        EXPECT_EQ(o.bytes, f);
    }
    steer_->set_filter({SteerMode::udp_port, kPort});
    o = run_keeping_metadata(frame);
    EXPECT_EQ(o.bytes, frame);
    expect_counters(*steer_, 0, 2, 2);
}

TEST(SteerFilter, ParsesTheOptionValues) {
    const SteerFilter app{SteerMode::udp_port, 5000};
    EXPECT_EQ(xdp::parse_steer_filter("app", app), app);
    EXPECT_EQ(xdp::parse_steer_filter("ipv4", app), (SteerFilter{SteerMode::ipv4, 0}));
    EXPECT_EQ(xdp::parse_steer_filter("all", app), (SteerFilter{SteerMode::all, 0}));
    EXPECT_EQ(xdp::parse_steer_filter("udp:9", app), (SteerFilter{SteerMode::udp_port, 9}));
    for (const char* bad : {"", "udp", "udp:", "udp:0", "udp:65536", "udp:9x", "ipv6", "APP"})
        EXPECT_THROW(xdp::parse_steer_filter(bad, app), std::invalid_argument) << bad;
    EXPECT_EQ((SteerFilter{SteerMode::udp_port, 5000}).describe(), "IPv4/UDP to port 5000");
    // The app's wish for receive stamps stays whatever is steered.
    const SteerFilter stamping{SteerMode::udp_port, 5000, true};
    EXPECT_EQ(xdp::parse_steer_filter("app", stamping), stamping);
    EXPECT_EQ(xdp::parse_steer_filter("all", stamping), (SteerFilter{SteerMode::all, 0, true}));
    EXPECT_EQ(xdp::parse_steer_filter("udp:9", stamping),
              (SteerFilter{SteerMode::udp_port, 9, true}));
}

class ClocksyncSteerHookTest : public SteerProgramTest {
  protected:
    const char* object() const override { return kClocksyncSteerObject; }
};

// The plain program has no hook: with STEER_FLAG_HOOK set, a flagged echo is handed to the app
// (here: no socket, the kernel's) as any frame, untouched, and nothing is turned.
TEST_F(SteerProgramTest, PlainProgramHasNoHook) {
    steer_->set_filter({SteerMode::udp_port, LR_CS_UDP_PORT, true, true});
    const std::vector<uint8_t> echo =
        clocksync_frame(LR_CS_WARMUP_ECHO, LR_CS_FLAG_ECHO | LR_CS_FLAG_TURN, 77);
    Output o = run_keeping_metadata(echo);
    EXPECT_EQ(o.action, XDP_PASS);
    EXPECT_TRUE(std::equal(echo.begin(), echo.end(), o.bytes.begin() + sizeof(steer_rx_stamp)));
    EXPECT_EQ(steer_->queues()[0].turned, 0u);
}

// clocksync's hook (--xdp-turn): the master's echo of a warm-up frame flagged
// LR_CS_FLAG_TURN leaves again by XDP_TX as the request of its seq: turned around (MACs, IPs,
// ports), type request, flags 0, UDP checksum 0, t1 the program's clock; every other byte as it
// came. The answer to that request then carries the t1 in its stamp, an answer to another seq
// none; an unflagged echo, or one to a group address, is handed to the app as any frame.
TEST_F(ClocksyncSteerHookTest, CsTurnSendsAFlaggedWarmupEchoBackAsItsRequest) {
    steer_->set_filter({SteerMode::udp_port, LR_CS_UDP_PORT, true, true});
    EXPECT_TRUE(steer_->filter().hook);
    const std::vector<uint8_t> echo =
        clocksync_frame(LR_CS_WARMUP_ECHO, LR_CS_FLAG_ECHO | LR_CS_FLAG_TURN, 77);
    const uint64_t before = test::monotonic_ns();
    Output o = run_keeping_metadata(echo);
    const uint64_t after = test::monotonic_ns();
    EXPECT_EQ(o.action, XDP_TX);
    ASSERT_EQ(o.bytes.size(), echo.size());  // no metadata: the frame leaves
    std::vector<uint8_t> request = clocksync_frame(LR_CS_REQUEST, 0, 77);
    pkt::UdpFrameSpec to_master;  // the client's frame to the master, as the client sends
    to_master.src_port = to_master.dst_port = LR_CS_UDP_PORT;
    pkt::write_udp_headers(request.data(), request.size(), to_master);
    const uint64_t t1 = load_be64(&o.bytes[42 + LR_CS_OFF_T1]);
    EXPECT_GE(t1, before);
    EXPECT_LE(t1, after);
    std::copy_n(&o.bytes[42 + LR_CS_OFF_T1], 8, &request[42 + LR_CS_OFF_T1]);
    EXPECT_EQ(o.bytes, request);
    auto q = steer_->queues();
    ASSERT_EQ(q.size(), 1u);
    EXPECT_EQ(q[0].turned, 1u);
    EXPECT_EQ(q[0].redirected + q[0].passed + q[0].unclaimed, 0u);

    o = run_keeping_metadata(clocksync_frame(LR_CS_RESPONSE, 0, 77));
    EXPECT_EQ(o.action, XDP_PASS);  // claimed, no socket on queue 0
    ASSERT_EQ(o.bytes.size(), sizeof(steer_rx_stamp) + echo.size());
    std::optional<xdp::RxStamp> stamp =
        xdp::take_rx_stamp(o.bytes.data() + sizeof(steer_rx_stamp), sizeof(steer_rx_stamp));
    ASSERT_TRUE(stamp);
    EXPECT_EQ(stamp->hook_ns, t1);
    EXPECT_GE(stamp->rx_ns, t1);

    o = run_keeping_metadata(clocksync_frame(LR_CS_RESPONSE, 0, 77 + CS_TURN_SLOTS));
    stamp = xdp::take_rx_stamp(o.bytes.data() + sizeof(steer_rx_stamp), sizeof(steer_rx_stamp));
    ASSERT_TRUE(stamp);
    EXPECT_FALSE(stamp->hook_ns);  // same slot, another request

    std::vector<uint8_t> to_group = echo;
    to_group[0] |= 1;
    for (const auto& f : {clocksync_frame(LR_CS_WARMUP_ECHO, LR_CS_FLAG_ECHO, 78), to_group}) {
        o = run_keeping_metadata(f);
        EXPECT_EQ(o.action, XDP_PASS);
        EXPECT_TRUE(std::equal(f.begin(), f.end(), o.bytes.begin() + sizeof(steer_rx_stamp)));
    }
    steer_->set_filter({SteerMode::udp_port, LR_CS_UDP_PORT, true, false});
    o = run_keeping_metadata(echo);
    EXPECT_EQ(o.action, XDP_PASS);
    steer_->set_filter({SteerMode::udp_port, LR_CS_UDP_PORT, false, true});  // no stamp: no turn
    EXPECT_EQ(run(echo), XDP_PASS);
    q = steer_->queues();
    EXPECT_EQ(q[0].turned, 1u);
    EXPECT_EQ(q[0].unclaimed, 6u);
}
