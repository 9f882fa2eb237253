// linerate-regions' plain code: the chain, the kernels' sums, the report's JSON and the advice.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "regions/advise.hpp"
#include "regions/memory_kernels.hpp"
#include "regions/options.hpp"
#include "regions/region_report.hpp"

using namespace linerate::regions;

namespace {

std::vector<uint64_t> buffer(size_t bytes) {
    return std::vector<uint64_t>(bytes / sizeof(uint64_t));
}

}  // namespace

// One cycle through every element: the chase from the first comes back after exactly
// bytes/stride steps, and on the way visits each element once.
TEST(RegionsChain, OneCycleThroughEveryElement) {
    for (size_t stride : {8, 64, 256, 4096})
        for (size_t bytes : {size_t(4096), size_t(65536), size_t(1) << 20}) {
            if (stride > bytes) continue;
            auto mem = buffer(bytes);
            void* start = build_chain(mem.data(), bytes, stride, bytes + stride);
            const size_t count = bytes / stride;
            EXPECT_EQ(cycle_length(start, count), count) << stride << " " << bytes;
            std::set<uintptr_t> seen;
            void* p = start;
            for (size_t i = 0; i < count; ++i) {
                const auto offset = uintptr_t(p) - uintptr_t(mem.data());
                ASSERT_EQ(offset % stride, 0u);
                ASSERT_LT(offset, bytes);
                seen.insert(offset);
                p = *static_cast<void**>(p);
            }
            EXPECT_EQ(seen.size(), count);
        }
}

TEST(RegionsChain, OneAndTwoElements) {
    auto mem = buffer(8192);
    void* one = build_chain(mem.data(), 4096, 4096, 1);
    EXPECT_EQ(*static_cast<void**>(one), one);
    EXPECT_EQ(cycle_length(one, 10), 1u);
    void* two = build_chain(mem.data(), 8192, 4096, 1);
    EXPECT_EQ(cycle_length(two, 10), 2u);
    EXPECT_EQ(chase(two, 2), two);
}

TEST(RegionsChain, EverySeedIsOneCycle) {
    auto mem = buffer(64 * 1000);
    for (uint64_t seed = 0; seed < 50; ++seed)
        EXPECT_EQ(cycle_length(build_chain(mem.data(), 64 * 1000, 64, seed), 1000), 1000u);
}

TEST(RegionsChain, BadStrideIsRefused) {
    auto mem = buffer(4096);
    EXPECT_THROW(build_chain(mem.data(), 4096, 12, 1), std::invalid_argument);
    EXPECT_THROW(build_chain(mem.data(), 4096, 4, 1), std::invalid_argument);
    EXPECT_THROW(build_chain(mem.data(), 4096, 8192, 1), std::invalid_argument);
}

TEST(RegionsKernels, SequentialSumsAndWritesAreExact) {
    auto mem = buffer(8 * 1001);  // not a multiple of the four sums
    std::iota(mem.begin(), mem.end(), uint64_t(1));
    EXPECT_EQ(read_sequential(mem.data(), 8 * 1001), uint64_t(1001) * 1002 / 2);
    write_sequential(mem.data(), 8 * 1000, 7);
    EXPECT_EQ(mem[999], 7u);
    EXPECT_EQ(mem[1000], 1001u);  // past the bytes given: untouched
    EXPECT_EQ(read_sequential(mem.data(), 8 * 1000), 7000u);
}

TEST(RegionsKernels, RandomLinesReadWholeLines) {
    auto mem = buffer(1 << 16);
    std::fill(mem.begin(), mem.end(), 1);
    EXPECT_EQ(read_random_lines(mem.data(), 1 << 16, 1000, 3), 1000u * 8);
}

TEST(RegionsKernels, TimedFormsGiveFigures) {
    auto mem = buffer(1 << 16);
    void* start = build_chain(mem.data(), 1 << 16, 64, 1);
    EXPECT_GT(chase_ns(start, 1024, 0.001), 0);
    EXPECT_GT(random_read_bytes_per_s(mem.data(), 1 << 16, 0.001, 1), 0);
    EXPECT_GT(sequential_read_bytes_per_s(mem.data(), 1 << 16, 0.001), 0);
    EXPECT_GT(sequential_write_bytes_per_s(mem.data(), 1 << 16, 0.001), 0);
}

