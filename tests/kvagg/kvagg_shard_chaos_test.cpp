// Sharded clients against real kvagg instances, end to end on veth pairs in namespaces this test
// creates (tests/support/netns.hpp): three kvagg instances (--state each), a namespace and a
// veth pair each (shard_chaos_test.py says why not one namespace), three sharded clients (two
// Python, one C++ kvagg_load --endpoints) in a fourth. One instance is killed with SIGKILL and
// restarted, a third is added mid-run (then killed and restarted too), one is removed; the sharded
// read equals everything sent, key by key, the removed instance holds nothing. The scenario and its
// checks are shard_chaos_test.py.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "kvagg_driver.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

TEST(KvaggShardChaos, KillsAndAnAddedAndARemovedInstanceStayExact) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs kva("kva"), kvb("kvb"), kvc("kvc"), cl("cl");
    VethPair a(kva, cl), b(kvb, cl), c(kvc, cl);
    // The addresses shard_chaos_test.py uses, inside the namespaces only: 10.213.N.1 on kvagg's
    // end of pair N, 10.213.N.2 on the clients'.
    const std::pair<const NetNs*, const VethPair*> instances[] = {
        {&kva, &a}, {&kvb, &b}, {&kvc, &c}};
    for (int n = 0; n < 3; ++n) {
        const std::string net = "10.213." + std::to_string(n);
        instances[n].first->run("ip addr add " + net + ".1/24 dev " + instances[n].second->app_if);
        cl.run("ip addr add " + net + ".2/24 dev " + instances[n].second->peer_if);
    }
    std::vector<std::string> argv = kvagg_driver_argv("shard_chaos_test.py", kva, cl, a.app_if);
    argv.insert(argv.end(), {"--kv-ns2", kvb.name(), "--kv-ns3", kvc.name(), "--kv-if2", b.app_if,
                             "--kv-if3", c.app_if});
    const ProcessResult r = run_process(argv, {.timeout_s = 110});
    std::printf("%s", r.out.c_str());  // the clients' figures, for the log
    EXPECT_EQ(r.exit_status, 0);
    EXPECT_NE(r.out.find("chaos: B removed from the endpoints"), std::string::npos);
    EXPECT_NE(r.out.find("clients: every one held a down instance's share and went on"),
              std::string::npos);
    EXPECT_NE(r.out.find("check: sharded read == sent for all"), std::string::npos);
    EXPECT_NE(r.out.find("kvagg JSON: A + C aggregated_sum == sum sent, B empty"),
              std::string::npos)
        << r.out;
}
