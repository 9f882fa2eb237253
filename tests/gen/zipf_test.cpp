// Key distributions: parsing, exact probabilities, and samples that follow them.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gen/zipf.hpp"

using namespace linerate::gen;

TEST(GenDist, Parse) {
    EXPECT_FALSE(parse_dist("uniform").zipf);
    DistSpec z = parse_dist("zipf:0.99");
    EXPECT_TRUE(z.zipf);
    EXPECT_DOUBLE_EQ(z.s, 0.99);
    EXPECT_EQ(to_string(z), "zipf:0.99");
    for (const char* bad :
         {"", "zipf", "zipf:", "zipf:x", "zipf:-1", "zipf:11", "zipf:1x", "gauss"})
        EXPECT_THROW(parse_dist(bad), std::invalid_argument) << bad;
}

TEST(GenDist, ProbabilitiesSumToOneAndFollowThePowerLaw) {
    KeyDist d(1000, {true, 1.2});
    double sum = 0;
    for (uint64_t k = 0; k < 1000; ++k) sum += d.probability(k);
    EXPECT_NEAR(sum, 1.0, 1e-9);
    EXPECT_NEAR(d.probability(0) / d.probability(1), std::pow(2.0, 1.2), 1e-9);
    EXPECT_NEAR(d.probability(9) / d.probability(99), std::pow(10.0, 1.2), 1e-6);
    EXPECT_EQ(d.probability(1000), 0.0);
}

namespace {

// Samples n keys; checks each key's count within 5 sigma of n*p and the total variation
// distance between empirical and exact distributions.
void check_samples(const KeyDist& d, size_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<uint64_t> count(d.keys(), 0);
    for (size_t i = 0; i < n; ++i) {
        uint64_t k = d.sample(rng);
        ASSERT_LT(k, d.keys());
        ++count[k];
    }
    double tv = 0;
    for (uint64_t k = 0; k < d.keys(); ++k) {
        const double p = d.probability(k);
        const double expect = p * double(n);
        const double sigma = std::sqrt(double(n) * p * (1 - p));
        EXPECT_NEAR(double(count[k]), expect, 5 * sigma + 1) << "key " << k;
        tv += std::abs(double(count[k]) / double(n) - p);
    }
    EXPECT_LT(tv / 2, 0.01);
}

}  // namespace

TEST(GenDist, UniformSamples) {
    check_samples(KeyDist(100, {}), 1000000, 1);
    check_samples(KeyDist(1, {}), 1000, 2);
}

TEST(GenDist, ZipfSamples) {
    check_samples(KeyDist(100, {true, 1.0}), 1000000, 3);
    check_samples(KeyDist(1000, {true, 0.99}), 2000000, 4);
    check_samples(KeyDist(50, {true, 2.5}), 1000000, 5);
    check_samples(KeyDist(64, {true, 0.0}), 1000000, 6);  // s = 0 is uniform
}

TEST(GenDist, ZipfHotKeyShareOnALargeKeySpace) {
    // 1 Mi keys, s = 1: key 0 gets 1/H(2^20) ~ 6.9%, the top 10 about 20%.
    KeyDist d(1 << 20, {true, 1.0});
    Rng rng(7);
    const int n = 1000000;
    int zero = 0, top10 = 0;
    for (int i = 0; i < n; ++i) {
        uint64_t k = d.sample(rng);
        zero += k == 0;
        top10 += k < 10;
    }
    double p10 = 0;
    for (uint64_t k = 0; k < 10; ++k) p10 += d.probability(k);
    EXPECT_NEAR(double(zero) / n, d.probability(0), 0.002);
    EXPECT_NEAR(double(top10) / n, p10, 0.003);
}

TEST(GenDist, TooManyZipfKeysRefused) {
    EXPECT_THROW(KeyDist(KeyDist::kMaxZipfKeys + 1, {true, 1.0}), std::invalid_argument);
    EXPECT_NO_THROW(KeyDist(uint64_t(1) << 40, {}));
    EXPECT_THROW(KeyDist(0, {}), std::invalid_argument);
}
