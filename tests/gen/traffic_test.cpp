// gen's traffic model: frame sizes, header validity, stamps, flows, determinism.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "clocksync/cs_wire.hpp"
#include "gen/stamp.hpp"
#include "gen/traffic.hpp"
#include "nfv/check_ip_header.hpp"
#include "pkt/bytes.hpp"
#include "pkt/checksum.hpp"
#include "pkt/headers.hpp"

using namespace linerate;
using namespace linerate::gen;

namespace {

std::vector<std::vector<uint8_t>> frames(const TrafficPlan& plan, size_t n, unsigned worker = 0,
                                         unsigned workers = 1) {
    Traffic t(plan, worker, workers);
    std::vector<std::vector<uint8_t>> out;
    std::vector<uint8_t> buf(plan.frame_len());
    for (size_t i = 0; i < n; ++i) {
        FrameInfo info = t.next(buf.data());
        out.emplace_back(buf.begin(), buf.begin() + info.len);
    }
    return out;
}

void expect_valid_udp(const std::vector<uint8_t>& f, uint16_t dst_port) {
    ASSERT_GE(f.size(), pkt::kUdpPayloadOffset);
    EXPECT_EQ(pkt::load_be16(&f[12]), pkt::kEtherTypeIpv4);
    const uint8_t* ip = &f[pkt::kEthHdrLen];
    EXPECT_EQ(ip[0], 0x45);
    EXPECT_EQ(pkt::load_be16(ip + 2), f.size() - pkt::kEthHdrLen);
    EXPECT_EQ(ip[9], pkt::kIpProtoUdp);
    EXPECT_TRUE(pkt::checksum_ok(ip, 20));
    const uint8_t* udp = ip + 20;
    EXPECT_EQ(pkt::load_be16(udp + 2), dst_port);
    EXPECT_EQ(pkt::load_be16(udp + 4), f.size() - pkt::kEthHdrLen - 20);
    EXPECT_EQ(nfv::CheckIpHeader().check(f.data(), f.size()).verdict, nfv::Verdict::ok);
}

}  // namespace

TEST(GenUdp, FrameSizesAreWireSizeMinusFcs) {
    for (uint32_t size : {64u, 65u, 128u, 1024u, 1518u, 2048u, 4000u, 9000u}) {
        TrafficConfig c;
        c.frame_size = size;
        TrafficPlan plan(c);
        EXPECT_EQ(plan.frame_len(), size - kFcsLen);
        for (const auto& f : frames(plan, 5)) {
            ASSERT_EQ(f.size(), size - kFcsLen) << size;
            expect_valid_udp(f, 9);
        }
    }
}

TEST(GenUdp, StampsCountUpAndFlowsCycleThroughSourcePorts) {
    TrafficConfig c;
    c.flows = 5;
    c.src_port = 5000;
    TrafficPlan plan(c);
    auto fs = frames(plan, 12);
    for (size_t i = 0; i < fs.size(); ++i) {
        Stamp s = read_stamp(fs[i].data(), fs[i].size());
        ASSERT_TRUE(s.valid);
        EXPECT_EQ(s.seq, i);
        EXPECT_EQ(s.tsc, 0u);
        EXPECT_EQ(s.src_port, 5000 + i % 5);
    }
    // The stamp's documented offsets.
    EXPECT_EQ(pkt::load_be64(&fs[7][42]), 7u);
    EXPECT_EQ(pkt::load_be16(&fs[7][58]), 0x4C47);
}

TEST(GenUdp, StampTxWritesTheTscOnly) {
    TrafficPlan plan(TrafficConfig{});
    Traffic t(plan);
    std::vector<uint8_t> f(plan.frame_len());
    FrameInfo info = t.next(f.data());
    EXPECT_TRUE(info.expects_return);
    auto before = f;
    t.stamp_tx(f.data(), 0x1122334455667788ull, 99);
    EXPECT_EQ(read_stamp(f.data(), f.size()).tsc, 0x1122334455667788ull);
    for (size_t i = 0; i < f.size(); ++i)
        if (i < kStampTscOffset || i >= kStampTscOffset + 8) {
            EXPECT_EQ(f[i], before[i]) << i;
        }
}

TEST(GenUdp, AddressesAndPortsFromConfig) {
    TrafficConfig c;
    c.src_mac = {0x0a, 1, 2, 3, 4, 5};
    c.dst_mac = {0x0b, 6, 7, 8, 9, 10};
    c.src_ip = pkt::ipv4_addr(10, 1, 2, 3);
    c.dst_ip = pkt::ipv4_addr(10, 4, 5, 6);
    c.dst_port = 7777;
    auto f = frames(TrafficPlan(c), 1)[0];
    EXPECT_TRUE(std::equal(c.dst_mac.begin(), c.dst_mac.end(), f.begin()));
    EXPECT_TRUE(std::equal(c.src_mac.begin(), c.src_mac.end(), f.begin() + 6));
    EXPECT_EQ(pkt::load_be32(&f[26]), c.src_ip);
    EXPECT_EQ(pkt::load_be32(&f[30]), c.dst_ip);
    expect_valid_udp(f, 7777);
}

