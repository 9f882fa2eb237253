// kvagg on net_af_packet with jumbo frames (issue 22): a veth pair of MTU 9000 between two
// namespaces the test creates (the README tells users to set the interface MTU for jumbo
// frames), the vdev's ring of framesz=16384. The pool's mbufs are sized to the ring's frames by
// the app itself: a 300-tuple datagram (4864 B frame), sent by a raw socket with full IPv4 and
// UDP checksums, is aggregated exactly. An --mbuf-size below the ring frame stops the app with
// one line naming the figure and the flag.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "kvagg_trace.hpp"
#include "support/app_metrics.hpp"
#include "support/checksum.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;
using namespace linerate::kvagg;
using namespace linerate::kvagg::test;

namespace {

const std::string kApp = binary("apps/kvagg/kvagg");

// kvagg on a framesz=16384 af_packet ring over `iface`, then `args`.
constexpr const char* kMetrics = "127.0.0.1:9109";  // the app namespace's own loopback

std::vector<std::string> kvagg_argv(const NetNs& ns, const std::string& iface,
                                    const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kApp};
    for (const std::string& a : no_huge_eal()) argv.push_back(a);
    argv.insert(argv.end(),
                {"--vdev=net_af_packet0,iface=" + iface + ",framesz=16384,blocksz=16384", "--",
                 "--stats-period", "0"});
    argv.insert(argv.end(), args.begin(), args.end());
    return ns.wrap(argv);
}

}  // namespace

TEST(KvaggAfPacket, JumboDatagramOnA16KRingIsAggregatedExactly) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs app("kvpk"), peer("kvpkp");
    VethPair veth(app, peer, {.mtu = 9000});
    const std::string json = scratch("kv_af_packet.json"), dump = scratch("kv_af_packet.csv");
    BackgroundProcess kvagg(
        kvagg_argv(app, veth.app_if,
                   {"--mtu", "9000", "--json", json, "--dump", dump, "--metrics", kMetrics}));
    ASSERT_TRUE(kvagg.wait_for_output(": running", 30)) << kvagg.output();
    // framesz 16384 less the 32 B tpacket2 header, plus the 128 B headroom.
    EXPECT_NE(kvagg.output().find("port 0 (net_af_packet0): mbufs of 16480 B data room for its "
                                  "ring's framesz=16384"),
              std::string::npos)
        << kvagg.output();

    pkt::UdpFrameSpec spec = kv_spec(5);
    const std::vector<uint8_t> app_mac = veth.app_mac_bytes(), peer_mac = veth.peer_mac_bytes();
    std::copy(app_mac.begin(), app_mac.end(), spec.dst_mac.begin());
    std::copy(peer_mac.begin(), peer_mac.end(), spec.src_mac.begin());
    Dump expect;
    RawSocket sock(peer, veth.peer_if);
    for (uint64_t seq = 0; seq < 2; ++seq) {
        std::vector<KvTuple> tuples;
        for (uint64_t k = 0; k < 300; ++k) {
            tuples.push_back({k * 7 + seq, 1000 * k + seq});
            expect[k * 7 + seq] += 1000 * k + seq;
        }
        std::vector<uint8_t> frame = make_kv_frame(spec, 5, seq, tuples);
        ASSERT_EQ(frame.size(), 64u + 300 * 16);
        set_udp_checksum(frame);
        sock.send(frame);
    }
    // Stopped once it aggregated both (a stop does not drain the ring), not after a while.
    const auto tuples = [](const std::string& text) {
        return metric_total(text, "linerate_app_events_total", "counter=\"tuples\"");
    };
    EXPECT_EQ(wait_for_metrics(&app, kMetrics, tuples, 600, 30), 600u);
    kvagg.signal(SIGINT);
    ProcessResult r = kvagg.finish(30);
    ASSERT_EQ(r.exit_status, 0) << r.out;
    EXPECT_EQ(read_dump(dump), expect) << r.out;
    const nlohmann::json j = read_json(json);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["rx_packets"], 2u) << r.out;
    EXPECT_EQ(j["aggregated_packets"], 2u) << r.out;
    EXPECT_EQ(j["dropped"], 0u) << j.dump(2);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0u) << r.out;
}

TEST(KvaggAfPacket, MbufSizeBelowTheRingFrameStopsNamingTheFlag) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs app("kvpk"), peer("kvpkp");
    VethPair veth(app, peer, {.mtu = 9000});
    ProcessResult r = run_process(
        kvagg_argv(app, veth.app_if, {"--mtu", "9000", "--mbuf-size", "9344"}), {.timeout_s = 30});
    EXPECT_EQ(r.exit_status, 1) << r.out;
    EXPECT_NE(r.out.find("kvagg: port 0 (net_af_packet0): its ring's framesz=16384 needs mbufs of "
                         "16480 B data room (headroom included): give --mbuf-size 16480 or more, "
                         "or leave it out\n"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("rx_queue_setup"), std::string::npos) << r.out;
}
