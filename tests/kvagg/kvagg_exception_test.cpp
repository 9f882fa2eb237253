// kvagg on an af_packet port on a veth pair as `ip link add` makes it, a client with ordinary
// kernel UDP sockets in the peer namespace (some datagrams sent twice):
//   - with --exception-path the host stack owns an address on the TAP the exception path
//     creates; the peer's ARP and ping reach the kernel through the TAP and its answers go back
//     out the port, while the tuples are aggregated exactly;
//   - the veth leaves the UDP checksums of the peer's sockets to TX offload (the field holds
//     the pseudo-header sum): kvagg takes them by default and counts them as
//     udp_checksum_offloaded, --strict-checksums drops them, and with the offload off (a real
//     wire's case, `ethtool -K IF tx off` as docs/wire-formats.md shows) none is offloaded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "kvagg_trace.hpp"
#include "support/app_metrics.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;
using linerate::kvagg::test::read_dump;

namespace {

// The peer's client: stream 7, seq 0..19, three tuples each (key k, value 100 * k + seq); seq 3
// and 11 are sent twice (the duplicate window drops the copies).
constexpr const char* kClient = R"(
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
def send(seq):
    tuples = b''.join(struct.pack('!QQ', k, 100 * k + seq) for k in (1, 2, 3))
    s.sendto(struct.pack('!HBBHIQI', 0x4B56, 1, 0, 3, 7, seq, 0) + tuples, (sys.argv[1], 9000))
for seq in range(20):
    send(seq)
send(3)
send(11)
)";

// What the client's 20 datagrams add up to.
std::map<uint64_t, uint64_t> client_sums() {
    std::map<uint64_t, uint64_t> expect;
    for (uint64_t seq = 0; seq < 20; ++seq)
        for (uint64_t k : {1, 2, 3}) expect[k] += 100 * k + seq;
    return expect;
}

constexpr const char* kMetrics = "127.0.0.1:9109";  // the app namespace's own loopback

// The client's datagrams kvagg has taken, as its --metrics endpoint counts them: aggregated
// (3 tuples each), refused as duplicates or for their checksum. The test stops kvagg once all 22
// are in (a stop does not drain the port's ring), not after a while.
uint64_t wait_for_client_datagrams(const NetNs& app) {
    const auto taken = [](const std::string& text) {
        return metric_total(text, "linerate_app_events_total", "counter=\"tuples\"") / 3 +
               metric_total(text, "linerate_drops_total", "reason=\"duplicate\"") +
               metric_total(text, "linerate_drops_total", "reason=\"bad_udp_checksum\"");
    };
    return wait_for_metrics(&app, kMetrics, taken, 22, 30);
}

struct VethRun {
    ProcessResult kvagg;
    nlohmann::json json;
    std::map<uint64_t, uint64_t> dump;
};

// kvagg on net_af_packet on the app end of a veth pair, no other flag than `extra`; the client
// sends from the peer once kvagg is up (the peer's kernel resolves the address by ARP).
VethRun run_on_veth(const VethOptions& veth_options, const std::vector<std::string>& extra) {
    NetNs app("kvv"), peer("kvvp");
    VethPair veth(app, peer, veth_options);
    app.run("ip addr add 10.98.0.1/24 dev " + veth.app_if);
    peer.run("ip addr add 10.98.0.2/24 dev " + veth.peer_if);
    const std::string json = scratch("veth.json"), dump = scratch("veth.csv"),
                      client = scratch("veth_client.py");
    std::ofstream(client) << kClient;
    std::vector<std::string> argv = {binary("apps/kvagg/kvagg")};
    for (const std::string& a : no_huge_eal()) argv.push_back(a);
    argv.insert(argv.end(), {"--vdev=net_af_packet0,iface=" + veth.app_if, "--", "--stats-period",
                             "0", "--json", json, "--dump", dump, "--metrics", kMetrics});
    argv.insert(argv.end(), extra.begin(), extra.end());
    BackgroundProcess kvagg(app.wrap(argv));
    VethRun run;
    if (!kvagg.wait_for_output(": running", 30)) {
        run.kvagg = kvagg.finish(5);
        return run;
    }
    const ShellResult sent = peer.try_run("python3 " + client + " 10.98.0.1");
    EXPECT_EQ(sent.status, 0) << sent.out;
    EXPECT_EQ(wait_for_client_datagrams(app), 22u);
    kvagg.signal(SIGINT);
    run.kvagg = kvagg.finish(30);
    run.json = read_json(json);
    run.dump = read_dump(dump);
    return run;
}

}  // namespace

// A default veth, the peer's kernel as the sender: every datagram arrives with its UDP checksum
// left to offload and is aggregated exactly.
TEST(KvaggVeth, KernelSendersOnADefaultVethAreAggregatedExactly) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const VethRun r = run_on_veth({}, {});
    ASSERT_EQ(r.kvagg.exit_status, 0) << r.kvagg.out;
    EXPECT_EQ(r.dump, client_sums()) << r.kvagg.out;
    EXPECT_EQ(r.json["aggregated_packets"], 20u) << r.kvagg.out;
    EXPECT_EQ(r.json["drops"]["duplicate"], 2u);
    EXPECT_EQ(r.json["drops"]["bad_udp_checksum"], 0u);
    EXPECT_EQ(r.json["udp_checksum_offloaded"], 22u) << "every datagram, duplicates included";
    EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0u);
}

