// The clocksync master sharing its port with the host's stack (--exception-path), as kvagg and
// nfv do: the master takes a whole veth end on net_af_packet, the host owns the address on the
// TAP the master creates, and the peer's kernel resolves and pings that address through the
// master while a clocksync client in the peer namespace (on --af-xdp, so the peer's kernel keeps
// its own interface) syncs against the master. The master's loop has no exception-path code of
// its own: the runtime's RX step (lib/runtime/rx_step.hpp) hands what is not clocksync's to the
// kernel.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

namespace {

// Waits up to 60 s for interface `name` in `ns` (the app creates it during its EAL start-up).
bool wait_for_interface(NetNs& ns, const std::string& name) {
    for (int i = 0; i < 1200; ++i) {
        if (ns.try_run("ip link show " + name).status == 0) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

}  // namespace

TEST(ClocksyncExceptionPath, KernelAnswersPingThroughTheMastersPortWhileTheClientSyncs) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs master_ns("cem"), client_ns("cec");
    VethPair veth(master_ns, client_ns);
    client_ns.run("ip addr add 10.77.0.2/24 dev " + veth.peer_if);
    const std::string id = std::to_string(getpid());
    const std::string tap = "lrc" + id, master_prefix = "csem" + id, client_prefix = "csec" + id;
    const std::string master_json = scratch("exc_master.json"),
                      client_json = scratch("exc_client.json");
    const std::string client_lcore = std::thread::hardware_concurrency() > 1 ? "1" : "0";

    std::vector<std::string> master =
        eal_command(binary("apps/clocksync/clocksync"), "0", master_prefix);
    master.insert(master.end(),
                  {"--vdev=net_af_packet0,iface=" + veth.app_if, "--", "master", "--exception-path",
                   "tap:" + tap, "--stats-period", "0", "--json", master_json});
    std::vector<std::string> client =
        eal_command(binary("apps/clocksync/clocksync"), client_lcore, client_prefix);
    client.insert(client.end(),
                  {"--", "client", "--af-xdp", veth.peer_if, "--master-ip", "10.77.0.1",
                   "--client-ip", "10.77.0.2", "--duration", "5", "--sim-offset-ns", "5000000",
                   "--probe-timeout-ms", "80", "--stats-period", "0", "--json", client_json});
    // No fixed run time for the master: SIGINT once the client has ended.
    ProcessResult m, c;
    BackgroundProcess master_run(master_ns.wrap(master));
    const bool tap_up = wait_for_interface(master_ns, tap);
    ShellResult ping{};
    if (tap_up) {
        master_ns.run("ip addr add 10.77.0.1/24 dev " + tap + " && ip link set " + tap + " up");
        std::thread client_thread(
            [&] { c = run_process(client_ns.wrap(client), {.timeout_s = 60}); });
        // No static neighbour: the peer's kernel resolves 10.77.0.1 by ARP through the master.
        ping = client_ns.try_run("ping -c 3 -i 0.2 -W 3 10.77.0.1");
        client_thread.join();
    }
    master_run.signal(SIGINT);
    m = master_run.finish(30);
    std::error_code ec;
    for (const std::string& prefix : {master_prefix, client_prefix})
        std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);
    ASSERT_TRUE(tap_up) << "the TAP " << tap << " never appeared\n" << m.out;
    EXPECT_EQ(ping.status, 0) << ping.out << m.out;
    EXPECT_NE(ping.out.find("3 received"), std::string::npos) << ping.out;
    ASSERT_EQ(m.exit_status, 0) << m.out;
    ASSERT_EQ(c.exit_status, 0) << c.out;

    const nlohmann::json mj = read_json(master_json), cj = read_json(client_json);
    ASSERT_TRUE(mj.is_object() && cj.is_object()) << m.out << c.out;
    EXPECT_GE(cj["syncs"].get<uint64_t>(), 10u) << c.out;
    EXPECT_EQ(cj["violations"], 0) << c.out;
    EXPECT_EQ(mj["drops"]["not_clocksync"], 0u) << "the kernel got them instead\n" << m.out;
    EXPECT_EQ(mj["drops"]["exception_ring_full"], 0u) << m.out;
    // At least the peer's ARP request and 3 echo requests went in, an ARP reply and 3 echo
    // replies came out.
    const uint64_t to_kernel = mj["exception_to_kernel"], from_kernel = mj["exception_from_kernel"];
    EXPECT_GE(to_kernel, 4u) << m.out;
    EXPECT_GE(from_kernel, 4u) << m.out;
    // Conservation: every frame received was answered (tx_packets counts answers only; the
    // kernel's frames are exception_from_kernel), dropped by reason (a full TX ring included),
    // or handed over.
    EXPECT_EQ(mj["rx_packets"].get<uint64_t>(),
              mj["tx_packets"].get<uint64_t>() + mj["dropped"].get<uint64_t>() + to_kernel)
        << mj.dump(2);
    const nlohmann::json& e = mj["exception_path"];
    EXPECT_EQ(e["sent_to_tap"].get<uint64_t>() + e["tap_tx_full"].get<uint64_t>() +
                  e["left_at_stop"].get<uint64_t>(),
              to_kernel)
        << m.out;
    EXPECT_EQ(mj["mempool_in_use_at_exit"], 0u) << m.out;
    EXPECT_EQ(cj["mempool_in_use_at_exit"], 0u) << c.out;
}
