// kvagg --state under SIGKILL, end to end on a veth pair in namespaces this test creates
// (tests/support/netns.hpp): 3 clients (2 Python, 1 C++) send while kvagg is killed 5 times
// (once in mid-checkpoint) and restarted with the same --state; one client flushes with reset
// half-way. Flushed + read equals everything sent, key by key; the JSON agrees. The scenario and
// its checks are state_chaos_test.py; here the namespaces and the two worker counts.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

namespace {

void run_chaos(unsigned workers, bool af_xdp = false) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs kv("kv"), cl("cl");
    // Two workers: a port each, so a stream stays on its worker (state_chaos_test.py says why).
    VethPair veth(kv, cl), veth2(kv, cl);
    // The addresses state_chaos_test.py uses (service_test.py's), inside the namespaces only.
    kv.run("ip addr add 10.213.0.1/24 dev " + veth.app_if);
    cl.run("ip addr add 10.213.0.2/24 dev " + veth.peer_if);
    kv.run("ip addr add 10.213.1.1/24 dev " + veth2.app_if);
    cl.run("ip addr add 10.213.1.2/24 dev " + veth2.peer_if);
    std::vector<std::string> argv = {
        "/usr/bin/env",
        "python3",
        std::string(LINERATE_SOURCE_DIR) + "/tests/kvagg/state_chaos_test.py",
        "run",
        "--kvagg",
        binary("apps/kvagg/kvagg"),
        "--load",
        binary("examples/kvagg_load"),
        "--kv-ns",
        kv.name(),
        "--cl-ns",
        cl.name(),
        "--kv-if",
        veth.app_if,
        "--kv-if2",
        veth2.app_if,
        "--workers",
        std::to_string(workers)};
    if (af_xdp) argv.push_back("--af-xdp");
    const ProcessResult r = run_process(argv, {.timeout_s = 170});
    std::printf("%s", r.out.c_str());  // the clients' and kills' figures, for the log
    EXPECT_EQ(r.exit_status, 0);
    EXPECT_NE(r.out.find("chaos: 5 SIGKILLs, one in mid-checkpoint"), std::string::npos);
    EXPECT_NE(r.out.find("check: flushed + read == sent for all"), std::string::npos);
    EXPECT_NE(r.out.find("kvagg JSON: aggregated_sum + flushed_sum == sum sent"), std::string::npos)
        << r.out;
    if (af_xdp) {
        // 6 starts, more when a kill meant for mid-checkpoint came after the rename.
        EXPECT_TRUE(std::regex_search(r.out, std::regex("af_xdp: all [0-9]+ starts steered")))
            << r.out;
    }
}

}  // namespace

TEST(KvaggStateChaos, OneWorker) {
    run_chaos(1);
}

TEST(KvaggStateChaos, TwoWorkers) {
    run_chaos(2);
}

// kvagg --af-xdp IFACE --state F (its steering program held through a BPF link): every SIGKILL is
// followed at once by the same command line, which starts every time (no program left on the
// interface), and the sums are exact.
TEST(KvaggStateChaos, AfXdpStartsAgainAtOnceAfterEachKill) {
    run_chaos(1, true);
}
