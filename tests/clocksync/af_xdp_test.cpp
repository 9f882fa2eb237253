// Master and client across a veth pair, each end in its own network namespace, the client on
// AF_XDP (--af-xdp): the exchange crosses the kernel's veth and XDP path instead of a memif ring.
// The client is in verification mode (both ends read the same system clock), so every ε sample
// is checked against the true offset: 0 violations, and clean exits. Veths as `ip link add`
// makes them, --af-xdp and nothing else about XDP: the kernels on both ends keep answering ARP
// and ping on the same interfaces meanwhile (the steering program hands the apps their UDP port
// only). The master runs in three ways: the C++ master on AF_XDP reading CLOCK_MONOTONIC_RAW
// (the default) or CLOCK_MONOTONIC (--sw-clock monotonic), and the XDP master (--datapath xdp:
// apps/clocksync/xdp/clocksync.bpf.c answering in the veth's XDP hook, CLOCK_MONOTONIC), whose
// clients say
// --master-clock monotonic.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/doc_table.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

namespace {

struct PairRun {
    ProcessResult master, client;
    nlohmann::json master_json, client_json;
    ShellResult ping;
    std::string master_mac;   // the veth end the master runs on
    std::string client_if;    // the veth end the client runs on
    std::string master_link;  // `ip link show` of it once the master exited
};

// The master with `master_args` (and `master_env`, VAR=value) on one end of a fresh veth pair,
// the client with `client_args` in verification mode (5 ms off, 8 ppm fast) on the other, both
// on --af-xdp; the peer pings the master's address while they run. The master is stopped once it
// has received every frame the client sent but `frames_lost` (those the test knows the kernel
// dropped on the way).
PairRun run_pair(const std::vector<std::string>& master_args,
                 const std::vector<std::string>& client_args,
                 const std::vector<std::string>& master_env = {}, uint64_t frames_lost = 0) {
    NetNs master_ns("csm"), client_ns("csc");
    VethPair veth(master_ns, client_ns);
    master_ns.run("ip addr add 10.78.0.1/24 dev " + veth.app_if);
    client_ns.run("ip addr add 10.78.0.2/24 dev " + veth.peer_if);
    const std::string id = std::to_string(getpid());
    const std::string master_prefix = "csxm" + id, client_prefix = "csxc" + id;
    const std::string master_json = scratch("master.json"), client_json = scratch("client.json");
    const std::string client_lcore = std::thread::hardware_concurrency() > 1 ? "1" : "0";
    auto app = [&](const std::string& lcore, const std::string& prefix, const std::string& iface) {
        std::vector<std::string> argv =
            eal_command(binary("apps/clocksync/clocksync"), lcore, prefix);
        argv.insert(argv.end(), {"--", "--af-xdp", iface, "--stats-period", "0"});
        return argv;
    };
    std::vector<std::string> master = app("0", master_prefix, veth.app_if);
    if (!master_env.empty()) {
        master.insert(master.begin(), master_env.begin(), master_env.end());
        master.insert(master.begin(), "/usr/bin/env");
    }
    // No fixed run time for the master: it is stopped with SIGINT once the client has ended
    // (requests after the master stops would go to the kernel, unanswered).
    master.insert(master.end(), {"--role", "master", "--json", master_json});
    master.insert(master.end(), master_args.begin(), master_args.end());
    std::vector<std::string> client = app(client_lcore, client_prefix, veth.peer_if);
    // A generous probe timeout: a descheduled poller on the shared cores stretches a round trip
    // to tens of ms, which widens ε but must never break it.
    client.insert(client.end(),
                  {"--role", "client", "--duration", "6", "--sim-offset-ns", "5000000",
                   "--sim-drift-ppm", "8", "--probe-timeout-ms", "80", "--json", client_json});
    client.insert(client.end(), client_args.begin(), client_args.end());
    PairRun r;
    r.master_mac = veth.app_mac;
    r.client_if = veth.peer_if;
    BackgroundProcess master_run(master_ns.wrap(master));
    if (master_run.wait_for_output(": running", 60)) {
        // Ping once the client is running (not after a while): both apps are on the link.
        BackgroundProcess client_run(client_ns.wrap(client));
        if (client_run.wait_for_output(": running", 60))
            r.ping = client_ns.try_run("ping -c 3 -i 0.2 -W 2 10.78.0.1");
        r.client = client_run.finish(60);
    }
    r.client_json = read_json(client_json);
    // Frames still in the master's ring when the client exits are polled before the SIGINT (at
    // once, a loaded machine's master lost the last ones from its counts).
    const uint64_t sent =
        r.client_json.is_object() ? r.client_json.value("tx_packets", uint64_t(0)) : 0;
    if (sent > frames_lost)
        wait_for_stats_total(master_prefix, "rx_packets", sent - frames_lost, 30);
    master_run.signal(SIGINT);
    r.master = master_run.finish(30);
    r.master_link = master_ns.run("ip link show dev " + veth.app_if);
    r.master_json = read_json(master_json);
    std::error_code ec;
    for (const std::string& prefix : {master_prefix, client_prefix})
        std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);
    return r;
}

