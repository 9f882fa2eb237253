// Master and client across a veth pair, each end in its own network namespace, both on AF_XDP
// (--af-xdp): the exchange crosses the kernel's veth and XDP path instead of a memif ring. The
// client is in verification mode (both ends read CLOCK_MONOTONIC_RAW), so every ε sample is
// checked against the true offset: 0 violations, and clean exits. Veths as `ip link add` makes
// them, --af-xdp and nothing else about XDP: the kernels on both ends keep answering ARP and ping
// on the same interfaces meanwhile (the steering program hands the apps their UDP port only).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

TEST(ClocksyncAfXdp, MasterAndClientAcrossAVethPairHaveNoViolations) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
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
    master.insert(master.end(), {"--role", "master", "--duration", "9", "--json", master_json});
    std::vector<std::string> client = app(client_lcore, client_prefix, veth.peer_if);
    // A generous probe timeout: a descheduled poller on the shared cores stretches a round trip
    // to tens of ms, which widens ε but must never break it.
    client.insert(client.end(),
                  {"--role", "client", "--duration", "6", "--sim-offset-ns", "5000000",
                   "--sim-drift-ppm", "8", "--probe-timeout-ms", "80", "--json", client_json});
    ProcessResult m, c;
    std::thread master_thread([&] { m = run_process(master_ns.wrap(master), {.timeout_s = 40}); });
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    std::thread client_thread([&] { c = run_process(client_ns.wrap(client), {.timeout_s = 40}); });
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // both apps are up
    const ShellResult ping = client_ns.try_run("ping -c 3 -i 0.2 -W 2 10.78.0.1");
    client_thread.join();
    master_thread.join();
    const nlohmann::json mj = read_json(master_json), cj = read_json(client_json);
    std::error_code ec;
    for (const std::string& prefix : {master_prefix, client_prefix})
        std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);

    EXPECT_EQ(ping.status, 0) << ping.out;
    EXPECT_NE(ping.out.find("3 received"), std::string::npos) << ping.out;
    ASSERT_EQ(c.exit_status, 0) << c.out;
    ASSERT_EQ(m.exit_status, 0) << m.out;
    ASSERT_TRUE(cj.is_object()) << c.out;
    std::printf("af_xdp: syncs %s violations %s timeouts %s epsilon_ns %s rtt_ns %s\n",
                cj["syncs"].dump().c_str(), cj["violations"].dump().c_str(),
                cj["timeouts"].dump().c_str(), cj["epsilon_ns"].dump().c_str(),
                cj["rtt_ns"].dump().c_str());
    EXPECT_GE(cj["syncs"].get<uint64_t>(), 20u) << c.out;
    EXPECT_EQ(cj["violations"], 0) << c.out;
    EXPECT_GT(cj["epsilon_samples"].get<uint64_t>(), 3000u);
    EXPECT_TRUE(cj["master_mac"].is_string()) << "master MAC not learned over the veth";
    EXPECT_EQ(cj["master_mac"], veth.app_mac);
    EXPECT_EQ(cj["mempool_in_use_at_exit"], 0) << c.out;
    EXPECT_EQ(mj["mempool_in_use_at_exit"], 0) << m.out;
    EXPECT_EQ(mj["timestamps"], "sw");
    // Every request the master answered came back or was lost: answers >= syncs.
    EXPECT_GE(mj["tx_packets"].get<uint64_t>(), cj["syncs"].get<uint64_t>());
}
