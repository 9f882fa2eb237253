// The client's figures, declared once (report.cpp): what each output gets from one declaration,
// and docs/metrics.md and docs/json.md held to the declaration itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "clocksync/report.hpp"
#include "support/figure_docs.hpp"

namespace linerate::clocksync {
namespace {

TEST(CsReport, EveryFigureIsInTheDocsWithItsType) {
    ClientSession session{ClientConfig{}};
    SyncedClock synced{LocalClock{}};
    const ClientReport report;
    test::expect_figures_documented(client_figures(session, synced, report));
}

// Before the first sync: the JSON and telemetry keys of today's client, θ a string in telemetry,
// ε now left out of --metrics (not known) but in telemetry as the unbounded UINT64_MAX.
TEST(CsReport, EachOutputGetsItsOwnNamesAndForms) {
    ClientSession session{ClientConfig{}};
    SyncedClock synced{LocalClock{}};
    const ClientReport report;
    const stats::FigureSet set = client_figures(session, synced, report);
    nlohmann::json j = {{"workers", nlohmann::json::array()}};
    stats::add_figures_json(set, 1, j);
    EXPECT_EQ(j["syncs"], 0u);
    EXPECT_EQ(j["violations"], 0u);
    EXPECT_EQ(j["synced"], false);
    EXPECT_EQ(j["theta_ns"], 0);
    EXPECT_EQ(j["delta_ns"], 0u);
    EXPECT_EQ(j["epsilon_ns"],
              nlohmann::json({{"mean", 0.0}, {"p50", 0}, {"p99", 0}, {"p999", 0}, {"max", 0}}));
    EXPECT_EQ(j["rtt_ns"], nlohmann::json({{"min", 0}, {"p50", 0}, {"p99", 0}}));
    EXPECT_FALSE(j.contains("eps0_ns"));  // telemetry only
    EXPECT_EQ(j["rounds"], 0u);
    EXPECT_FALSE(j.contains("first_sync"));        // add_client_json writes null before a sync
    EXPECT_FALSE(j.contains("max_abs_error_ns"));  // verification only

    const nlohmann::json t = stats::figures_telemetry(set, 1);
    EXPECT_EQ(t["synced"], 0u);
    EXPECT_EQ(t["theta_ns"], "0");
    EXPECT_EQ(t["epsilon_ns"], UINT64_MAX);
    EXPECT_EQ(t["syncs"], 0u);
    EXPECT_EQ(t.size(), 9u);  // synced theta delta eps0 epsilon local master syncs violations

    stats::Metrics m("clocksync");
    stats::add_figure_metrics(set, 1, m);
    std::vector<std::string> names;
    for (const auto& f : m.families()) names.push_back(f.name);
    EXPECT_EQ(names,
              (std::vector<std::string>{
                  "linerate_clocksync_syncs_total", "linerate_clocksync_epsilon_grid_seconds",
                  "linerate_clocksync_rtt_seconds", "linerate_clocksync_synced",
                  "linerate_clocksync_theta_seconds", "linerate_clocksync_violations_total"}));
}

// One telemetry reply reads one snapshot (FigureSet::take_live): its master time is its local
// time plus its θ, to the nanosecond, and its ε is the one at that local time, as when one
// function wrote the reply from one reading.
TEST(CsReport, ATelemetryReplyIsOneReadingOfTheClock) {
    ClientSession session{ClientConfig{}};
    SyncedClock synced{LocalClock{}};
    SyncSnapshot s;
    s.state = {.synced = true,
               .theta_ns = 123456789,
               .delta_ns = 800,
               .eps0_ns = 450,
               .t1 = 1,
               .t4 = 2,
               .rho_ppb = 10000};
    s.syncs = 7;
    synced.publish(s);
    const ClientReport report;
    const stats::FigureSet set = client_figures(session, synced, report);
    for (int i = 0; i < 1000; ++i) {
        const nlohmann::json t = stats::figures_telemetry(set, 1);
        const uint64_t local = t["local_ns"], master = t["master_ns"];
        ASSERT_EQ(master - local, 123456789u);
        ASSERT_EQ(uint64_t(t["epsilon_ns"]), s.state.epsilon_at(local));
        ASSERT_EQ(t["syncs"], 7u);
    }
}

// The summary from the same declarations: its first line, warm-ups and first sync while they
// mean something, the histograms once they have samples, the last sync once synced, the
// verification line in verification mode.
TEST(CsReport, SummaryLines) {
    ClientSession session{ClientConfig{}};
    SyncedClock synced{LocalClock{}};
    ClientReport report;
    report.summary.rounds = 4;
    report.summary.probes_sent = 9;
    report.summary.responses = 8;
    report.summary.timeouts = 1;
    const stats::FigureSet set = client_figures(session, synced, report);
    EXPECT_EQ(stats::figures_summary(set, 1),
              "clocksync client: syncs 0, rounds 4, rounds kept 0, probes 9, responses 8, "
              "timeouts 1, epsilon samples 0, master not learned");
    report.master_mac = pkt::MacAddr{{2, 0, 0, 0, 0, 1}};
    report.summary.syncs = 1;  // what the first-sync line waits for
    report.summary.warmups_sent = 2;
    report.summary.warmup_echoes = 2;
    report.summary.first_sync_after_ns = 1500000;
    report.summary.first_sync_epsilon_ns = 700;
    report.summary.max_abs_error_ns = -12;
    report.verification = true;
    EXPECT_EQ(stats::figures_summary(set, 1),
              "clocksync client: syncs 0, rounds 4, rounds kept 0, probes 9, responses 8, "
              "timeouts 1, epsilon samples 0, master 02:00:00:00:00:01\n"
              "  warm-ups: sent 2, echoed 2\n"
              "  first sync: after 1500000 ns, epsilon 700 ns\n"
              "  verification: violations 0, max |true offset - theta| -12 ns");
}

// What `systemctl status` (STATUS=) and the stats line say of the client, as `chronyc tracking`
// would: synchronized with ε now, θ and the sync's age while the last sync is at most the
// export's max age old; not synchronized past it (ε still given, growing), or before any sync.
TEST(CsReport, StatusSaysSynchronizedOrNotWithEpsilon) {
    SyncState s;
    const uint32_t master = 0x0A000001;  // 10.0.0.1
    EXPECT_EQ(client_status(s, 5'000'000'000, 1'000'000'000, master),
              "not synchronized: no sync from 10.0.0.1 yet");
    s.synced = true;
    s.theta_ns = -40;
    s.eps0_ns = 1'200;
    s.t1 = 999'990'000;
    s.t4 = 1'000'000'000;
    EXPECT_EQ(client_status(s, 1'100'000'000, 1'000'000'000, master),
              "synchronized, ε 1.2 µs, θ -40 ns, last sync 0.1 s ago");
    s.rho_ppb = 10'000;  // 10 ppm: 3.2 s later, 32 µs more
    EXPECT_EQ(client_status(s, 4'200'000'000, 1'000'000'000, master),
              "not synchronized: no sync from 10.0.0.1 for 3.2 s, ε 33.2 µs");
    s.theta_ns = 2'500'000'000;
    EXPECT_EQ(client_status(s, 1'000'000'000, 1'000'000'000, master),
              "synchronized, ε 1.2 µs, θ 2.5 s, last sync 0.0 s ago");
}

}  // namespace
}  // namespace linerate::clocksync