TEST(RegionsReport, WorkingSetsArePowersOfTwo) {
    EXPECT_EQ(working_sets(4096, 1 << 20).size(), 9u);
    EXPECT_EQ(working_sets(4096, 1 << 20).front(), 4096u);
    EXPECT_EQ(working_sets(4096, 1 << 20).back(), size_t(1) << 20);
    EXPECT_EQ(working_sets(4096, (3 << 20) / 2).back(), size_t(1) << 20);
    EXPECT_TRUE(working_sets(8192, 4096).empty());
}

namespace {

// A region with a latency curve (64 B stride) of `ns` at 4 KiB and `far_ns` from 1 MiB on, and
// sequential figures `read`/`write` GB/s.
RegionFigures region(const std::string& spec, double far_ns, double read, double write) {
    RegionFigures f;
    f.spec = f.name = spec;
    f.buffer_bytes = size_t(64) << 20;
    LatencyCurve c{64, {}};
    for (size_t ws : working_sets(4096, f.buffer_bytes))
        c.points.push_back({ws, ws < (size_t(1) << 20) ? 1.0 : far_ns});
    f.latency.push_back(c);
    f.random_one_worker = {{4096, 40}, {f.buffer_bytes, 5}};
    f.random_all_workers = {{4096, 80}, {f.buffer_bytes, 9}};
    f.sequential = Sequential{f.buffer_bytes, read, read * 2, write, write * 2};
    return f;
}

Report report(std::vector<RegionFigures> regions) {
    Report r;
    r.machine.cpu_model = "test";
    r.machine.cpus = 2;
    r.machine.caches = {{1, "Data", 49152}};
    r.workers = 2;
    r.worker_lcores = {1, 2};
    r.seconds_per_point = 0.05;
    r.max_working_set_bytes = size_t(64) << 20;
    r.regions = std::move(regions);
    return r;
}

const AppNeeds kKvagg{"kvagg", size_t(10) << 20, size_t(32) << 20, "test"};

}  // namespace

TEST(RegionsReport, JsonKeysCarryUnitsAndRoundTrip) {
    Report r = report({region("pages:thp", 80, 10, 8), region("pages:4k", 120, 10, 8)});
    r.mixed =
        Mixed{"pages:thp", "pages:4k", size_t(16) << 20, {{2, 0, 20}, {1, 1, 19}, {0, 2, 18}}};
    const nlohmann::json j = to_json(r);
    const nlohmann::json& f = j["regions"][0];
    EXPECT_EQ(f["latency"][0]["stride_bytes"], 64);
    EXPECT_EQ(f["latency"][0]["points"][0]["working_set_bytes"], 4096);
    EXPECT_EQ(f["latency"][0]["points"][0]["latency_ns"], 1.0);
    EXPECT_EQ(f["random_read_all_workers"][1]["gb_per_s"], 9);
    EXPECT_EQ(f["sequential"]["read_all_workers_gb_per_s"], 20);
    EXPECT_TRUE(f["facts"].contains("kernel_page_size_bytes"));
    EXPECT_TRUE(f["facts"].contains("huge_bytes"));
    EXPECT_EQ(j["mixed"]["points"][1]["read_gb_per_s"], 19);
    EXPECT_EQ(to_json(report_from_json(j)), j);
    EXPECT_THROW(report_from_json(nlohmann::json{{"regions", 1}}), std::invalid_argument);
}

TEST(RegionsAdvise, OneRegionWhenItIsNearTheBestForBoth) {
    // pages:thp: the least latency at 32 MiB; its bandwidth within 10 % of pages:4k's.
    const Advice a = advise(
        report({region("pages:4k", 120, 10, 8), region("pages:thp", 80, 9.5, 7.8)}), kKvagg, 0.10);
    EXPECT_EQ(a.aggbuf, "pages:thp");
    EXPECT_EQ(a.netbuf, "pages:thp");
    EXPECT_EQ(a.app_args, "--netbuf pages:thp --aggbuf pages:thp");
    ASSERT_EQ(a.reasons.size(), 3u);
    EXPECT_NE(a.reasons[2].find("rule 3"), std::string::npos);
}

