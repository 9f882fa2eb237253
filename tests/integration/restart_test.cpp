// A crash leaves nothing that blocks the next start (issue 35): each app is started, waited for
// (": running"), killed with SIGKILL and reaped, and the same command line is started again at
// once; it must run, and do its work. On veth pairs in namespaces the test creates (root; skips
// otherwise):
//   - nfv and l2reflect on --af-xdp, on the DPDK and the XDP datapath: the XDP program goes with
//     the killed process (a BPF link), and the --metrics port binds again while a scrape's
//     connection, open at the kill, lingers on it;
//   - kvagg with --exception-path: the killed run's TAP goes with it, the new run's carries the
//     kernel's ARP and ping again;
//   - kvagg --af-xdp refusing a bad --state file (exit 2): the interface is free again;
//   - a net_memif server with socket-abstract=no: its socket file, left by the kill, is replaced
//     (and one a running server listens on is not).
// The EAL runtime directory of each --file-prefix is left by every kill and taken again.
// kvagg --af-xdp --state under 5 kills with exact sums is KvaggStateChaos.AfXdp*, clocksync's
// master and client (--export, --clockbound) ClocksyncRestart.*.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

namespace {

// The `ip link show` line of `iface` in `ns` when it has an XDP program, "" otherwise.
std::string xdp_on(const NetNs& ns, const std::string& iface) {
    const std::string out = ns.run("ip link show dev " + iface);
    return out.find("xdp") == std::string::npos ? "" : out;
}

// Starts `argv`, waits for "`app`: running", kills it with SIGKILL and reaps it (as a supervisor
// does before it starts the service again). Fails the test when it never got ready.
void start_and_kill(const std::vector<std::string>& argv, const std::string& app) {
    BackgroundProcess first(argv);
    ASSERT_TRUE(first.wait_for_output(app + ": running", 30)) << first.output();
    first.signal(SIGKILL);
    const ProcessResult killed = first.finish(10);
    ASSERT_EQ(killed.exit_status, 128 + SIGKILL) << killed.out;
}

// Ends a restarted run with SIGINT: exit 0.
void expect_clean_end(BackgroundProcess& p) {
    p.signal(SIGINT);
    const ProcessResult r = p.finish(30);
    EXPECT_EQ(r.exit_status, 0) << r.out;
}

struct AfXdpCase {
    std::string app;
    std::string datapath;
    friend void PrintTo(const AfXdpCase& c, std::ostream* os) { *os << c.app << "_" << c.datapath; }
};

class AfXdpRestart : public testing::TestWithParam<AfXdpCase> {};

}  // namespace

TEST_P(AfXdpRestart, SameCommandLineRunsRightAfterAKill) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const AfXdpCase& c = GetParam();
    NetNs app("rsx"), peer("rsxp");
    VethPair veth(app, peer);
    const std::string prefix = "lrrs" + std::to_string(getpid()) + c.app + c.datapath;
    const std::string metrics = "127.0.0.1:9111";  // the app namespace's own loopback
    std::vector<std::string> argv = eal_command(binary("apps/" + c.app + "/" + c.app), "0", prefix);
    argv.insert(argv.end(), {"--", "--af-xdp", veth.app_if, "--datapath", c.datapath,
                             "--stats-period", "0", "--metrics", metrics});
    const std::string scrape = "curl -sf http://" + metrics + "/metrics";
    // A scrape's connection open at the kill (answered, kept alive): the killed server's end of
    // it lingers on the port (FIN_WAIT2, or TIME_WAIT had the server closed it first), which a
    // bind without SO_REUSEADDR would fail on.
    const std::vector<std::string> scraper_argv = {
        "python3", "-c",
        "import socket, time; s = socket.create_connection(('127.0.0.1', 9111)); "
        "s.sendall(b'GET /metrics HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'); s.recv(1); "
        "print('answered', flush=True); time.sleep(60)"};
    {
        BackgroundProcess first(app.wrap(argv));
        ASSERT_TRUE(first.wait_for_output(c.app + ": running", 30)) << first.output();
        ASSERT_NE(xdp_on(app, veth.app_if), "");
        BackgroundProcess held(app.wrap(scraper_argv));
        ASSERT_TRUE(held.wait_for_output("answered", 10)) << held.output();
        first.signal(SIGKILL);
        ASSERT_EQ(first.finish(10).exit_status, 128 + SIGKILL);
        EXPECT_NE(app.run("ss -Htan '( sport = :9111 )'"), "") << "nothing lingers on the port";
    }
    EXPECT_EQ(xdp_on(app, veth.app_if), "") << "the killed app's XDP program stayed";
    EXPECT_TRUE(std::filesystem::exists("/var/run/dpdk/" + prefix + "/config"))
        << "the EAL's runtime files, left by the kill, are what the next start meets";

    BackgroundProcess again(app.wrap(argv));
    ASSERT_TRUE(again.wait_for_output(c.app + ": running", 30)) << again.output();
    const std::string program =
        c.datapath == "xdp" ? "xdp datapath on " + veth.app_if : "xdp steering on " + veth.app_if;
    EXPECT_NE(again.output().find(program), std::string::npos) << again.output();
    const ShellResult scraped = app.try_run(scrape);
    EXPECT_EQ(scraped.status, 0) << again.output();
    EXPECT_NE(scraped.out.find("linerate_uptime_seconds{app=\"" + c.app + "\"}"), std::string::npos)
        << scraped.out;
    expect_clean_end(again);
    EXPECT_EQ(xdp_on(app, veth.app_if), "");
    std::error_code ec;
    std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);
}

