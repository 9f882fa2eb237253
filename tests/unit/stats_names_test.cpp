// One list names a board's counters: the enum (each value its board slot), the snake_case keys
// of the JSON and telemetry, the text of the summary; the runtime's names come first in every
// list, and a runtime feature's names are reported only when it is on.
#include <gtest/gtest.h>

#include <iterator>
#include <stdexcept>
#include <string_view>

#include "stats/counters.hpp"
#include "stats/names.hpp"
#include "stats/report.hpp"

namespace {

#define TEST_DROPS(X)                          \
    X(bad_thing, "bad thing", "extra ignored") \
    X(other, "other reason")
LINERATE_DROPS(TestDrop, kTestDrops, TEST_DROPS);
#define TEST_COUNTERS(X) X(widgets_seen, "widgets seen")
LINERATE_COUNTERS(TestCounter, kTestCounters, TEST_COUNTERS);
// A verdict enum over the first reason only: its drop value is the same slot.
#define TEST_VERDICT_DROPS(X) X(bad_thing, "bad thing")
LINERATE_VERDICTS(TestVerdict, TEST_VERDICT_DROPS);
LINERATE_SAME_SLOTS(TestVerdict, TestDrop, TEST_VERDICT_DROPS)

using namespace linerate::stats;

TEST(StatsNames, OneListMakesEnumKeysAndTextsAfterTheRuntimes) {
    static_assert(drop_slot(TestDrop::tx_full) == kTxFullSlot);
    static_assert(unsigned(TestDrop::exception_ring_full) == 1);
    static_assert(unsigned(TestDrop::bad_thing) == 2 && unsigned(TestDrop::other) == 3);
    static_assert(unsigned(TestVerdict::ok) == 3);
    ASSERT_EQ(std::size(kTestDrops), 4u);
    EXPECT_EQ(kTestDrops[0].key, "tx_full");
    EXPECT_EQ(kTestDrops[1].key, "exception_ring_full");
    EXPECT_EQ(kTestDrops[1].feature, kExceptionPathFeature);
    EXPECT_EQ(kTestDrops[2].key, "bad_thing");
    EXPECT_EQ(kTestDrops[2].text, "bad thing");
    EXPECT_EQ(kTestDrops[3].key, "other");
    EXPECT_EQ(kTestDrops[3].text, "other reason");
    EXPECT_EQ(drop_slot(TestDrop::other), 3u);
    EXPECT_EQ(drop_slot(TestVerdict::bad_thing), drop_slot(TestDrop::bad_thing));
    EXPECT_EQ(kTestCounters[2].key, "widgets_seen");
    EXPECT_EQ(unsigned(TestCounter::widgets_seen), 2u);
}

TEST(StatsNames, BoardReportsKeysInJsonTextsInSummaryAndHidesFeaturesThatAreOff) {
    StatsBoard board("test", 2, kTestDrops, kTestCounters);
    EXPECT_EQ(board.drop_reasons()[kTxFullSlot].key, "tx_full");
    EXPECT_EQ(board.drop_slot("exception_ring_full"), 1u);
    EXPECT_EQ(board.counter_slot("widgets_seen"), 2u);
    EXPECT_THROW(board.drop_slot("nothing"), std::logic_error);
    board.worker(0).tx_full().add(3);
    board.worker(1).drop(TestDrop::other).add(5);
    board.worker(1).app_counter(TestCounter::widgets_seen).add(7);
    board.worker(0).rx_packets.add(8);
    board.worker(1).rx_packets.add(5);

    const nlohmann::json j = final_json(board, 1.0, 0);
    EXPECT_EQ(j["drops"], nlohmann::json({{"tx_full", 3}, {"bad_thing", 0}, {"other", 5}}));
    EXPECT_EQ(j["dropped"], 8);
    EXPECT_EQ(j["widgets_seen"], 7);
    EXPECT_FALSE(j.contains("exception_to_kernel"));
    EXPECT_EQ(j["workers"][1]["drops"]["other"], 5);
    EXPECT_EQ(drops_json(board, board.totals()), j["drops"]);

    const std::string s = final_summary(board, 1.0, 0);
    EXPECT_NE(s.find("    tx full                  3\n"), std::string::npos) << s;
    EXPECT_NE(s.find("    other reason             5\n"), std::string::npos) << s;
    EXPECT_NE(s.find("  widgets seen               7\n"), std::string::npos) << s;
    EXPECT_EQ(s.find("bad_thing"), std::string::npos) << s;
    EXPECT_EQ(s.find("exception"), std::string::npos) << s;
}

TEST(StatsNames, AFeatureThatIsOnIsReported) {
    const std::string_view on[] = {kExceptionPathFeature};
    StatsBoard board("test", 1, kTestDrops, kTestCounters, on);
    board.worker(0).drop(RuntimeDrop::exception_ring_full).add(2);
    board.worker(0).app_counter(RuntimeCounter::exception_to_kernel).add(4);
    const nlohmann::json j = final_json(board, 1.0, 0);
    EXPECT_EQ(j["drops"]["exception_ring_full"], 2);
    EXPECT_EQ(j["exception_to_kernel"], 4);
    EXPECT_EQ(j["exception_from_kernel"], 0);
}

TEST(StatsNames, ABoardRefusesListsWithoutTheRuntimesNames) {
    static constexpr Name bare[] = {{"bad_thing", "bad thing"}};
    EXPECT_THROW(StatsBoard("test", 1, bare, kTestCounters), std::logic_error);
    EXPECT_THROW(StatsBoard("test", 1, kTestDrops, bare), std::logic_error);
    EXPECT_NO_THROW(StatsBoard("test", 1, kRuntimeDrops, kRuntimeCounters));
}

}  // namespace
