// kvagg --export to a real Redis Cluster (six redis-server processes on the loopback of kvagg's
// namespace), end to end on a veth pair in namespaces this test creates: kvagg killed and
// restarted on its --state, a Redis primary killed (its replica takes over), every node stopped
// for 3 s, error replies on one partition, a Redis without cluster mode and no Redis at start.
// The sums in Redis, read with redis-cli, equal what three clients sent. The scenario and its
// checks are redis_export_chaos_test.py; here the namespaces and the skips.
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
    NetNs kv("kv"), cl("cl");
    VethPair veth(kv, cl);
    // The addresses redis_export_chaos_test.py uses (service_test.py's), inside the namespaces.
    kv.run("ip addr add 10.213.0.1/24 dev " + veth.app_if);
    cl.run("ip addr add 10.213.0.2/24 dev " + veth.peer_if);
    const ProcessResult r = run_process(
        kvagg_driver_argv("redis_export_chaos_test.py", kv, cl, veth.app_if), {.timeout_s = 115});
    std::printf("%s", r.out.c_str());  // the clients' figures and the steps, for the log
    EXPECT_EQ(r.exit_status, 0);
    for (const char* line :
         {"bad input: non-cluster Redis at start: exit 2", "bad input: no Redis at start",
          "redis: primary", "redis: every node stopped", "redis: partition 3 refused",
          "check: the sums in Redis (redis-cli) == sent for all", "kvagg JSON: backlog 0"})
        EXPECT_NE(r.out.find(line), std::string::npos) << line;
}
