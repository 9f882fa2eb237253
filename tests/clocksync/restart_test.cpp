// clocksync after a SIGKILL (issue 35): master and client on --af-xdp across a veth pair in
// namespaces the test creates (root; skips otherwise), the client exporting its time
// (--export) and feeding a ClockBound segment (--clockbound). Once they are synchronized, both
// are killed; the client is started again at once with the same command line while the master
// is still down, and the figures it reports must be right from its first word: the segment says
// Unknown (not the killed run's Synchronized), the export is not valid and names the new writer.
// Then the master's same command line starts, and the client synchronizes through it again.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "linerate/truetime.h"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

namespace {

// ClockBound's protocol 2 (docs/PROTOCOL.md): the generation at byte 14 (odd while written),
// clock_status at 16 + 52 (0 Unknown, 1 Synchronized, 2 FreeRunning).
constexpr int kUnknown = 0, kSynchronized = 1;

// The status the segment at `path` says, none while it cannot be read (no file yet, a write
// under way).
std::optional<int32_t> clockbound_status(const std::string& path) {
    char segment[80];
    std::ifstream f(path, std::ios::binary);
    if (!f.read(segment, sizeof segment)) return std::nullopt;
    uint16_t generation = 0;
    int32_t status = 0;
    std::memcpy(&generation, segment + 14, sizeof generation);
    std::memcpy(&status, segment + 16 + 52, sizeof status);
    if (generation == 0 || generation % 2 != 0) return std::nullopt;
    return status;
}

// The export page's mapping and writer (linerate/truetime.h); none when it cannot be opened.
struct ExportReading {
    int rc;  // tt_load_mapping's
    bool valid;
    uint32_t writer_pid;
};
std::optional<ExportReading> read_export(const std::string& name) {
    tt_clock clk{};
    if (tt_open(&clk, name.c_str()) != TT_OK) return std::nullopt;
    tt_mapping m{};
    const int rc = tt_load_mapping(clk.page, &m);
    ExportReading r{rc, rc == TT_OK && m.valid == 1, clk.page->writer_pid};
    tt_close(&clk);
    return r;
}

// Polls `ready` every 20 ms for up to `timeout_s`.
template <class Ready>
bool wait_until(Ready ready, double timeout_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
        if (ready()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ready();
}

void kill_and_reap(BackgroundProcess& p) {
    p.signal(SIGKILL);
    EXPECT_EQ(p.finish(10).exit_status, 128 + SIGKILL);
}

}  // namespace

TEST(ClocksyncRestart, ClientAndMasterStartAgainWithTheRightStatusAfterAKill) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs master_ns("csrm"), client_ns("csrc");
    VethPair veth(master_ns, client_ns);
    master_ns.run("ip addr add 10.79.0.1/24 dev " + veth.app_if);
    client_ns.run("ip addr add 10.79.0.2/24 dev " + veth.peer_if);
    const std::string id = std::to_string(getpid());
    const std::string page = "lrrs" + id, segment = scratch("cb") + "/shm0";
    const std::string app = binary("apps/clocksync/clocksync");
    const std::string client_lcore = std::thread::hardware_concurrency() > 1 ? "1" : "0";
    std::vector<std::string> master = eal_command(app, "0", "csrm" + id);
    master.insert(master.end(), {"--", "--af-xdp", veth.app_if, "--stats-period", "0", "--role",
                                 "master", "--sw-clock", "realtime"});
    std::vector<std::string> client = eal_command(app, client_lcore, "csrc" + id);
    client.insert(client.end(), {"--", "--af-xdp", veth.peer_if, "--stats-period", "0", "--role",
                                 "client", "--master-clock", "realtime", "--probe-timeout-ms", "80",
                                 "--export", page, "--clockbound", segment});
    const auto synchronized = [&] {
        const std::optional<ExportReading> e = read_export(page);
        return clockbound_status(segment) == kSynchronized && e && e->valid;
    };
    {
        BackgroundProcess m(master_ns.wrap(master));
        ASSERT_TRUE(m.wait_for_output("clocksync: running", 30)) << m.output();
        BackgroundProcess c(client_ns.wrap(client));
        ASSERT_TRUE(c.wait_for_output("clocksync: running", 30)) << c.output();
        ASSERT_TRUE(wait_until(synchronized, 20)) << c.output();
        kill_and_reap(c);
        kill_and_reap(m);
    }
    // What the killed client left: its last word, Synchronized and valid.
    ASSERT_TRUE(synchronized());

    BackgroundProcess c(client_ns.wrap(client));
    ASSERT_TRUE(c.wait_for_output("clocksync: running", 30)) << c.output();
    EXPECT_EQ(clockbound_status(segment), kUnknown) << c.output();
    const std::optional<ExportReading> e = read_export(page);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->rc, TT_OK);
    EXPECT_FALSE(e->valid);
    EXPECT_EQ(e->writer_pid, uint32_t(c.pid()));

    BackgroundProcess m(master_ns.wrap(master));
    ASSERT_TRUE(m.wait_for_output("clocksync: running", 30)) << m.output();
    EXPECT_TRUE(wait_until(synchronized, 20)) << c.output();
    for (BackgroundProcess* p : {&c, &m}) {
        p->signal(SIGINT);
        const ProcessResult r = p->finish(30);
        EXPECT_EQ(r.exit_status, 0) << r.out;
    }
    shm_unlink(("/" + page).c_str());
    std::error_code ec;
    for (const std::string& prefix : {"csrm" + id, "csrc" + id})
        std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);
}
