// The client's figures, declared once (report.cpp): what each output gets from one declaration,
// and docs/metrics.md and docs/json.md held to the declaration itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "clocksync/report.hpp"
#include "support/doc_table.hpp"

namespace linerate::clocksync {
namespace {

using stats::FigureKind;

const char* metric_type(FigureKind k) {
    return k == FigureKind::total ? "counter" : k == FigureKind::gauge ? "gauge" : "histogram";
}

TEST(CsReport, EveryFigureIsInTheDocsWithItsType) {
    ClientSession session{ClientConfig{}};
    SyncedClock synced{LocalClock{}};
    const stats::FigureSet set = client_figures(session, synced);
    const auto metrics = test::doc_metric_table();
    std::ifstream in(test::source_file("docs/json.md"));
    const std::string json_doc((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    ASSERT_FALSE(json_doc.empty());
    for (const stats::Figure& f : set.figures) {
        if (!f.metric.empty()) {
            auto it = metrics.find(f.metric);
            ASSERT_NE(it, metrics.end()) << f.metric << " is not in docs/metrics.md";
            EXPECT_EQ(it->second.type, metric_type(f.kind)) << f.metric;
            // The cell's outer backticks are trimmed: "syncs", "epsilon_ns` (mean, ...".
            if (!f.json.empty()) {
                EXPECT_EQ(it->second.json.rfind(f.json, 0), 0u)
                    << f.metric << ": its JSON twin is `" << f.json << "`";
            }
        }
        if (!f.json.empty()) {
            EXPECT_NE(json_doc.find("`" + f.json + "`"), std::string::npos)
                << f.json << " is not in docs/json.md";
        }
    }
}

// Before the first sync: the JSON and telemetry keys of today's client, θ a string in telemetry,
// ε now left out of --metrics (not known) but in telemetry as the unbounded UINT64_MAX.
TEST(CsReport, EachOutputGetsItsOwnNamesAndForms) {
    ClientSession session{ClientConfig{}};
    SyncedClock synced{LocalClock{}};
    const stats::FigureSet set = client_figures(session, synced);
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
                  "linerate_clocksync_synced", "linerate_clocksync_theta_seconds",
                  "linerate_clocksync_epsilon_grid_seconds", "linerate_clocksync_rtt_seconds",
                  "linerate_clocksync_syncs_total", "linerate_clocksync_violations_total"}));
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
    const stats::FigureSet set = client_figures(session, synced);
    for (int i = 0; i < 1000; ++i) {
        const nlohmann::json t = stats::figures_telemetry(set, 1);
        const uint64_t local = t["local_ns"], master = t["master_ns"];
        ASSERT_EQ(master - local, 123456789u);
        ASSERT_EQ(uint64_t(t["epsilon_ns"]), s.state.epsilon_at(local));
        ASSERT_EQ(t["syncs"], 7u);
    }
}

}  // namespace
}  // namespace linerate::clocksync
