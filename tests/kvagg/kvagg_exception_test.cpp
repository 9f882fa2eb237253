// kvagg with --exception-path on a kernel-backed port: kvagg owns an af_packet port on a veth
// pair, the host stack owns an address on the TAP the exception path creates. The peer's ARP
// and ping reach the kernel through the TAP and its answers go back out the port, while the
// peer's UDP tuples (ordinary sockets, some sent twice) are aggregated exactly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

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

std::map<uint64_t, uint64_t> read_dump(const std::string& path) {
    std::map<uint64_t, uint64_t> sums;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream row(line);
        uint64_t key = 0, sum = 0;
        char comma = 0;
        if (row >> key >> comma >> sum && comma == ',') sums[key] = sum;
    }
    return sums;
}

}  // namespace

TEST(KvaggExceptionPath, KernelAnswersArpAndPingThroughTheTapWhileTuplesAggregateExactly) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs app("app"), peer("peer");
    VethPair veth(app, peer);
    peer.run("ip addr add 10.99.0.2/24 dev " + veth.peer_if);
    const std::string tap = "lrx" + std::to_string(getpid());
    const std::string json = scratch("exc.json"), dump = scratch("exc.csv"),
                      client = scratch("client.py");
    std::ofstream(client) << kClient;

    ProcessResult r;
    std::thread runner([&] {
        std::vector<std::string> argv = {binary("apps/kvagg/kvagg")};
        for (const std::string& a : no_huge_eal()) argv.push_back(a);
        argv.insert(argv.end(), {"--vdev=net_af_packet0,iface=" + veth.app_if, "--",
                                 "--exception-path", "tap:" + tap, "--duration", "12",
                                 "--stats-period", "0", "--json", json, "--dump", dump});
        r = run_process(app.wrap(argv), {.timeout_s = 90});
    });
    // The app creates the TAP during EAL start-up; the host side gives it the address.
    bool tap_up = false;
    for (int i = 0; i < 300 && !tap_up; ++i) {
        tap_up = app.try_run("ip link show " + tap).status == 0;
        if (!tap_up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ShellResult ping{}, sent{};
    if (tap_up) {
        // IPv6 off on the TAP too: the kernel sends nothing the test did not cause.
        app.run("sysctl -qw net.ipv6.conf." + tap +
                ".disable_ipv6=1; ip addr add 10.99.0.1/24 dev " + tap + " && ip link set " + tap +
                " up");
        // No static neighbour: the peer's kernel resolves 10.99.0.1 by ARP through the app.
        ping = peer.try_run("ping -c 3 -i 0.2 -W 3 10.99.0.1");
        sent = peer.try_run("python3 " + client + " 10.99.0.1");
    }
    runner.join();
    ASSERT_TRUE(tap_up) << "the TAP " << tap << " never appeared\n" << r.out;
    EXPECT_EQ(ping.status, 0) << ping.out << r.out;
    EXPECT_NE(ping.out.find("3 received"), std::string::npos) << ping.out;
    ASSERT_EQ(sent.status, 0) << sent.out;
    ASSERT_EQ(r.exit_status, 0) << r.out;

    std::map<uint64_t, uint64_t> expect;
    for (uint64_t seq = 0; seq < 20; ++seq)
        for (uint64_t k : {1, 2, 3}) expect[k] += 100 * k + seq;
    EXPECT_EQ(read_dump(dump), expect) << r.out;

    const nlohmann::json j = read_json(json);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["aggregated_packets"], 20u) << r.out;
    EXPECT_EQ(j["drops"]["duplicate"], 2u) << r.out;
    EXPECT_EQ(j["drops"]["not_kvagg"], 0u) << r.out;  // the kernel got them instead
    EXPECT_EQ(j["drops"]["exception_ring_full"], 0u) << r.out;
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
