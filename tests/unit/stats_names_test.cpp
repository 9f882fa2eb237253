// One list names a board's counters: the enum, the snake_case keys of the JSON and telemetry,
// the text of the summary; the board puts tx_full in front of the app's drop reasons.
#include <gtest/gtest.h>

#include <iterator>

#include "stats/counters.hpp"
#include "stats/names.hpp"
#include "stats/report.hpp"

namespace {

#define TEST_DROPS(X)                          \
    X(bad_thing, "bad thing", "extra ignored") \
    X(other, "other reason")
LINERATE_NAMES(TestDrop, kTestDrops, TEST_DROPS);
#define TEST_COUNTERS(X) X(widgets_seen, "widgets seen")
LINERATE_NAMES(TestCounter, kTestCounters, TEST_COUNTERS);

using namespace linerate::stats;

TEST(StatsNames, OneListMakesEnumKeysAndTexts) {
    static_assert(unsigned(TestDrop::bad_thing) == 0 && unsigned(TestDrop::other) == 1);
    ASSERT_EQ(std::size(kTestDrops), 2u);
    EXPECT_EQ(kTestDrops[0].key, "bad_thing");
    EXPECT_EQ(kTestDrops[0].text, "bad thing");
    EXPECT_EQ(kTestDrops[1].key, "other");
    EXPECT_EQ(kTestDrops[1].text, "other reason");
    EXPECT_EQ(drop_slot(TestDrop::bad_thing), 1u);
    EXPECT_EQ(drop_slot(TestDrop::other), 2u);
}

TEST(StatsNames, BoardAddsTxFullAndReportsKeysInJsonTextsInSummary) {
    StatsBoard board("test", 2, kTestDrops, kTestCounters);
    ASSERT_EQ(board.drop_reasons().size(), 3u);
    EXPECT_EQ(board.drop_reasons()[kTxFullSlot].key, "tx_full");
    board.worker(0).tx_full().add(3);
    board.worker(1).drop(TestDrop::other).add(5);
    board.worker(1).app[unsigned(TestCounter::widgets_seen)].add(7);
    board.worker(0).rx_packets.add(8);
    board.worker(1).rx_packets.add(5);

    const nlohmann::json j = final_json(board, 1.0, 0);
    EXPECT_EQ(j["drops"], nlohmann::json({{"tx_full", 3}, {"bad_thing", 0}, {"other", 5}}));
    EXPECT_EQ(j["dropped"], 8);
    EXPECT_EQ(j["widgets_seen"], 7);
    EXPECT_EQ(j["workers"][1]["drops"]["other"], 5);
    EXPECT_EQ(drops_json(board, board.totals()), j["drops"]);

    const std::string s = final_summary(board, 1.0, 0);
    EXPECT_NE(s.find("    tx full                  3\n"), std::string::npos) << s;
    EXPECT_NE(s.find("    other reason             5\n"), std::string::npos) << s;
    EXPECT_NE(s.find("  widgets seen               7\n"), std::string::npos) << s;
    EXPECT_EQ(s.find("bad_thing"), std::string::npos) << s;
}

}  // namespace
