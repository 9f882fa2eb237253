#include <gtest/gtest.h>

#include <vector>

#include "worker/affinity.hpp"

using linerate::worker::cpus_besides;
using V = std::vector<unsigned>;

TEST(Affinity, CpusNoWorkerRunsOn) {
    EXPECT_EQ(cpus_besides({1}, 4), (V{0, 2, 3}));
    EXPECT_EQ(cpus_besides({0, 3}, 4), (V{1, 2}));
    EXPECT_EQ(cpus_besides({}, 2), (V{0, 1}));
    EXPECT_EQ(cpus_besides({7}, 2), (V{0, 1}));  // a worker CPU beyond the count changes nothing
}

// A single-lcore run on one CPU, or workers on every CPU: every CPU rather than none.
TEST(Affinity, AllCpusWhenWorkersTakeEveryOne) {
    EXPECT_EQ(cpus_besides({0}, 1), (V{0}));
    EXPECT_EQ(cpus_besides({1, 0}, 2), (V{0, 1}));
}