TEST(KvaggVeth, StrictChecksumsDropWhatTheSenderLeftToOffload) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const VethRun r = run_on_veth({}, {"--strict-checksums"});
    ASSERT_EQ(r.kvagg.exit_status, 0) << r.kvagg.out;
    EXPECT_TRUE(r.dump.empty()) << r.kvagg.out;
    EXPECT_EQ(r.json["aggregated_packets"], 0u);
    EXPECT_EQ(r.json["drops"]["bad_udp_checksum"], 22u) << r.kvagg.out;
    EXPECT_EQ(r.json["udp_checksum_offloaded"], 0u);
    EXPECT_EQ(r.json["kvagg"]["strict_checksums"], true) << r.json.dump(2);
}

// The real-wire case: TX checksum offload off on the veth (`ethtool -K IF tx off`, as
// docs/wire-formats.md shows), so the kernel completes every checksum: nothing is offloaded,
// the sums are the same.
TEST(KvaggVeth, WithFullChecksumsNothingIsOffloaded) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const VethRun r = run_on_veth({.full_tx_checksums = true}, {"--strict-checksums"});
    ASSERT_EQ(r.kvagg.exit_status, 0) << r.kvagg.out;
    EXPECT_EQ(r.dump, client_sums()) << r.kvagg.out;
    EXPECT_EQ(r.json["drops"]["bad_udp_checksum"], 0u);
    EXPECT_EQ(r.json["udp_checksum_offloaded"], 0u);
}

TEST(KvaggExceptionPath, KernelAnswersArpAndPingThroughTheTapWhileTuplesAggregateExactly) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs app("app"), peer("peer");
    VethPair veth(app, peer);
    peer.run("ip addr add 10.99.0.2/24 dev " + veth.peer_if);
    const std::string tap = "lrx" + std::to_string(getpid());
    const std::string json = scratch("exc.json"), dump = scratch("exc.csv"),
                      client = scratch("client.py");
    std::ofstream(client) << kClient;

    // No fixed run time: the test ends kvagg with SIGINT after the client (a --duration had to
    // outlast start-up, ping and the client, which a sanitizer build on a loaded machine can
    // stretch past it).
    std::vector<std::string> argv = {binary("apps/kvagg/kvagg")};
    for (const std::string& a : no_huge_eal()) argv.push_back(a);
    argv.insert(argv.end(), {"--vdev=net_af_packet0,iface=" + veth.app_if, "--", "--exception-path",
                             "tap:" + tap, "--stats-period", "0", "--json", json, "--dump", dump,
                             "--metrics", kMetrics});
    BackgroundProcess kvagg(app.wrap(argv));
    // The app creates the TAP during EAL start-up; the host side gives it the address.
    bool tap_up = false;
    for (int i = 0; i < 1200 && !tap_up; ++i) {
        tap_up = app.try_run("ip link show " + tap).status == 0;
        if (!tap_up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ShellResult ping{}, sent{};
    if (tap_up) {
        app.run("ip addr add 10.99.0.1/24 dev " + tap + " && ip link set " + tap + " up");
        // No static neighbour: the peer's kernel resolves 10.99.0.1 by ARP through the app.
        ping = peer.try_run("ping -c 3 -i 0.2 -W 3 10.99.0.1");
        sent = peer.try_run("python3 " + client + " 10.99.0.1");
        EXPECT_EQ(wait_for_client_datagrams(app), 22u);
    }
    kvagg.signal(SIGINT);
    const ProcessResult r = kvagg.finish(30);
    ASSERT_TRUE(tap_up) << "the TAP " << tap << " never appeared\n" << r.out;
    EXPECT_EQ(ping.status, 0) << ping.out << r.out;
    EXPECT_NE(ping.out.find("3 received"), std::string::npos) << ping.out;
    ASSERT_EQ(sent.status, 0) << sent.out;
    ASSERT_EQ(r.exit_status, 0) << r.out;

    EXPECT_EQ(read_dump(dump), client_sums()) << r.out;

    const nlohmann::json j = read_json(json);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["aggregated_packets"], 20u) << r.out;
    EXPECT_EQ(j["drops"]["duplicate"], 2u) << r.out;
    EXPECT_EQ(j["drops"]["not_kvagg"], 0u) << r.out;  // the kernel got them instead
    EXPECT_EQ(j["drops"]["exception_ring_full"], 0u) << r.out;
    EXPECT_EQ(j["udp_checksum_offloaded"], 22u) << r.out;  // a default veth
    // At least the peer's ARP request and 3 echo requests went in, an ARP reply and 3 echo
    // replies came out (the peer may add its own ARP probes).
    const uint64_t to_kernel = j["exception_to_kernel"], from_kernel = j["exception_from_kernel"];
    EXPECT_GE(to_kernel, 4u) << r.out;
    EXPECT_GE(from_kernel, 4u) << r.out;
    // Conservation: every frame received was aggregated, dropped by reason, or handed over.
    EXPECT_EQ(j["rx_packets"].get<uint64_t>(),
              j["aggregated_packets"].get<uint64_t>() + j["dropped"].get<uint64_t>() + to_kernel)
        << r.out;
    const nlohmann::json& e = j["exception_path"];
    EXPECT_EQ(e["sent_to_tap"].get<uint64_t>() + e["tap_tx_full"].get<uint64_t>() +
                  e["left_at_stop"].get<uint64_t>(),
              to_kernel)
        << r.out;
    EXPECT_EQ(e["tap_tx_full"], 0u);
    EXPECT_GE(e["received_from_tap"].get<uint64_t>(), from_kernel) << r.out;
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0u) << r.out;
}

TEST(KvaggExceptionPath, BadSpecIsAUsageError) {
    expect_usage_error(binary("apps/kvagg/kvagg"), {"--exception-path", "kni"},
                       "--exception-path: 'kni' is not tap or tap:NAME");
    expect_usage_error(binary("apps/kvagg/kvagg"),
                       {"--exception-path", "tap:a-name-longer-than-15"},
                       "must be 1 to 15 characters");
}
