// kvagg's figures, declared once (kvagg/figures.hpp): the final JSON and the summary line from
// one declaration, and docs/json.md and docs/metrics.md held to it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kvagg/figures.hpp"
#include "support/figure_docs.hpp"

namespace linerate::kvagg {
namespace {

// Two workers' sources: the run's totals, each kernel's sums and window, each table's keys;
// --state and --export when asked.
struct Sources {
    RunFigures run;
    ControlCounters control;
    WorkerLink links[2];
    std::vector<uint64_t> table_keys = {4, 3};
    StateCounters state;
    std::string state_path = "kv.state";
    uint64_t loaded = 5;
    ExportCounters exports;

    FigureSources get(bool with_state, bool with_export) const {
        FigureSources s{
            .run = run,
            .control = control,
            .links = links,
            .kernel =
                [](unsigned w) {
                    KvCounters c;
                    c.overflow_sum = 10 + w;
                    c.value_sum = 100 * (w + 1);
                    return c;
                },
            .gaps = [](unsigned w) { return SeqGaps{.opened = 2 + w, .filled = 1}; },
            .table_keys = &table_keys,
        };
        if (with_state) {
            s.state = &state;
            s.state_path = &state_path;
            s.loaded_checkpoint = &loaded;
        }
        if (with_export) s.exports = &exports;
        return s;
    }
};

TEST(KvaggFigures, EveryFigureIsInTheDocs) {
    Sources src;
    test::expect_figures_documented(kvagg_figures(src.get(true, true)));
}

// The run's totals at the top of the JSON and in the summary line; per worker its kernel's sums,
// its window's gaps and its table's keys; --state's object.
TEST(KvaggFigures, JsonAndSummaryFromTheRun) {
    Sources src;
    src.run.totals.tuples_aggregated = 90;
    src.run.totals.by_verdict[size_t(KvVerdict::table_full)] = 10;
    src.run.totals.by_verdict[size_t(KvVerdict::duplicate)] = 3;
    src.run.totals.by_verdict[size_t(KvVerdict::stale)] = 2;
    src.run.totals.overflow_sum = 44;
    src.run.keys = 7;
    src.run.aggregated_sum = 1000;
    src.run.gaps = {.opened = 5, .filled = 2};
    src.run.seconds = 2;
    src.state.checkpoints = 6;
    const stats::FigureSet set = kvagg_figures(src.get(true, false));
    nlohmann::json j = {
        {"workers", nlohmann::json::array({nlohmann::json::object(), nlohmann::json::object()})}};
    stats::add_figures_json(set, 2, j);
    EXPECT_EQ(j["tuples"], 100);
    EXPECT_EQ(j["overflow"], 10);
    EXPECT_EQ(j["overflow_sum"], 44);
    EXPECT_EQ(j["keys"], 7);
    EXPECT_EQ(j["duplicates"], 3);
    EXPECT_EQ(j["stale"], 2);
    EXPECT_EQ(j["gaps_opened"], 5);
    EXPECT_EQ(j["gaps_filled"], 2);
    EXPECT_EQ(j["aggregated_sum"], 1000);
    EXPECT_DOUBLE_EQ(j["mtuples_per_s"].get<double>(), 100 / 2.0 / 1e6);
    EXPECT_EQ(j["workers"][1], nlohmann::json({{"keys", 3},
                                               {"gaps_opened", 3},
                                               {"gaps_filled", 1},
                                               {"overflow_sum", 11},
                                               {"aggregated_sum", 200}}));
    EXPECT_EQ(j["state"]["path"], "kv.state");
    EXPECT_EQ(j["state"]["loaded_checkpoint"], 5);
    EXPECT_EQ(j["state"]["checkpoints"], 6);
    EXPECT_EQ(j["state"].size(), 10u);
    EXPECT_FALSE(j.contains("export"));
    EXPECT_EQ(stats::figures_summary(set, 2),
              "  tuples 100, Mtuples/s 0.000, keys 7, overflow 10, overflow sum 44, aggregated "
              "sum 1000, duplicates 3");
}

// A shared table: the JSON has the total keys only, no per-worker ones.
TEST(KvaggFigures, SharedTableHasNoPerWorkerKeys) {
    Sources src;
    FigureSources s = src.get(false, false);
    s.table_keys = nullptr;
    nlohmann::json j = {{"workers", nlohmann::json::array({nlohmann::json::object()})}};
    stats::add_figures_json(kvagg_figures(s), 1, j);
    EXPECT_FALSE(j["workers"][0].contains("keys"));
    EXPECT_FALSE(j.contains("state"));
}

}  // namespace
}  // namespace linerate::kvagg