// What every run must show: ping answered beside the apps, clean exits, syncs with no
// violation, the master's MAC learned, no mbuf left behind.
void expect_synced(const PairRun& r, const char* label) {
    const nlohmann::json& cj = r.client_json;
    EXPECT_EQ(r.ping.status, 0) << r.ping.out;
    EXPECT_NE(r.ping.out.find("3 received"), std::string::npos) << r.ping.out;
    ASSERT_EQ(r.client.exit_status, 0) << r.client.out;
    ASSERT_EQ(r.master.exit_status, 0) << r.master.out;
    ASSERT_TRUE(cj.is_object()) << r.client.out;
    std::printf("%s: syncs %s violations %s timeouts %s epsilon_ns %s rtt_ns %s\n", label,
                cj["syncs"].dump().c_str(), cj["violations"].dump().c_str(),
                cj["timeouts"].dump().c_str(), cj["epsilon_ns"].dump().c_str(),
                cj["rtt_ns"].dump().c_str());
    EXPECT_GE(cj["syncs"].get<uint64_t>(), 20u) << r.client.out;
    EXPECT_EQ(cj["violations"], 0) << r.client.out;
    EXPECT_EQ(cj["intersections_empty"], 0) << r.client.out;
    EXPECT_GT(cj["epsilon_samples"].get<uint64_t>(), 3000u);
    EXPECT_TRUE(cj["master_mac"].is_string()) << "master MAC not learned over the veth";
    EXPECT_EQ(cj["master_mac"], r.master_mac);
    EXPECT_EQ(cj["mempool_in_use_at_exit"], 0) << r.client.out;
    EXPECT_EQ(r.master_json["mempool_in_use_at_exit"], 0) << r.master.out;
}

}  // namespace

// The client asks the steering program for receive stamps, and every answer's t4 is its stamp
// (on the client's clock): none refused (a stamp outside its probe's round trip), none missing.
void expect_t4_from_the_hook(const PairRun& r) {
    const nlohmann::json& cj = r.client_json;
    EXPECT_EQ(cj["xdp"]["rx_stamp"], true) << r.client.out;
    EXPECT_NE(r.client.out.find("each with its receive time"), std::string::npos) << r.client.out;
    EXPECT_GT(cj["responses"].get<uint64_t>(), 0u);
    EXPECT_EQ(cj["rx_stamps"], cj["responses"]) << r.client.out;
    EXPECT_EQ(cj["rx_stamps_refused"], 0) << r.client.out;
}

// The C++ master's t2 likewise: every frame it got (requests and warm-ups) carried the steering
// program's stamp, and each was taken (none after the burst's own reading).
void expect_t2_from_the_hook(const PairRun& r) {
    EXPECT_NE(r.master.out.find("t2 from the steering program's receive stamp"), std::string::npos)
        << r.master.out;
    EXPECT_GT(r.master_json["rx_stamps"].get<uint64_t>(), 0u);
    EXPECT_EQ(r.master_json["rx_stamps"], r.master_json["rx_packets"]) << r.master.out;
    EXPECT_EQ(r.master_json["rx_stamps_refused"], 0) << r.master.out;
}

TEST(ClocksyncAfXdp, MasterAndClientAcrossAVethPairHaveNoViolations) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const PairRun r = run_pair({}, {});
    expect_synced(r, "af_xdp");
    EXPECT_EQ(r.master_json["timestamps"], "sw");
    // On CLOCK_MONOTONIC_RAW too, converted from the hook's CLOCK_MONOTONIC.
    expect_t4_from_the_hook(r);
    expect_t2_from_the_hook(r);
    // Every request the master answered came back or was lost: answers >= syncs.
    EXPECT_GE(r.master_json["tx_packets"].get<uint64_t>(), r.client_json["syncs"].get<uint64_t>());
}

