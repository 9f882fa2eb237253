// kvagg on AF_XDP with linerate's XDP steering program, on a veth pair between two network
// namespaces: a client in the peer namespace sends kvagg datagrams (and duplicates) with an
// ordinary kernel UDP socket to the app interface's IPv4 address, the kernel resolving it by
// ARP; meanwhile ping to the same address is answered by the kernel. The dump must equal the
// client's sums exactly, every datagram must have been redirected, and what the kernel kept
// (ARP, ICMP) must show as passed.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <signal.h>
#include <unistd.h>

#include "support/app_metrics.hpp"
#include "support/metrics_text.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"
#include "xdp/bpf_object.hpp"
#include "xdp/steer/steer_program.hpp"

using namespace linerate;
using namespace linerate::test;

namespace {

constexpr const char* kAppIp = "10.77.0.1";
constexpr const char* kPeerIp = "10.77.0.2";
constexpr unsigned kPort = 9000;
constexpr const char* kMetrics = "127.0.0.1:9109";  // the app namespace's own loopback

std::string read_file(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// The id of the XDP program attached to `ifname` in `ns` (0: none).
uint32_t xdp_prog_id(const NetNs& ns, const std::string& ifname) {
    ShellResult r = ns.try_run("ip -d link show dev " + ifname);
    std::smatch m;
    static const std::regex prog_re("prog/xdp id ([0-9]+)");
    return std::regex_search(r.out, m, prog_re) ? uint32_t(std::stoul(m[1])) : 0;
}

// kv_udp_client.py --window: datagrams sent between two waits for kvagg's stream status.
constexpr const char* kWindow = "500";

// What kv_udp_client.py reports: `sent N resent M coincident C requests R`.
struct ClientSent {
    uint64_t datagrams = 0, duplicates = 0, coincident = 0, requests = 0;
};
ClientSent client_sent(const std::string& out) {
    std::smatch m;
    static const std::regex line(
        "sent ([0-9]+) resent ([0-9]+) coincident ([0-9]+) requests ([0-9]+)");
    if (!std::regex_search(out, m, line)) {
        ADD_FAILURE() << "no summary line from the client:\n" << out;
        return {};
    }
    return {std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]), std::stoull(m[4])};
}

// kv_udp_client.py in `peer` to `to` (kvagg's port) with `args`, its sums to `expect`.
ClientSent send_from(const NetNs& peer, const std::string& to, const std::string& args,
                     const std::string& expect) {
    const std::string client = std::string(LINERATE_SOURCE_DIR) + "/tests/kvagg/kv_udp_client.py";
    const ShellResult sent =
        peer.try_run("python3 " + client + " " + to + " " + std::to_string(kPort) + " " + args +
                     " --expect " + expect);
    if (sent.status != 0) {
        ADD_FAILURE() << "the client failed:\n" << sent.out;
        return {};
    }
    return client_sent(sent.out);
}

// kvagg took every frame the client sent (the XDP program's redirected ones wait in the AF_XDP
// ring until a worker polls them; a stop does not drain the rings).
uint64_t wait_for_rx(const NetNs& ns, uint64_t want) {
    return wait_for_metric_total(&ns, kMetrics, "linerate_rx_packets_total", want, 30);
}

}  // namespace

