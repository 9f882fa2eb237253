// kvagg's service ops end to end on a veth pair (tests/support/netns.hpp): kvagg on
// net_af_packet or on net_af_xdp with the steering program in one namespace, C++ (kvagg_load)
// and Python clients with kernel UDP sockets in the other.
// The scenarios and their checks are in service_test.py (clients run concurrently there):
// several clients with 5 % simulated loss exact after status(), flush(reset) while sending,
// malformed requests dropped per reason, the word-count example, kvagg's exit and conservation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kvagg_driver.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

namespace {

// Runs service_test.py's scenarios against kvagg on one end of a fresh veth pair; `extra` picks
// the port (default net_af_packet).
void run_scenarios(const std::vector<std::string>& extra) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs kv("kv"), cl("cl");
    VethPair veth(kv, cl);
    // The addresses service_test.py uses (KV_IP, CLIENT_IP), inside the two namespaces only.
    kv.run("ip addr add 10.213.0.1/24 dev " + veth.app_if);
    cl.run("ip addr add 10.213.0.2/24 dev " + veth.peer_if);
    std::vector<std::string> argv = kvagg_driver_argv("service_test.py", kv, cl, veth.app_if);
    argv.insert(argv.end(), extra.begin(), extra.end());
    const ProcessResult r = run_process(argv, {.timeout_s = 240});
    if (r.exit_status == 77) {
        const size_t at = r.out.find("SKIP: ");
        GTEST_SKIP() << (at == std::string::npos ? r.out : r.out.substr(at + 6));
    }
    EXPECT_EQ(r.exit_status, 0) << r.out;
    // What the scenarios printed when they passed (the script exits non-zero otherwise).
    EXPECT_NE(r.out.find("exact\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("check: 13000 keys exact by read and flush"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("flushed + read after == sent"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("malformed: 9 requests unanswered"), std::string::npos) << r.out;
}

}  // namespace

TEST(KvaggService, OnAfPacket) {
    run_scenarios({});
}

// The steering program hands kvagg its UDP port only, so the kernel keeps answering ARP on the
// same interface and never sees the datagrams.
TEST(KvaggService, OnAfXdpWithSteering) {
    run_scenarios({"--xdp-prog", binary("bpf/steer.bpf.o")});
}