// The clock the XDP master reads, on the C++ master: the client reads it too, and verification
// mode's truth holds on it.
TEST(ClocksyncAfXdp, OnClockMonotonicToo) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const PairRun r = run_pair({"--sw-clock", "monotonic"}, {"--master-clock", "monotonic"});
    expect_synced(r, "af_xdp monotonic");
    EXPECT_EQ(r.master_json["clocksync"]["sw_clock"], "monotonic");
    EXPECT_EQ(r.client_json["clocksync"]["master_clock"], "monotonic");
    EXPECT_NE(r.client.out.find("clock_gettime(CLOCK_MONOTONIC)"), std::string::npos)
        << r.client.out;
    expect_t4_from_the_hook(r);
    expect_t2_from_the_hook(r);
}

// The client's frames with --warmup-us: each round's warm-up asks for its echo, which every
// master tier sends back; the client counts the echoes (not as responses, not as drops). All but
// one sent as the client stopped come back. Every frame received is a response, an echo, or an
// answer that came after its probe's timeout (unknown_sequence: a descheduled poller on a loaded
// machine), and there are no more of those than probes timed out.
void expect_warmups_echoed(const nlohmann::json& cj, const std::string& out) {
    const uint64_t warmups =
        cj["warmups_sent"].get<uint64_t>() - cj["warmups_refused"].get<uint64_t>();
    const uint64_t echoes = cj["warmup_echoes"], late = cj["drops"]["unknown_sequence"];
    EXPECT_GE(warmups, 10u) << out;
    EXPECT_LE(echoes, warmups) << out;
    EXPECT_GE(echoes + 1, warmups) << out;
    EXPECT_EQ(cj["rx_packets"], cj["responses"].get<uint64_t>() + echoes + late) << out;
    EXPECT_LE(late, cj["timeouts"].get<uint64_t>()) << out;
    for (const auto& [reason, n] : cj["drops"].items())
        if (reason != "tx_full" && reason != "unknown_sequence") {
            EXPECT_EQ(n, 0) << reason;
        }
}

// The XDP master: apps/clocksync/xdp/clocksync.bpf.c answers every request in the veth's XDP hook
// (t2, t3 from CLOCK_MONOTONIC), the client in verification mode says --master-clock monotonic. The
// master's counters are the client's frames exactly (requests and warm-ups, --warmup-us): received,
// answered or echoed, all by the program (none left to the slow path), none dropped; ping beside
// it goes to the kernel; the program is gone after.
TEST(ClocksyncAfXdp, XdpMasterAnswersEveryRequestInTheDriver) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const PairRun r =
        run_pair({"--datapath", "xdp"}, {"--master-clock", "monotonic", "--warmup-us", "50"});
    expect_synced(r, "xdp master");
    const nlohmann::json &mj = r.master_json, &cj = r.client_json;
    EXPECT_EQ(mj["datapath"], "xdp") << r.master.out;
    EXPECT_EQ(mj["timestamps"], "xdp");
    EXPECT_EQ(mj["clocksync"]["sw_clock"], "monotonic");
    const uint64_t requests = cj["tx_packets"];
    EXPECT_GE(requests, cj["syncs"].get<uint64_t>());
    EXPECT_EQ(mj["rx_packets"], requests) << r.master.out;
    EXPECT_EQ(mj["tx_packets"], requests) << r.master.out;
    EXPECT_EQ(mj["xdp"]["program"]["tx"], requests);
    EXPECT_EQ(mj["xdp"]["tiers"]["xdp"], requests);
    EXPECT_EQ(mj["xdp"]["tiers"]["slow_path"], 0);
    EXPECT_EQ(mj["xdp"]["program"]["drop"], 0);
    EXPECT_GT(mj["xdp"]["program"]["not_served"].get<uint64_t>(), 0u);  // ping, ARP
    for (const auto& [reason, n] : mj["drops"].items()) EXPECT_EQ(n, 0) << reason;
    // Every answer came back, but those to a round's warm-up and request sent as the client
    // stopped.
    EXPECT_LE(cj["rx_packets"].get<uint64_t>(), requests);
    EXPECT_GE(cj["rx_packets"].get<uint64_t>() + 2, requests) << r.client.out;
    expect_warmups_echoed(cj, r.client.out);
    expect_t4_from_the_hook(r);
    EXPECT_EQ(r.master_link.find(" xdp"), std::string::npos) << r.master_link;
    expect_json_documented(mj);
    expect_json_documented(cj);
}

