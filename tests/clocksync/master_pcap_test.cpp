// The master on a pcap file: requests in, responses out with the fields echoed, addresses
// swapped and t2 <= t3 read from CLOCK_MONOTONIC_RAW; anything else counted by reason.
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "clocksync/cs_wire.hpp"
#include "pcapio/pcap_file.hpp"
#include "pkt/build.hpp"
#include "pkt/bytes.hpp"
#include "pkt/checksum.hpp"
#include "support/checksum.hpp"
#include "support/clock.hpp"
#include "support/doc_table.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::clocksync;
using namespace linerate::test;
using pcapio::Frame;

namespace {

const std::string kApp = binary("apps/clocksync/clocksync");
constexpr pkt::MacAddr kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

pkt::UdpFrameSpec spec_for(unsigned i) {
    pkt::UdpFrameSpec s;
    s.src_mac = {0x02, 0, 0, 0, uint8_t(i >> 8), uint8_t(i)};
    s.dst_mac = i % 5 == 0 ? kBroadcast : pkt::MacAddr{0x02, 0, 0, 0, 0, 0x4D};
    s.src_ip = pkt::ipv4_addr(10, 0, uint8_t(i >> 8), uint8_t(i));
    s.dst_ip = pkt::ipv4_addr(10, 1, 0, 1);
    s.src_port = uint16_t(20000 + i);  // the response goes back to it
    s.dst_port = kCsUdpPort;
    return s;
}

Frame request(unsigned i) {
    Frame f(kCsFrameLen);
    build_request(f.data(), f.size(), spec_for(i), 100 + i % 7, 1'000'000 + i * 3,
                  0xFFFF'FFFF'0000'0000u + i);
    return f;
}

// One garbage frame per reason the master can see, each made from a valid request.
struct Garbage {
    std::vector<Frame> frames;
    std::vector<std::string> reasons;  // the drop reason of each frame
};

Garbage garbage() {
    Garbage g;
    auto add = [&g](const std::string& reason, Frame f) {
        g.frames.push_back(std::move(f));
        g.reasons.push_back(reason);
    };
    Frame arp = request(1);
    pkt::store_be16(&arp[12], 0x0806);
    add("not_clocksync", arp);
    Frame other_port = request(2);
    pkt::store_be16(&other_port[36], 9000);
    add("not_clocksync", other_port);
    Frame cut = request(3);
    cut.resize(20);  // ends inside the IPv4 header: cannot be told to be ours
    add("not_clocksync", cut);
    Frame truncated = request(4);
    truncated.resize(60);  // the UDP length says 52 bytes of payload
    add("malformed", truncated);
    Frame bad_sum = request(5);
    bad_sum[24] ^= 0x55;
    add("bad_ip_checksum", bad_sum);
    Frame bad_udp = request(10);
    test::set_udp_checksum(bad_udp);
    bad_udp[70] ^= 0x01;  // t2
    add("bad_udp_checksum", bad_udp);
    Frame magic = request(6);
    magic[42] = 'X';
    add("bad_magic", magic);
    Frame version = request(7);
    version[44] = 2;
    add("bad_version", version);
    Frame response = request(8);
    response[45] = uint8_t(CsType::response);  // a master answers requests only
    add("bad_type", response);
    Frame type = request(9);
    type[45] = 7;
    add("bad_type", type);
    return g;
}

}  // namespace

TEST(ClocksyncMasterPcap, AnswersEveryRequestWithFieldsEchoedAndGarbageCounted) {
    constexpr unsigned kRequests = 300;
    std::vector<Frame> requests, in;
    std::map<std::string, uint64_t> expected;  // reason -> count
    const Garbage bad = garbage();
    auto add_bad = [&](size_t k) {
        in.push_back(bad.frames[k]);
        ++expected[bad.reasons[k]];
    };
    for (unsigned i = 0; i < kRequests; ++i) {
        requests.push_back(request(i));
        in.push_back(requests.back());
        if (i % 30 == 0) add_bad((i / 30) % bad.frames.size());
    }
    for (size_t k = 0; k < bad.frames.size(); ++k) add_bad(k);  // every reason once more

    std::string in_path = scratch("cs_in.pcap"), out_path = scratch("cs_out.pcap"),
                json_path = scratch("cs.json");
    pcapio::write_frames(in_path, in);
    const uint64_t before = test::monotonic_raw_ns();
    ProcessResult r = run_process(
        {kApp, "--pcap", in_path + ":" + out_path, "--json", json_path, "--role", "master"},
        {.timeout_s = 30});
    const uint64_t after = test::monotonic_raw_ns();
    std::vector<Frame> out = pcapio::read_frames(out_path);
    nlohmann::json j = read_json(json_path);

    ASSERT_EQ(r.exit_status, 0) << r.out;
    EXPECT_NE(r.out.find("timestamps sw: clock_gettime(CLOCK_MONOTONIC_RAW)"), std::string::npos)
        << r.out;
    linerate::test::expect_json_documented(j);
    ASSERT_EQ(out.size(), kRequests);
    pkt::MacAddr own{};  // the port's MAC: the source of answers to broadcast requests
    for (unsigned i = 0; i < kRequests; ++i) {
        SCOPED_TRACE("response " + std::to_string(i));
        const Frame& q = requests[i];
        const Frame& a = out[i];
        ASSERT_EQ(a.size(), q.size());
        CsPacket rq = parse_cs_packet(q.data(), q.size());
        // A response is parsed on the port it was sent to: the request's source port.
        CsPacket p = parse_cs_packet(a.data(), a.size(), uint16_t(20000 + i));
        ASSERT_TRUE(p.ok) << int(p.drop);
        EXPECT_EQ(p.type, CsType::response);
        EXPECT_EQ(p.client_id, rq.client_id);
        EXPECT_EQ(p.seq, rq.seq);
        EXPECT_EQ(p.t1, rq.t1);
        EXPECT_LE(before, p.t2);
        EXPECT_LE(p.t2, p.t3);
        EXPECT_LE(p.t3, after);
        EXPECT_TRUE(std::equal(a.begin(), a.begin() + 6, q.begin() + 6));  // dst = request src
        if (i % 5 == 0) {
            if (own == pkt::MacAddr{}) std::copy(a.begin() + 6, a.begin() + 12, own.begin());
            EXPECT_TRUE(std::equal(a.begin() + 6, a.begin() + 12, own.begin()));
            EXPECT_EQ(own[0] & 1, 0) << "a group address as source";
        } else {
            EXPECT_TRUE(std::equal(a.begin() + 6, a.begin() + 12, q.begin()));
        }
        EXPECT_EQ(pkt::load_be32(&a[26]), pkt::load_be32(&q[30]));  // IPs swapped
        EXPECT_EQ(pkt::load_be32(&a[30]), pkt::load_be32(&q[26]));
        EXPECT_TRUE(pkt::checksum_ok(&a[14], 20));
        EXPECT_EQ(pkt::load_be16(&a[34]), pkt::load_be16(&q[36]));  // UDP ports swapped
        EXPECT_EQ(pkt::load_be16(&a[36]), pkt::load_be16(&q[34]));
    }
    EXPECT_EQ(j["role"], "master");
    EXPECT_EQ(j["timestamps"], "sw");
    EXPECT_EQ(j["rx_packets"], in.size());
    EXPECT_EQ(j["tx_packets"], kRequests);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    uint64_t dropped = 0;
    for (const auto& [reason, count] : expected) {
        EXPECT_EQ(j["drops"][reason], count) << reason;
        dropped += count;
    }
    EXPECT_EQ(j["dropped"], dropped);
    EXPECT_EQ(j["drops"]["tx_full"], 0);
}

// Requests of 3000 B and 9000 B (chains of segments on net_pcap, as on a port with scattered
// RX), carrying a UDP checksum over the whole datagram: answered at the same size with the
// bytes after the message echoed; one damaged at its far end is dropped as bad_udp_checksum.
TEST(ClocksyncMasterPcap, JumboRequestsAreAnsweredWhole) {
    auto jumbo = [](unsigned i, size_t len) {
        Frame f = request(i);
        const size_t old = f.size();
        f.resize(len);
        for (size_t k = old; k < len; ++k) f[k] = uint8_t(k * 7 + i);
        pkt::store_be16(&f[16], uint16_t(len - 14));
        pkt::store_be16(&f[38], uint16_t(len - 34));
        set_ip_checksum(f);
        set_udp_checksum(f);
        return f;
    };
    std::vector<Frame> in = {jumbo(1, 3000), jumbo(2, 9000), request(3), jumbo(4, 9000)};
    in[3].back() ^= 0x01;
    PcapRun run = run_pcap_app(kApp, in, {"--role", "master"});
    const std::vector<Frame>& out = run.out;
    const nlohmann::json& j = run.json;
    ASSERT_EQ(run.proc.exit_status, 0) << run.proc.out;
    ASSERT_EQ(out.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
        const Frame& q = in[k];
        const Frame& a = out[k];
        ASSERT_EQ(a.size(), q.size()) << k;
        CsPacket p = parse_cs_packet(a.data(), a.size(), pkt::load_be16(&q[34]));
        ASSERT_TRUE(p.ok) << k << " " << int(p.drop);
        EXPECT_EQ(p.type, CsType::response);
        EXPECT_EQ(p.seq, parse_cs_packet(q.data(), q.size()).seq);
        EXPECT_TRUE(std::equal(a.begin() + kCsFrameLen, a.end(), q.begin() + kCsFrameLen)) << k;
    }
    EXPECT_EQ(j["drops"]["bad_udp_checksum"], 1);
    EXPECT_EQ(j["rx_packets"], 4);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
}

// `clocksync master` (the subcommand, after the common options here) and `clocksync --role
// master` on the same requests: the same answers and the same "clocksync" config.
TEST(ClocksyncMasterPcap, TheSubcommandAndRoleRunTheSameMaster) {
    std::vector<Frame> in;
    for (unsigned i = 0; i < 5; ++i) in.push_back(request(i));
    const PcapRun sub = run_pcap_app(kApp, in, {"master", "--sw-clock", "monotonic"});
    const PcapRun by_role = run_pcap_app(kApp, in, {"--role", "master", "--sw-clock", "monotonic"});
    ASSERT_EQ(sub.proc.exit_status, 0) << sub.proc.out;
    ASSERT_EQ(by_role.proc.exit_status, 0) << by_role.proc.out;
    EXPECT_EQ(sub.out.size(), 5u);
    EXPECT_EQ(by_role.out.size(), 5u);
    EXPECT_EQ(sub.json["role"], "master");
    EXPECT_EQ(sub.json["clocksync"]["sw_clock"], "monotonic");
    EXPECT_EQ(sub.json["clocksync"], by_role.json["clocksync"]);
    EXPECT_EQ(sub.json["tx_packets"], 5);
}
