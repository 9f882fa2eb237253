#include <gtest/gtest.h>

#include <random>

#include "stats/histogram.hpp"

using linerate::stats::LogHistogram;

TEST(LogHistogram, SmallValuesAreExact) {
    LogHistogram h;
    for (uint64_t v = 0; v < 64; ++v) h.record(v);
    EXPECT_EQ(h.count(), 64u);
    EXPECT_EQ(h.min(), 0u);
    EXPECT_EQ(h.max(), 63u);
    EXPECT_EQ(h.percentile(0.5), 32u);
    EXPECT_DOUBLE_EQ(h.mean(), 31.5);
}

TEST(LogHistogram, PercentilesWithinRelativeError) {
    LogHistogram h;
    std::mt19937_64 rng(7);
    std::vector<uint64_t> values;
    for (int i = 0; i < 100000; ++i) {
        uint64_t v = rng() % 10000000;
        values.push_back(v);
        h.record(v);
    }
    std::sort(values.begin(), values.end());
    for (double q : {0.5, 0.99, 0.999}) {
        double exact = double(values[size_t(q * values.size())]);
        double got = double(h.percentile(q));
        EXPECT_NEAR(got, exact, exact * 0.02) << q;
    }
    EXPECT_EQ(h.max(), values.back());
}

TEST(LogHistogram, IndexRoundTripCoversFullRange) {
    for (uint64_t v : {64ull, 65ull, 127ull, 128ull, 1ull << 40, ~0ull}) {
        unsigned i = LogHistogram::index_of(v);
        ASSERT_LT(i, LogHistogram::kBuckets);
        EXPECT_GE(LogHistogram::upper_bound_of(i), v);
        if (i > 0) {
            EXPECT_LT(LogHistogram::upper_bound_of(i - 1), v);
        }
    }
}

TEST(LogHistogram, Merge) {
    LogHistogram a, b;
    a.record(10);
    b.record(1000);
    a.merge(b);
    EXPECT_EQ(a.count(), 2u);
    EXPECT_EQ(a.min(), 10u);
    EXPECT_EQ(a.max(), 1000u);
}