// Both tiers answer alike: with every served frame left to the slow path (xdp-iface's test hook),
// the C++ master behind the AF_XDP socket answers each request and echoes each warm-up, on the
// XDP master's clock.
TEST(ClocksyncAfXdp, XdpMastersSlowPathAnswersToo) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const PairRun r =
        run_pair({"--datapath", "xdp"},
                 {"--master-clock", "monotonic", "--warmup-us", "50", "--no-rx-stamps"},
                 {"LINERATE_TEST_XDP_SLOW_PATH=1"});
    expect_synced(r, "xdp master, slow path");
    const nlohmann::json &mj = r.master_json, &cj = r.client_json;
    // The client with its t4 in the loop (--no-rx-stamps): the program was not asked for stamps.
    EXPECT_EQ(cj["xdp"]["rx_stamp"], false);
    EXPECT_EQ(cj["rx_stamps"], 0);
    const uint64_t requests = cj["tx_packets"];
    EXPECT_EQ(mj["xdp"]["program"]["slow_path"], requests) << r.master.out;
    EXPECT_EQ(mj["xdp"]["tiers"]["slow_path"], requests);
    EXPECT_EQ(mj["xdp"]["program"]["tx"], 0);
    EXPECT_EQ(mj["rx_packets"], requests);
    EXPECT_EQ(mj["tx_packets"], requests);
    expect_warmups_echoed(cj, r.client.out);
}

// --xdp-tx: the client's requests and warm-ups leave from its interface's XDP layer
// (lib/xdp/xdp_tx/xdp_tx.bpf.c, XDP_TX from a live-frames test run), each request's t1 the
// program's stamp. The native XDP master's end has NAPI, so every one arrives: the master's
// counters are the client's frames exactly, ε is never violated, and the client never went back to
// its socket.
TEST(ClocksyncAfXdp, XdpTxRequestsReachTheNativeXdpMaster) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const PairRun r = run_pair({"--datapath", "xdp", "--xdp-mode", "native"},
                               {"--master-clock", "monotonic", "--warmup-us", "50", "--xdp-tx"});
    expect_synced(r, "xdp native master, client --xdp-tx");
    const nlohmann::json &mj = r.master_json, &cj = r.client_json;
    EXPECT_NE(r.client.out.find("requests leave by XDP_TX on " + r.client_if), std::string::npos)
        << r.client.out;
    EXPECT_EQ(r.client.out.find("--xdp-tx:"), std::string::npos) << r.client.out;
    EXPECT_EQ(cj["clocksync"]["xdp_tx"], true);
    EXPECT_EQ(cj["xdp_tx_requests"], cj["probes_sent"]) << r.client.out;
    const uint64_t frames = cj["tx_packets"];
    EXPECT_EQ(frames, cj["probes_sent"].get<uint64_t>() + cj["warmups_sent"].get<uint64_t>());
    EXPECT_EQ(mj["xdp"]["interfaces"].begin().value()["mode"], "native") << r.master.out;
    EXPECT_EQ(mj["rx_packets"], frames) << r.master.out;
    EXPECT_EQ(mj["xdp"]["program"]["tx"], frames);
    expect_warmups_echoed(cj, r.client.out);
    expect_t4_from_the_hook(r);
}

// The generic XDP master's veth end has no NAPI: the kernel drops what the client's XDP_TX puts
// on its ring, unseen. The client sees its first requests go unanswered, says so in one line and
// sends through its AF_XDP socket from then on: it syncs, with no violation.
TEST(ClocksyncAfXdp, XdpTxGoesBackToTheSocketWhenNothingAnswers) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    // No warm-ups: the frames lost are exactly the requests.
    const PairRun r =
        run_pair({"--datapath", "xdp"},
                 {"--master-clock", "monotonic", "--warmup-us", "0", "--xdp-tx"}, {}, 8);
    expect_synced(r, "xdp generic master, client --xdp-tx");
    const nlohmann::json& cj = r.client_json;
    EXPECT_NE(r.client.out.find("--xdp-tx: no answer to the first 8 requests"), std::string::npos)
        << r.client.out;
    EXPECT_EQ(cj["xdp_tx_requests"], 8) << r.client.out;
    EXPECT_GE(cj["timeouts"].get<uint64_t>(), 8u);
    EXPECT_EQ(r.master_json["rx_packets"].get<uint64_t>() + 8, cj["tx_packets"].get<uint64_t>())
        << r.master.out;
}