TEST(GenClocksync, RequestsParseWithOneClientPerFlow) {
    TrafficConfig c;
    c.kind = Kind::clocksync;
    c.flows = 3;
    TrafficPlan plan(c);
    Traffic t(plan);
    std::vector<uint8_t> f(plan.frame_len());
    for (uint64_t i = 0; i < 9; ++i) {
        FrameInfo info = t.next(f.data());
        ASSERT_EQ(info.len, clocksync::kCsFrameLen);
        EXPECT_TRUE(info.expects_return);
        t.stamp_tx(f.data(), 0, 1000 + i);
        auto p = clocksync::parse_cs_packet(f.data(), info.len, clocksync::kCsUdpPort);
        ASSERT_TRUE(p.ok) << clocksync::drop_name(p.drop);
        EXPECT_EQ(p.type, clocksync::CsType::request);
        EXPECT_EQ(p.client_id, i % 3);
        EXPECT_EQ(p.seq, i);
        EXPECT_EQ(p.t1, 1000 + i);
        expect_valid_udp(std::vector<uint8_t>(f.begin(), f.begin() + info.len), 9001);
    }
}

TEST(GenDeterminism, SameSeedSameFramesOtherSeedOtherFrames) {
    for (Kind k : {Kind::udp, Kind::nfv_mix, Kind::kvagg, Kind::clocksync}) {
        TrafficConfig c;
        c.kind = k;
        if (k == Kind::nfv_mix) c.bad.fill(0.05);
        if (k == Kind::kvagg) {
            c.dist = {true, 1.1};
            c.dup_share = 0.1;
            c.malformed_share = 0.1;
        }
        TrafficPlan a(c), b(c);
        EXPECT_EQ(frames(a, 500), frames(b, 500)) << kind_name(k);
        c.seed = 2;
        TrafficPlan other(c);
        if (k == Kind::nfv_mix || k == Kind::kvagg) {
            EXPECT_NE(frames(a, 500), frames(other, 500)) << kind_name(k);
        }
    }
}

TEST(GenWorkers, EachWorkerOwnsItsFlowsAndItsOwnStream) {
    TrafficConfig c;
    c.flows = 10;
    TrafficPlan plan(c);
    std::set<uint16_t> seen;
    for (unsigned w = 0; w < 3; ++w) {
        for (const auto& f : frames(plan, 20, w, 3)) {
            uint16_t port = pkt::load_be16(&f[34]);
            EXPECT_EQ((port - 1024) % 3, int(w));
            seen.insert(port);
        }
    }
    EXPECT_EQ(seen.size(), 10u);
    // Worker streams differ from each other's (different seeds) in nfv-mix.
    c.kind = Kind::nfv_mix;
    c.bad.fill(0.1);
    TrafficPlan mix(c);
    EXPECT_NE(frames(mix, 200, 0, 2), frames(mix, 200, 1, 2));
}

TEST(GenWorkers, FewerFlowsThanWorkersIsRefused) {
    TrafficConfig c;
    c.flows = 2;
    TrafficPlan plan(c);
    EXPECT_THROW(Traffic(plan, 0, 3), std::invalid_argument);
    EXPECT_NO_THROW(Traffic(plan, 1, 2));
}

TEST(GenConfig, ValidationNamesTheOption) {
    auto message = [](auto mutate) {
        TrafficConfig c;
        mutate(c);
        try {
            c.validate();
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(message([](TrafficConfig& c) { c.frame_size = 63; }).find("--size"),
              std::string::npos);
    EXPECT_NE(message([](TrafficConfig& c) { c.frame_size = 9001; }).find("--size"),
              std::string::npos);
    EXPECT_NE(message([](TrafficConfig& c) { c.flows = 0; }).find("--flows"), std::string::npos);
    EXPECT_NE(message([](TrafficConfig& c) {
                  c.src_port = 65535;
                  c.flows = 2;
              }).find("--flows"),
              std::string::npos);
    EXPECT_NE(message([](TrafficConfig& c) { c.bad.fill(0.2); }).find("more than 1"),
              std::string::npos);
    EXPECT_NE(message([](TrafficConfig& c) { c.tuples = kMaxTuples + 1; }).find("--tuples"),
              std::string::npos);
    EXPECT_NE(message([](TrafficConfig& c) {
                  c.value_min = 5;
                  c.value_max = 4;
              }).find("--value-min"),
              std::string::npos);
    EXPECT_EQ(message([](TrafficConfig& c) { c.tuples = kMaxTuples; }), "");
    TrafficConfig c;
    c.kind = Kind::kvagg;
    c.tuples = kMaxTuples;
    EXPECT_LE(c.frame_len() + kFcsLen, kMaxFrameSize);
}
