// linerate-tt against a page written in this process by the client's writer (TimeExport).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "clocksync/time_export.hpp"
#include "linerate/truetime.h"
#include "support/process.hpp"

using namespace linerate::clocksync;
using namespace linerate::test;

TEST(LinerateTt, PrintsTheIntervalAndRefusesInvalidPages) {
    const std::string tt = binary("apps/clocksync/linerate-tt");
    const std::string name = "lrtt_cli_" + std::to_string(getpid());
    struct Unlink {
        std::string path;
        ~Unlink() { shm_unlink(path.c_str()); }
    } unlink_page{"/" + name};
    ProcessResult r = run_process({tt, "--name", name});
    EXPECT_EQ(r.exit_status, 1) << r.out;
    EXPECT_NE(r.out.find("no such time page"), std::string::npos) << r.out;

    TimeExport page(name, 60'000'000'000, std::nullopt);
    r = run_process({tt, "--name", name});
    EXPECT_EQ(r.exit_status, 1) << r.out;
    EXPECT_NE(r.out.find("not synchronized"), std::string::npos) << r.out;

    SyncState s;
    s.synced = true;
    s.theta_ns = 1'000'000;
    s.eps0_ns = 503;
    s.t4 = tt_raw_ns();
    s.t1 = s.t4 - 1000;
    s.rho_ppb = 10'000;
    page.publish(s, 5, s.t4);
    const uint64_t before = tt_raw_ns();
    r = run_process({tt, "--name", name, "--json", "--watch", "--period-ms", "1", "--count", "3"});
    const uint64_t after = tt_raw_ns();
    ASSERT_EQ(r.exit_status, 0) << r.out;
    size_t lines = 0;
    for (size_t at = 0; (at = r.out.find('{', at)) != std::string::npos; ++lines) {
        const auto j = nlohmann::json::parse(r.out.substr(at, r.out.find('\n', at) - at));
        at = r.out.find('\n', at);
        const uint64_t master = j["master_ns"], eps = j["epsilon_ns"];
        EXPECT_GE(master, before + 1'000'000) << j;
        EXPECT_LE(master, after + 1'000'000) << j;
        EXPECT_GE(eps, 503u) << j;
        EXPECT_EQ(j["earliest_ns"].get<uint64_t>(), master - eps);
        EXPECT_EQ(j["latest_ns"].get<uint64_t>(), master + eps);
        EXPECT_EQ(j["syncs"], 5);
    }
    EXPECT_EQ(lines, 3u) << r.out;

    page.invalidate(s.t4);
    r = run_process({tt, "--name", name});
    EXPECT_EQ(r.exit_status, 1) << r.out;
    EXPECT_EQ(run_process({tt, "--period-ms", "0"}).exit_status, 2);
    EXPECT_EQ(run_process({tt, "--help"}).exit_status, 0);
}