// --xdp-turn: each probe leaves as a warm-up frame flagged for its turn; the master echoes it and
// the client's steering program sends the echo back by XDP_TX as the request (t1 stamped there),
// then hands the answer over with that t1 in its stamp. Every frame the client's end sent reaches
// the native master: its own frames and the ones its program turned. Every answer's t1 and t4
// come from the hook, none refused, and each turned request is answered or timed out.
TEST(ClocksyncAfXdp, XdpTurnSendsEachRequestFromTheClientsSteeringProgram) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const PairRun r =
        run_pair({"--datapath", "xdp", "--xdp-mode", "native"},
                 {"--master-clock", "monotonic", "--warmup-us", "50", "--xdp-tx", "--xdp-turn"});
    expect_synced(r, "xdp native master, client --xdp-turn");
    const nlohmann::json &mj = r.master_json, &cj = r.client_json;
    EXPECT_NE(r.client.out.find("requests leave from the steering program"), std::string::npos)
        << r.client.out;
    EXPECT_NE(r.client.out.find("warm-up echoes turned into requests"), std::string::npos);
    EXPECT_EQ(r.client.out.find("--xdp-turn:"), std::string::npos) << r.client.out;
    EXPECT_EQ(cj["clocksync"]["xdp_turn"], true);
    EXPECT_EQ(cj["xdp"]["cs_turn"], true);
    const uint64_t turned = cj["xdp"]["turned"], probes = cj["probes_sent"];
    const uint64_t responses = cj["responses"], timeouts = cj["timeouts"];
    EXPECT_EQ(cj["turn_stamps"], responses) << r.client.out;
    EXPECT_EQ(cj["turn_stamps_refused"], 0) << r.client.out;
    EXPECT_LE(responses, turned);
    EXPECT_LE(turned, probes);
    // A probe still out when the client stops is neither: counted apart.
    EXPECT_EQ(responses + timeouts + cj["probes_in_flight"].get<uint64_t>(), probes)
        << r.client.out;
    EXPECT_LE(cj["probes_in_flight"].get<uint64_t>(), 1u) << r.client.out;
    EXPECT_EQ(mj["rx_packets"], cj["tx_packets"].get<uint64_t>() + turned) << r.master.out;
    EXPECT_EQ(mj["xdp"]["program"]["tx"], mj["rx_packets"]) << r.master.out;
    EXPECT_EQ(cj["rx_packets"], responses + cj["warmup_echoes"].get<uint64_t>() +
                                    cj["drops"]["unknown_sequence"].get<uint64_t>());
    expect_t4_from_the_hook(r);
}

// A peer that drops XDP frames (the generic XDP master's veth end has no NAPI) loses every
// turned request: the master echoes each trigger, the client's program turns it, and nothing
// comes back. The client says so in one line after 8 and sends its requests itself from then on.
TEST(ClocksyncAfXdp, XdpTurnGoesBackToPlainRequestsWhenNothingAnswers) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const PairRun r = run_pair({"--datapath", "xdp"},
                               {"--master-clock", "monotonic", "--warmup-us", "0", "--xdp-turn"});
    expect_synced(r, "xdp generic master, client --xdp-turn");
    const nlohmann::json& cj = r.client_json;
    EXPECT_NE(r.client.out.find("--xdp-turn: no answer to the first 8 requests"), std::string::npos)
        << r.client.out;
    EXPECT_EQ(cj["xdp"]["turned"], 8) << r.client.out;
    EXPECT_EQ(cj["turn_stamps"], 0);
    EXPECT_GE(cj["timeouts"].get<uint64_t>(), 8u);
    EXPECT_EQ(r.master_json["rx_packets"], cj["tx_packets"]) << r.master.out;
    expect_t4_from_the_hook(r);
}
