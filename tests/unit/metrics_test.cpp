// The --metrics endpoint's pieces without the EAL: the address it takes, the board's figures as
// per-worker samples, labelled as docs/metrics.md says.
#include <gtest/gtest.h>

#include <stdexcept>

#include "runtime/metrics.hpp"
#include "stats/board_metrics.hpp"

namespace {

using namespace linerate;
using namespace linerate::stats;

#define TEST_DROPS(X) X(bad_thing, "bad thing")
LINERATE_DROPS(TestDrop, kTestDrops, TEST_DROPS);
#define TEST_COUNTERS(X) X(widgets, "widgets")
LINERATE_COUNTERS(TestCounter, kTestCounters, TEST_COUNTERS);

const MetricFamily& family(const Metrics& m, const std::string& name) {
    for (const MetricFamily& f : m.families())
        if (f.name == name) return f;
    throw std::out_of_range(name);
}

TEST(MetricsAddress, TakesAnIpv4AddressAndAPort) {
    const MetricsAddress a = MetricsAddress::parse("127.0.0.1:9876");
    EXPECT_EQ(a.host, "127.0.0.1");
    EXPECT_EQ(a.port, 9876);
    EXPECT_EQ(MetricsAddress::parse("127.0.0.1:0").port, 0);
    for (const char* bad : {"", "9876", "127.0.0.1", "127.0.0.1:", "localhost:9876",
                            "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:9x", "[::1]:9876"})
        EXPECT_THROW(MetricsAddress::parse(bad), std::invalid_argument) << bad;
}

TEST(BoardMetrics, EveryWorkersCountersWithItsLabelsAndOnlyTheShownNames) {
    StatsBoard board("test", 2, kTestDrops, kTestCounters);  // the exception path is off
    board.worker(1).rx_packets.add(7);
    board.worker(1).rx_bytes.add(448);
    board.worker(0).drop(TestDrop::bad_thing).add(3);
    board.worker(1).app_counter(TestCounter::widgets).add(5);
    Metrics m("test");
    add_board_metrics(board, m);

    const MetricFamily& rx = family(m, "linerate_rx_packets_total");
    EXPECT_EQ(rx.type, MetricType::counter);
    ASSERT_EQ(rx.samples.size(), 2u);
    const MetricLabels w1 = {{"app", "test"}, {"worker", "1"}};
    EXPECT_EQ(rx.samples[1].labels, w1);
    EXPECT_EQ(rx.samples[1].value, 7);
    EXPECT_EQ(family(m, "linerate_rx_bytes_total").samples[1].value, 448);

    const MetricFamily& drops = family(m, "linerate_drops_total");
    ASSERT_EQ(drops.samples.size(), 4u) << "tx_full and bad_thing per worker";
    const MetricLabels bad0 = {{"app", "test"}, {"worker", "0"}, {"reason", "bad_thing"}};
    EXPECT_EQ(drops.samples[1].labels, bad0);
    EXPECT_EQ(drops.samples[1].value, 3);

    const MetricFamily& app = family(m, "linerate_app_events_total");
    ASSERT_EQ(app.samples.size(), 2u) << "widgets per worker, not the exception path's";
    EXPECT_EQ(app.samples[1].value, 5);
}

}  // namespace