TEST(RegionsAdvise, TwoRegionsWhenNoneIsNearTheBestForBoth) {
    const Advice a = advise(
        report({region("socket:0", 120, 20, 16), region("pages:thp", 80, 9, 7)}), kKvagg, 0.10);
    EXPECT_EQ(a.aggbuf, "pages:thp");
    EXPECT_EQ(a.netbuf, "socket:0");
}

TEST(RegionsAdvise, WithinTheMarginTheLowerLatencyWinsTheAggBuf) {
    // 84 ns is within 10 % of 80: both count as the best latency, and socket:0 is also the
    // NetBuf's best: one region.
    const Advice a = advise(report({region("pages:thp", 80, 9, 7), region("socket:0", 84, 20, 16)}),
                            kKvagg, 0.10);
    EXPECT_EQ(a.aggbuf, "socket:0");
    EXPECT_EQ(a.netbuf, "socket:0");
}

TEST(RegionsAdvise, NoAggBufForTheOtherApps) {
    const Advice a = advise(report({region("pages:4k", 120, 10, 8), region("socket:0", 80, 10, 8)}),
                            AppNeeds{"l2reflect", size_t(10) << 20, 0, "test"}, 0.10);
    EXPECT_EQ(a.aggbuf, "");
    EXPECT_EQ(a.netbuf, "socket:0");  // equal bandwidth: the lower latency over the pool
    EXPECT_EQ(a.app_args, "--netbuf socket:0");
}

TEST(RegionsAdvise, MissingFiguresAreAnError) {
    RegionFigures bare;
    bare.spec = "pages:4k";
    EXPECT_THROW(advise(report({bare}), kKvagg, 0.1), std::invalid_argument);
}

TEST(RegionsOptions, SizesAsTheAppsSizeThem) {
    Options o;
    o.advise = "kvagg";
    EXPECT_EQ(app_needs(o).aggbuf_bytes, size_t(32) << 20);  // 1 Mi keys: 2 Mi slots of 16 B
    o.app_workers = 2;
    EXPECT_EQ(app_needs(o).aggbuf_bytes, size_t(64) << 20);  // a table per worker
    o.shared_table = true;  // one index, a column of sums (16 MiB and a line) per worker
    EXPECT_EQ(app_needs(o).aggbuf_bytes, (size_t(64) << 20) + 64);
    o.advise = "nfv";
    EXPECT_EQ(app_needs(o).aggbuf_bytes, 0u);
    EXPECT_GT(app_needs(o).netbuf_bytes, size_t(8191) * 2176);  // 8191 mbufs at 2 workers
}

// The pool as the runtime sizes it: rings, 1.5 caches and two bursts an lcore, rounded up to
// 2^k - 1; --burst is the app's (the common default unless given).
TEST(RegionsOptions, PoolFollowsTheAppsBurst) {
    Options o;
    o.advise = "l2reflect";
    EXPECT_EQ(o.burst, linerate::cli::CommonOptions{}.burst);
    EXPECT_EQ(app_needs(o).sizes, "4095 mbufs for 1 port(s) x 1 worker(s)");  // 2048 + 2 x 512
    o.burst = 512;
    EXPECT_EQ(app_needs(o).sizes, "8191 mbufs for 1 port(s) x 1 worker(s)");  // 2048 + 2 x 1408
}

TEST(RegionsOptions, RegionsResolveAsTheApps) {
    Options o;
    o.region_defs = {"fast=pages:thp"};
    o.regions = {"fast", "pages:4k"};
    o.quick = true;
    const Resolved r = resolve(o);
    ASSERT_EQ(r.regions.size(), 2u);
    EXPECT_EQ(r.regions[0].kind, linerate::mem::RegionKind::pages_thp);
    EXPECT_EQ(r.max_bytes, size_t(1) << 20);
    o.regions = {"bogus:1"};
    EXPECT_THROW(resolve(o), linerate::mem::RegionError);
    o.regions = {};
    EXPECT_THROW(resolve(o), std::invalid_argument);
    o.regions = {"pages:4k"};
    o.figures = "latency,nope";
    EXPECT_THROW(resolve(o), std::invalid_argument);
}