TEST(KvaggAfXdp, AggregatesKernelUdpWhileTheKernelKeepsArpAndPing) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const std::string steer = xdp::find_bpf_object(xdp::kSteerObjectName);
    ASSERT_FALSE(steer.empty()) << "build/bpf/steer.bpf.o is missing";

    NetNs app("kvxdp"), peer("kvxdpp");
    VethPair veth(app, peer, {.queues = 2});
    app.run(std::string("ip addr add ") + kAppIp + "/24 dev " + veth.app_if);
    peer.run(std::string("ip addr add ") + kPeerIp + "/24 dev " + veth.peer_if);

    // --af-xdp makes one vdev per queue; with --xdp-steer queue 0's attaches the program and
    // queue 1's adopts it.
    const std::string json = scratch("kvagg_af_xdp.json"), dump = scratch("kvagg_af_xdp.csv"),
                      expect = scratch("kvagg_af_xdp_expect.csv");
    const std::string prefix = "lrkvxdp" + std::to_string(getpid());
    std::vector<std::string> argv = eal_command(binary("apps/kvagg/kvagg"), "0", prefix);
    // No fixed run time: the test ends kvagg with SIGINT once it has scraped the endpoint (a
    // --duration had to cover start-up, ping, the client and the scrape, which a sanitizer
    // build on a loaded machine can outlast).
    argv.insert(argv.end(), {"--", "--stats-period", "0", "--xdp-steer", "app", "--af-xdp",
                             veth.app_if + ",queues=2", "--json", json, "--dump", dump, "--metrics",
                             kMetrics, "--allow", kPeerIp});
    BackgroundProcess kvagg(app.wrap(argv));

    // Ready when the program on the interface carries kvagg's filter.
    std::unique_ptr<xdp::SteerProgram> program;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        if (uint32_t id = xdp_prog_id(app, veth.app_if)) {
            program = xdp::SteerProgram::from_id(id);
            if (program && program->filter() == xdp::SteerFilter{xdp::SteerMode::udp_port, kPort})
                break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(program) << "kvagg did not configure the steering program\n" << kvagg.output();

    // The kernel answers ARP (no static neighbour) and ping on the app's interface.
    ShellResult ping = peer.try_run(std::string("ping -c 3 -i 0.2 -W 2 ") + kAppIp);
    EXPECT_EQ(ping.status, 0) << ping.out;
    EXPECT_NE(ping.out.find("3 received"), std::string::npos) << ping.out;

    // The peer's UDP checksums are left to TX offload (the pseudo-header sum); --coincide: the
    // first datagram's, and its resend's, is its full checksum too (see below). --window: the
    // client waits for kvagg's stream status to show each 500 datagrams received before it sends
    // more, so the AF_XDP rings never hold more than that however late kvagg is scheduled (2000
    // at once overflowed them on a loaded machine: the sums then missed what the ring dropped).
    const ClientSent c = send_from(peer, kAppIp,
                                   "--datagrams 2000 --streams 8 --resend-every 7 --coincide "
                                   "--window " +
                                       std::string(kWindow),
                                   expect);
    const uint64_t datagrams = c.datagrams, duplicates = c.duplicates, coincident = c.coincident;
    EXPECT_GE(coincident, 2u) << "--coincide: the first datagram and its resend";
    // Every frame the client sent reaches kvagg: the data, their resends and the status requests
    // (each answered, not dropped).
    const uint64_t frames = datagrams + duplicates + c.requests;

    ping = peer.try_run(std::string("ping -c 2 -i 0.2 -W 2 ") + kAppIp);
    EXPECT_EQ(ping.status, 0) << ping.out;

    // The program's counters as the running app reports them (/linerate/xdp), once kvagg has
    // taken every frame.
    EXPECT_EQ(wait_for_rx(app, frames), frames);
    nlohmann::json live;
    if (telemetry_client_installed()) {
        std::string answer;
        live = telemetry_query(prefix, {"/linerate/xdp"}, &answer)[0];
        ASSERT_TRUE(live.is_object()) << answer;
        EXPECT_EQ(live["redirected"], frames) << live;
        EXPECT_GE(live["passed"].get<uint64_t>(), 6u) << live;
        EXPECT_EQ(live[veth.app_if + "_queues_redirected"].size(), 2u) << live;
    }
    // And as --metrics serves them: per queue and action.
    const ShellResult scraped =
        app.try_run(std::string("curl -sf http://") + kMetrics + "/metrics");
    EXPECT_EQ(scraped.status, 0) << scraped.out;
    auto xdp_sample = [&](unsigned queue, const std::string& action) {
        return metric_sample(scraped.out, "linerate_xdp_packets_total{app=\"kvagg\",interface=\"" +
                                              veth.app_if + "\",queue=\"" + std::to_string(queue) +
                                              "\",action=\"" + action + "\"}");
    };
    kvagg.signal(SIGINT);
    const ProcessResult ended = kvagg.finish(30);
    system(("rm -rf /var/run/dpdk/" + prefix).c_str());

    ASSERT_EQ(ended.exit_status, 0) << ended.out;
    EXPECT_EQ(read_file(dump), read_file(expect)) << "kvagg's sums differ from what was sent";
    nlohmann::json j = read_json(json);
    EXPECT_EQ(j["rx_packets"], frames);
    EXPECT_EQ(j["service"]["statuses"], c.requests) << j["service"];
    EXPECT_EQ(j["drops"]["duplicate"], duplicates);
    EXPECT_EQ(j["dropped"], duplicates) << "ARP/ICMP must not reach kvagg";
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    // A default veth leaves the peer's UDP checksums to TX offload: taken, and counted. Every
    // datagram is accounted for exactly: a field that is also the datagram's full checksum (the
    // client counts them: about 1 in 65535 by the source port the kernel picked, plus the two
    // --coincide makes) passes kvagg's full check, which comes first, and is no offload case.
    EXPECT_EQ(j["udp_checksum_offloaded"], datagrams + duplicates - coincident) << coincident;
    EXPECT_EQ(j["drops"]["bad_udp_checksum"], 0);
    ASSERT_TRUE(j.contains("xdp")) << j.dump(2);
    const nlohmann::json& x = j["xdp"];
    EXPECT_EQ(x["redirected"], frames);
    EXPECT_EQ(x["unclaimed"], 0);
    // At least ARP request + 5 echo requests reached the kernel.
    EXPECT_GE(x["passed"].get<uint64_t>(), 6u);
    ASSERT_TRUE(x["interfaces"].contains(veth.app_if));
    const nlohmann::json& queues = x["interfaces"][veth.app_if]["queues"];
    uint64_t per_queue = 0;
    for (const auto& q : queues) per_queue += q["redirected"].get<uint64_t>();
    EXPECT_EQ(per_queue, frames);
    // The scrape after the client stopped: redirected had stopped moving (= the JSON); passed
    // may still have grown after it (the kernel's own traffic).
    for (const auto& q : queues) {
        const unsigned i = q["queue"].get<unsigned>();
        EXPECT_EQ(xdp_sample(i, "redirected"), q["redirected"].get<double>()) << scraped.out;
        EXPECT_LE(xdp_sample(i, "passed"), q["passed"].get<double>()) << scraped.out;
        EXPECT_EQ(xdp_sample(i, "unclaimed"), q["unclaimed"].get<double>()) << scraped.out;
    }
}

