// The lines for people rendered from figure declarations (stats/figures.hpp): the final
// summary's lines and the periodic stats line's part, exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "stats/figures.hpp"

namespace linerate::stats {
namespace {

std::function<FigureReading(unsigned)> reads(FigureReading r) {
    return [r](unsigned) { return r; };
}

// A set as an app declares it: a title, a first line, a second line, a histogram, figures in
// the JSON only or not known.
FigureSet example_set(const LogHistogram& rtt) {
    FigureSet set{"", "", {}};
    set.title = "app client";
    set.figures = {
        {.json = "syncs", .text = "syncs", .read_final = reads({uint64_t(3)})},
        {.json = "quiet"},  // no text: JSON only
        {.kind = FigureKind::gauge,
         .unit = FigureUnit::ns,
         .text = "theta",
         .line = "last sync",
         .read_final = reads({int64_t(-42)})},
        {.text = "rate", .read_final = reads({2.5})},
        {.text = "master", .read_final = reads({std::string("02:00:00:00:00:01")})},
        {.kind = FigureKind::gauge, .text = "synced", .read_final = reads({true})},
        {.text = "unknown", .read_final = reads({uint64_t(9), false})},
        {.kind = FigureKind::histogram,
         .unit = FigureUnit::ns,
         .text = "rtt",
         .json_stats = {HistStat::min, HistStat::p50, HistStat::mean, HistStat::count},
         .final_histogram = [rtt](unsigned) { return rtt; }},
    };
    return set;
}

TEST(FigureLines, SummaryGroupsTheItemsByLineInDeclarationOrder) {
    LogHistogram rtt;
    for (uint64_t v : {10, 20, 30}) rtt.record(v);
    EXPECT_EQ(figures_summary(example_set(rtt), 1),
              "app client: syncs 3, rate 2.500, master 02:00:00:00:00:01, synced yes\n"
              "  last sync: theta -42 ns\n"
              "  rtt ns: min 10 p50 20 mean 20.0 count 3");
}

TEST(FigureLines, SummaryLeavesOutEmptyHistogramsAndIndentsWithoutTitle) {
    FigureSet set = example_set(LogHistogram{});
    set.title.clear();
    EXPECT_EQ(figures_summary(set, 1),
              "  syncs 3, rate 2.500, master 02:00:00:00:00:01, synced yes\n"
              "  last sync: theta -42 ns");
    EXPECT_EQ(figures_summary(FigureSet{"", "", {{.json = "only_json"}}}, 1), "");
}

// The first line comes first wherever its figures are declared.
TEST(FigureLines, TheFirstLineLeads) {
    FigureSet set{"", "", {}};
    set.title = "t";
    set.figures = {
        {.text = "b1", .line = "b", .read_final = reads({uint64_t(1)})},
        {.text = "a", .read_final = reads({uint64_t(2)})},
        {.text = "b2", .line = "b", .read_final = reads({uint64_t(3)})},
    };
    EXPECT_EQ(figures_summary(set, 1), "t: a 2\n  b: b1 1, b2 3");
}

// Per worker: totals summed over the workers, gauges left out of the lines.
TEST(FigureLines, PerWorkerTotalsAreSummed) {
    FigureSet set{"", "", {}};
    set.figures = {
        {.text = "tuples",
         .per_worker = true,
         .read_final = [](unsigned w) { return FigureReading{uint64_t(10 + w)}; }},
        {.kind = FigureKind::gauge,
         .text = "keys",
         .per_worker = true,
         .read_final = reads({uint64_t(5)})},
    };
    EXPECT_EQ(figures_summary(set, 3), "  tuples 33");
}

// A total as its change since the previous line, a gauge as read; figures not marked
// `interval` stay out.
TEST(FigureLines, IntervalShowsTotalsAsChangesAndGaugesAsRead) {
    uint64_t program = 0, depth = 0;
    int takes = 0;
    FigureSet set{"", "", {}};
    set.title = "xdp";
    set.take_live = [&takes] { ++takes; };
    set.figures = {
        {.text = "program",
         .interval = true,
         .read_live = [&](unsigned) { return FigureReading{program}; }},
        {.kind = FigureKind::gauge,
         .unit = FigureUnit::ns,
         .text = "depth",
         .interval = true,
         .read_live = [&](unsigned) { return FigureReading{depth}; }},
        {.text = "summary only", .read_live = reads({uint64_t(7)})},
    };
    IntervalFigures lines;
    program = 100;
    depth = 4;
    EXPECT_EQ(lines.text(set, 1), " | xdp program 100 depth 4 ns");
    program = 130;
    depth = 2;
    EXPECT_EQ(lines.text(set, 1), " | xdp program 30 depth 2 ns");
    EXPECT_EQ(takes, 2);  // one snapshot per line
    set.title.clear();
    EXPECT_EQ(lines.text(set, 1), " | program 0 depth 2 ns");
    EXPECT_EQ(IntervalFigures().text(FigureSet{"", "", {{.text = "x"}}}, 1), "");
}

// Texts reach the JSON and telemetry as strings and never --metrics; a figure not known is
// left out of the JSON.
TEST(FigureLines, TextsAndUnknownFiguresInTheOtherOutputs) {
    FigureSet set{"/x", "", {}};
    set.figures = {
        {.kind = FigureKind::gauge,
         .json = "mac",
         .telemetry = "mac",
         .metric = "linerate_x_mac",
         .read_live = reads({std::string("m")}),
         .read_final = reads({std::string("m")})},
        {.json = "later", .read_final = reads({uint64_t(1), false})},
        {.json = "ratio",
         .telemetry = "ratio",
         .read_live = reads({0.5}),
         .read_final = reads({0.5})},
    };
    nlohmann::json j = {{"workers", nlohmann::json::array()}};
    add_figures_json(set, 1, j);
    EXPECT_EQ(j,
              nlohmann::json({{"workers", nlohmann::json::array()}, {"mac", "m"}, {"ratio", 0.5}}));
    EXPECT_EQ(figures_telemetry(set, 1), nlohmann::json({{"mac", "m"}, {"ratio", 0.5}}));
    Metrics m("x");
    add_figure_metrics(set, 1, m);
    EXPECT_TRUE(m.families().empty());
}

}  // namespace
}  // namespace linerate::stats