INSTANTIATE_TEST_SUITE_P(All, AfXdpRestart,
                         testing::Values(AfXdpCase{"nfv", "dpdk"}, AfXdpCase{"nfv", "xdp"},
                                         AfXdpCase{"l2reflect", "dpdk"},
                                         AfXdpCase{"l2reflect", "xdp"}),
                         [](const testing::TestParamInfo<AfXdpCase>& i) {
                             return i.param.app + "_" + i.param.datapath;
                         });

// kvagg --exception-path tap:NAME: the TAP is the killed process's (net_tap, not persistent) and
// goes with it; the next run makes it again, and the kernel answers ping through it.
TEST(Restart, KvaggExceptionPathTapComesBackAndCarriesPing) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs app("rse"), peer("rsep");
    VethPair veth(app, peer);
    peer.run("ip addr add 10.98.0.2/24 dev " + veth.peer_if);
    const std::string tap = "lrrs" + std::to_string(getpid());
    std::vector<std::string> argv = {binary("apps/kvagg/kvagg")};
    for (const std::string& a : no_huge_eal()) argv.push_back(a);
    argv.insert(argv.end(), {"--vdev=net_af_packet0,iface=" + veth.app_if, "--", "--exception-path",
                             "tap:" + tap, "--stats-period", "0"});
    start_and_kill(app.wrap(argv), "kvagg");
    EXPECT_NE(app.try_run("ip link show " + tap).status, 0) << "the killed run's TAP stayed";

    BackgroundProcess again(app.wrap(argv));
    ASSERT_TRUE(again.wait_for_output("kvagg: running", 30)) << again.output();
    app.run("ip addr add 10.98.0.1/24 dev " + tap + " && ip link set " + tap + " up");
    const ShellResult ping = peer.try_run("ping -c 2 -i 0.2 -W 3 10.98.0.1");
    EXPECT_EQ(ping.status, 0) << ping.out << again.output();
    EXPECT_NE(ping.out.find("2 received"), std::string::npos) << ping.out;
    expect_clean_end(again);
}

// A net_memif server on a socket file (socket-abstract=no): the kill leaves the file, and the
// same command line replaces it (DPDK alone fails: "Address already in use"). A file a running
// server listens on stays that server's: a second one is refused.
TEST(Restart, MemifServerReplacesTheSocketFileAKilledServerLeft) {
    const std::string sock = scratch("memif.sock");
    const auto argv = [&](const std::string& prefix) {
        std::vector<std::string> a = eal_command(binary("apps/l2reflect/l2reflect"), "0", prefix);
        a.insert(a.end(), {"--vdev=net_memif0,role=server,socket-abstract=no,socket=" + sock, "--",
                           "--link-wait", "0", "--stats-period", "0"});
        return a;
    };
    const std::string prefix = "lrrsm" + std::to_string(getpid());
    start_and_kill(argv(prefix), "l2reflect");
    struct stat st {};
    ASSERT_EQ(stat(sock.c_str(), &st), 0) << "the kill left no socket file: nothing to test";
    EXPECT_TRUE(S_ISSOCK(st.st_mode));

    BackgroundProcess again(argv(prefix));
    ASSERT_TRUE(again.wait_for_output("l2reflect: running", 30)) << again.output();
    const ProcessResult second = run_process(argv(prefix + "b"), {.timeout_s = 30});
    EXPECT_NE(second.exit_status, 0) << second.out;
    EXPECT_NE(second.out.find("Address already in use"), std::string::npos) << second.out;
    EXPECT_FALSE(again.wait_exit(0.2)) << again.output();
    expect_clean_end(again);
    std::error_code ec;
    for (const std::string& p : {prefix, prefix + "b"})
        std::filesystem::remove_all("/var/run/dpdk/" + p, ec);
}

// kvagg --af-xdp --state FILE refusing a bad state file (exit 2) leaves the interface free: the
// steering program, attached by then, goes with the process, and the next start takes it.
TEST(Restart, KvaggRefusingABadStateFileLeavesTheInterfaceFree) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs app("rsb"), peer("rsbp");
    VethPair veth(app, peer);
    const std::string state = scratch("bad.state");
    std::ofstream(state) << "not a state file\n";
    const std::vector<std::string> argv = {
        binary("apps/kvagg/kvagg"), "--af-xdp", veth.app_if, "--state", state,
        "--stats-period",           "0"};
    const ProcessResult refused = run_process(app.wrap(argv), {.timeout_s = 30});
    EXPECT_EQ(refused.exit_status, 2) << refused.out;
    EXPECT_NE(refused.out.find("not a kvagg state file"), std::string::npos) << refused.out;
    EXPECT_EQ(xdp_on(app, veth.app_if), "") << "the refused run's XDP program stayed";
    std::filesystem::remove(state);  // the operator's fix: start empty
    BackgroundProcess again(app.wrap(argv));
    ASSERT_TRUE(again.wait_for_output("kvagg: running", 30)) << again.output();
    expect_clean_end(again);
}