// The default (issue 22): `--af-xdp IFACE` and nothing else about XDP. linerate's steering
// program is attached with kvagg's own filter, so the kernel keeps answering ARP and ping on the
// app's interface while kvagg aggregates its UDP port; when kvagg ends, the interface has no
// XDP program left.
TEST(KvaggAfXdp, PlainAfXdpLeavesArpAndPingToTheKernel) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs app("kvxdd"), peer("kvxddp");
    VethPair veth(app, peer);
    app.run(std::string("ip addr add ") + kAppIp + "/24 dev " + veth.app_if);
    peer.run(std::string("ip addr add ") + kPeerIp + "/24 dev " + veth.peer_if);
    const std::string json = scratch("kvagg_plain.json"), dump = scratch("kvagg_plain.csv"),
                      expect = scratch("kvagg_plain_expect.csv");
    BackgroundProcess kvagg(
        app.wrap({binary("apps/kvagg/kvagg"), "--af-xdp", veth.app_if, "--stats-period", "0",
                  "--json", json, "--dump", dump, "--metrics", kMetrics, "--allow", kPeerIp}));
    ASSERT_TRUE(kvagg.wait_for_output("xdp steering on " + veth.app_if, 30)) << kvagg.output();
    EXPECT_NE(kvagg.output().find("to the app: IPv4/UDP to port 9000"), std::string::npos)
        << kvagg.output();

    // No static neighbour: the peer resolves the address by ARP, answered by the app's kernel.
    ShellResult ping = peer.try_run(std::string("ping -c 3 -i 0.2 -W 2 ") + kAppIp);
    EXPECT_EQ(ping.status, 0) << ping.out;
    EXPECT_NE(ping.out.find("3 received"), std::string::npos) << ping.out;
    const ClientSent c =
        send_from(peer, kAppIp, "--datagrams 200 --window " + std::string(kWindow), expect);
    const uint64_t datagrams = c.datagrams, duplicates = c.duplicates;
    const uint64_t frames = datagrams + duplicates + c.requests;
    EXPECT_EQ(wait_for_rx(app, frames), frames);
    kvagg.signal(SIGINT);
    ProcessResult r = kvagg.finish(30);

    ASSERT_EQ(r.exit_status, 0) << r.out;
    EXPECT_EQ(r.out.find("DPDK's default XDP program"), std::string::npos) << r.out;
    EXPECT_EQ(read_file(dump), read_file(expect)) << "kvagg's sums differ from what was sent";
    nlohmann::json j = read_json(json);
    EXPECT_EQ(j["rx_packets"], frames) << r.out;
    EXPECT_EQ(j["dropped"], duplicates) << "ARP/ICMP must not reach kvagg\n" << r.out;
    ASSERT_TRUE(j.contains("xdp")) << j.dump(2);
    EXPECT_EQ(j["xdp"]["filter"], "IPv4/UDP to port 9000");
    EXPECT_EQ(j["xdp"]["redirected"], frames);
    EXPECT_EQ(j["xdp"]["unclaimed"], 0u);
    // At least the ARP request and the 3 echo requests went to the kernel.
    EXPECT_GE(j["xdp"]["passed"].get<uint64_t>(), 4u) << j["xdp"];
    EXPECT_EQ(xdp_prog_id(app, veth.app_if), 0u) << "the program outlived the app";
}

