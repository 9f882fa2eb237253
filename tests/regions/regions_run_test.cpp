// linerate-regions as a program: a quick run's JSON (figures, units, facts), --advise and --from,
// and the exit status of bad input. No timing is asserted: the figures only exist and are > 0.
#include <gtest/gtest.h>

#include "support/process.hpp"
#include "support/scratch.hpp"

using namespace linerate::test;

namespace {

const std::string kTool = binary("apps/regions/linerate-regions");

// One lcore (the main lcore is the worker), no hugepages: tests run side by side.
std::vector<std::string> quick(std::vector<std::string> args) {
    std::vector<std::string> argv{kTool,
                                  "--no-huge",
                                  "-m",
                                  "256",
                                  "--no-pci",
                                  "--no-shconf",
                                  "--no-telemetry",
                                  "--log-level=lib.eal:warning",
                                  "-l",
                                  "0",
                                  "--",
                                  "--quick"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

}  // namespace

TEST(RegionsRun, QuickRunWritesEveryFigureWithUnits) {
    const std::string json = scratch("regions.json"), file = scratch("region.bin");
    ProcessResult p =
        run_process(quick({"--json", json, "pages:4k", "file:" + file + ",create"}), {120});
    ASSERT_EQ(p.exit_status, 0) << p.out;
    EXPECT_NE(p.out.find("ns@64"), std::string::npos) << p.out;                       // the table
    EXPECT_NE(p.out.find("linerate-regions: pages:4k: latency"), std::string::npos);  // progress
    const nlohmann::json j = read_json(json);
    EXPECT_EQ(j["tool"], "linerate-regions");
    EXPECT_EQ(j["workers"], 1);
    EXPECT_EQ(j["max_working_set_bytes"], 1 << 20);
    ASSERT_EQ(j["regions"].size(), 2u);
    const nlohmann::json& four_k = j["regions"][0];
    EXPECT_EQ(four_k["spec"], "pages:4k");
    EXPECT_EQ(four_k["buffer_bytes"], 1 << 20);
    EXPECT_EQ(four_k["facts"]["heap_page_size_bytes"], 4096);
    EXPECT_EQ(four_k["facts"]["kernel_page_size_bytes"], 4096);
    EXPECT_EQ(four_k["facts"]["huge_bytes"], 0);  // MADV_NOHUGEPAGE
    ASSERT_EQ(four_k["latency"].size(), 2u);      // --quick: strides 64 and 4096
    EXPECT_EQ(four_k["latency"][0]["stride_bytes"], 64);
    const nlohmann::json& points = four_k["latency"][0]["points"];
    ASSERT_EQ(points.size(), 9u);  // 4 KiB .. 1 MiB
    for (size_t i = 0; i < points.size(); ++i) {
        EXPECT_EQ(points[i]["working_set_bytes"], size_t(4096) << i);
        EXPECT_GT(points[i]["latency_ns"].get<double>(), 0);
    }
    EXPECT_EQ(four_k["random_read_one_worker"].size(), 9u);
    EXPECT_GT(four_k["random_read_all_workers"][8]["gb_per_s"].get<double>(), 0);
    EXPECT_EQ(four_k["sequential"]["working_set_bytes"], 1 << 20);
    EXPECT_GT(four_k["sequential"]["write_all_workers_gb_per_s"].get<double>(), 0);
    EXPECT_EQ(j["regions"][1]["spec"], "file:" + file + ",create");
    // The mixed pair: 1+0 and 0+1 with one worker.
    ASSERT_EQ(j["mixed"]["points"].size(), 2u);
    EXPECT_EQ(j["mixed"]["points"][0]["workers_on_first"], 1);
    EXPECT_EQ(j["mixed"]["points"][1]["workers_on_second"], 1);
}

TEST(RegionsRun, AdviseFromAnEarlierRunNamesRegionsItMeasured) {
    const std::string json = scratch("regions.json"), again = scratch("again.json");
    ProcessResult p = run_process(
        quick({"--json", json, "--advise", "kvagg", "--keys", "65536", "pages:4k", "pages:thp"}),
        {120});
    ASSERT_EQ(p.exit_status, 0) << p.out;
    const nlohmann::json advice = read_json(json)["advice"];
    EXPECT_EQ(advice["aggbuf_bytes"], 65536 * 2 * 16);  // 2 slots a key, 16 B a slot
    for (const char* key : {"netbuf", "aggbuf"})
        EXPECT_TRUE(advice[key] == "pages:4k" || advice[key] == "pages:thp") << advice;
    EXPECT_EQ(advice["reasons"].size(), 3u);
    // The same figures read back give the same advice, without the EAL.
    ProcessResult q = run_process(
        {kTool, "--from", json, "--advise", "kvagg", "--keys", "65536", "--json", again});
    ASSERT_EQ(q.exit_status, 0) << q.out;
    EXPECT_EQ(read_json(again)["advice"], advice);
    EXPECT_NE(q.out.find("kvagg [EAL args] -- " + advice["app_args"].get<std::string>()),
              std::string::npos)
        << q.out;
}

TEST(RegionsRun, BadInputExitsTwoWithOneLine) {
    expect_usage_error(kTool, {"bogus:1"}, "bad region 'bogus:1'");
    expect_usage_error(kTool, {"file:/nonexistent/regions"}, "No such file");
    expect_usage_error(kTool, {}, "no region to measure");
    expect_usage_error(kTool, {"--max-size", "12Q", "pages:4k"}, "--max-size");
    expect_usage_error(kTool, {"--advise", "nosuchapp", "pages:4k"}, "--advise");
    expect_usage_error(kTool, {"--figures", "speed", "pages:4k"}, "unknown figure 'speed'");
    const std::string junk = scratch("junk.json");
    run_process({"/bin/sh", "-c", "echo '{}' > " + junk});
    expect_usage_error(kTool, {"--from", junk, "--advise", "kvagg"}, "not a linerate-regions JSON");
}
