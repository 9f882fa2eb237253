// Two kvagg instances exporting to one real Redis Cluster, end to end on veth pairs in namespaces
// this test creates: A and B in a namespace each (as kvagg_shard_chaos_test.cpp's), three sharded
// clients in a third, where six redis-server processes run on the clients' end of A's pair. A is
// killed and restarted on its --state, a Redis primary killed (its replica takes over), every
// node stopped for 3 s, a field of one partition not an integer for 2 s (its deltas held apart),
// a Redis without cluster mode and no Redis at start. The sums in Redis, read with redis-cli,
// equal what the three clients sent. The scenario and its checks are redis_export_chaos_test.py;
// here the namespaces and the skips.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kvagg_driver.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

TEST(KvaggRedisExport, SumsInRedisExactThroughKillsFailoverAndPauses) {
    if (command_output("command -v redis-server >/dev/null && command -v redis-cli >/dev/null && "
                       "echo yes") != "yes\n")
        GTEST_SKIP() << "redis-server or redis-cli not installed (scripts/setup installs them)";
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs kva("kva"), kvb("kvb"), cl("cl");
    VethPair a(kva, cl), b(kvb, cl);
    // The addresses redis_export_chaos_test.py uses (shard_chaos_test.py's), inside the
    // namespaces: 10.213.N.1 on kvagg's end of pair N, 10.213.N.2 on the clients'.
    kva.run("ip addr add 10.213.0.1/24 dev " + a.app_if);
    cl.run("ip addr add 10.213.0.2/24 dev " + a.peer_if);
    kvb.run("ip addr add 10.213.1.1/24 dev " + b.app_if);
    cl.run("ip addr add 10.213.1.2/24 dev " + b.peer_if);
    // The cluster listens on 10.213.0.2 only: B reaches it over its own pair (the clients'
    // namespace holds both addresses, nothing is forwarded).
    kvb.run("ip route add 10.213.0.2/32 via 10.213.1.2 dev " + b.app_if);
    std::vector<std::string> argv =
        kvagg_driver_argv("redis_export_chaos_test.py", kva, cl, a.app_if);
    argv.insert(argv.end(), {"--kv-ns2", kvb.name(), "--kv-if2", b.app_if});
    const ProcessResult r = run_process(argv, {.timeout_s = 115});
    std::printf("%s", r.out.c_str());  // the clients' figures and the steps, for the log
    EXPECT_EQ(r.exit_status, 0);
    for (const char* line :
         {"bad input: non-cluster Redis at start: exit 2", "bad input: no Redis at start",
          "kvagg: A killed", "redis: primary", "redis: every node stopped",
          "redis: partition 3's field 2995 not an integer",
          "check: the sums in Redis (redis-cli) == sent for all", "kvagg JSON: backlog 0"})
        EXPECT_NE(r.out.find(line), std::string::npos) << line;
}