// --listen-ip: the app's interface has two addresses and kvagg listens on one. The steering
// program matches the port only, so datagrams to the other address reach kvagg too: it counts
// them as other_address, exactly, and its sums are those sent to its own address.
TEST(KvaggAfXdp, OnlyTheListenAddressIsAggregated) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    constexpr const char* kOtherIp = "10.77.0.3";
    NetNs app("kvxdl"), peer("kvxdlp");
    VethPair veth(app, peer);
    for (const char* ip : {kAppIp, kOtherIp})
        app.run(std::string("ip addr add ") + ip + "/24 dev " + veth.app_if);
    peer.run(std::string("ip addr add ") + kPeerIp + "/24 dev " + veth.peer_if);
    const std::string json = scratch("kvagg_listen.json"), dump = scratch("kvagg_listen.csv"),
                      expect = scratch("kvagg_listen_expect.csv"),
                      elsewhere = scratch("kvagg_listen_other.csv");
    BackgroundProcess kvagg(app.wrap({binary("apps/kvagg/kvagg"), "--af-xdp", veth.app_if,
                                      "--listen-ip", kAppIp, "--stats-period", "0", "--json", json,
                                      "--dump", dump, "--metrics", kMetrics, "--allow", kPeerIp}));
    ASSERT_TRUE(kvagg.wait_for_output("xdp steering on " + veth.app_if, 30)) << kvagg.output();

    const ClientSent mine =
        send_from(peer, kAppIp, "--datagrams 300 --window " + std::string(kWindow), expect);
    // No --window to the other address: kvagg answers no status there. 150 fit the ring.
    const ClientSent other = send_from(peer, kOtherIp, "--datagrams 150 --seed 2", elsewhere);
    const uint64_t to_other = other.datagrams + other.duplicates;
    const uint64_t frames = mine.datagrams + mine.duplicates + mine.requests + to_other;
    EXPECT_EQ(wait_for_rx(app, frames), frames);
    kvagg.signal(SIGINT);
    const ProcessResult r = kvagg.finish(30);

    ASSERT_EQ(r.exit_status, 0) << r.out;
    EXPECT_EQ(read_file(dump), read_file(expect)) << "kvagg's sums differ from what was sent";
    const nlohmann::json j = read_json(json);
    EXPECT_EQ(j["rx_packets"], frames) << r.out;
    EXPECT_EQ(j["drops"]["other_address"], to_other) << j["drops"];
    EXPECT_EQ(j["drops"]["duplicate"], mine.duplicates) << j["drops"];
    EXPECT_EQ(j["dropped"], to_other + mine.duplicates) << j["drops"];
    EXPECT_EQ(j["service"]["statuses"], mine.requests) << j["service"];
    EXPECT_EQ(j["kvagg"]["listen_ip"], nlohmann::json::array({kAppIp}));
}
