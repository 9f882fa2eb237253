// kvagg's options, their checks and configs; the dump and the JSON figures.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "kvagg/options.hpp"
#include "kvagg/results.hpp"
#include "support/scratch.hpp"

using namespace linerate::kvagg;

namespace {

// Parses `args` into fresh options; throws CLI::ParseError on a bad value.
Options parse(std::vector<std::string> args) {
    CLI::App app("t");
    Options o;
    o.add(app);
    std::reverse(args.begin(), args.end());
    app.parse(args);
    return o;
}

}  // namespace

TEST(KvaggOptions, Defaults) {
    const Options o = parse({});
    EXPECT_EQ(o.udp_port, 9000);
    EXPECT_EQ(o.keys, uint64_t(1) << 20);
    EXPECT_EQ(o.index, IndexMode::hash);
    EXPECT_EQ(o.agg, AggMode::per_worker);
    EXPECT_EQ(o.dup_window, 65536u);
    EXPECT_EQ(o.max_streams, 256u);
    EXPECT_EQ(o.probe_limit, 64u);
    EXPECT_EQ(o.prefetch, 32u);
    EXPECT_TRUE(o.aggbuf.empty());
    EXPECT_TRUE(o.dump.empty());
    EXPECT_NO_THROW(o.check());
}

TEST(KvaggOptions, ValuesReachTheConfigs) {
    const Options o =
        parse({"--udp-port",    "7000",   "--keys",       "300", "--index",       "direct",
               "--agg",         "shared", "--dup-window", "0",   "--max-streams", "9",
               "--probe-limit", "8",      "--prefetch",   "0",   "--aggbuf",      "pages:thp",
               "--dump",        "d.csv"});
    const AggConfig a = agg_config(o);
    EXPECT_EQ(a.mode, IndexMode::direct);
    EXPECT_EQ(a.max_keys, 300u);
    EXPECT_EQ(a.probe_limit, 8u);
    const KvKernelConfig k = kernel_config(o);
    EXPECT_EQ(k.udp_port, 7000);
    EXPECT_EQ(k.dup_window, 0u);
    EXPECT_EQ(k.max_streams, 9u);
    EXPECT_EQ(k.prefetch_ahead, 0u);
    EXPECT_EQ(o.agg, AggMode::shared);
    const nlohmann::json j = config_json(o);
    EXPECT_EQ(j["index"], "direct");
    EXPECT_EQ(j["agg"], "shared");
    EXPECT_EQ(j["aggbuf"], "pages:thp");
    EXPECT_EQ(j["dup_window"], 0);
}

TEST(KvaggOptions, BadValuesFailTheParse) {
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"--index", "tree"},
             {"--agg", "all"},
             {"--keys", "0"},
             {"--keys", "4294967297"},
             {"--dup-window", "100"},
             {"--dup-window", "32"},
             {"--dup-window", "33554432"},
             {"--dup-window", "x"},
             {"--max-streams", "0"},
             {"--probe-limit", "0"},
             {"--udp-port", "0"},
         })
        EXPECT_THROW(parse(args), CLI::ParseError) << testing::PrintToString(args);
    EXPECT_EQ(parse({"--keys", "1K"}).keys, 1024u);
    EXPECT_EQ(parse({"--keys", "16M"}).keys, 16u << 20);
    EXPECT_EQ(parse({"--keys", "1000"}).keys, 1000u);
    for (const char* w : {"0", "64", "65536", "16777216"})
        EXPECT_NO_THROW(parse({"--dup-window", w})) << w;
    EXPECT_THROW(parse({"--max-streams", "1048576", "--dup-window", "16777216"}).check(),
                 std::invalid_argument);
}

TEST(KvaggOptions, ListenIpIsRepeatableAndChecked) {
    EXPECT_EQ(kernel_config(parse({})).listen.count, 0u) << "default: every address";
    EXPECT_EQ(config_json(parse({}))["listen_ip"], nlohmann::json::array());
    const Options o = parse({"--listen-ip", "10.0.0.1", "--listen-ip", "10.0.0.2"});
    const KvKernelConfig k = kernel_config(o);
    ASSERT_EQ(k.listen.count, 2u);
    EXPECT_EQ(k.listen.addrs[0], 0x0A000001u);
    EXPECT_EQ(k.listen.addrs[1], 0x0A000002u);
    EXPECT_EQ(config_json(o)["listen_ip"], nlohmann::json({"10.0.0.1", "10.0.0.2"}));
    for (const char* bad : {"10.0.0", "10.0.0.256", "host", "", "10.0.0.01"})
        EXPECT_THROW(parse({"--listen-ip", bad}), CLI::ParseError) << bad;
    std::vector<std::string> nine;
    for (int i = 1; i <= 9; ++i) {
        nine.push_back("--listen-ip");
        nine.push_back("10.0.0." + std::to_string(i));
    }
    EXPECT_THROW(parse(nine).check(), std::invalid_argument);
}

TEST(KvaggResults, DumpIsKeyCommaValueLines) {
    const std::string path = linerate::test::scratch("kvagg_dump");
    const std::vector<KeySum> sums = {{0, 5}, {7, 0}, {~0ull, ~0ull}};
    write_dump(path, sums);
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    EXPECT_EQ(s.str(), "0,5\n7,0\n18446744073709551615,18446744073709551615\n");
    write_dump(path, {});
    std::ifstream empty(path);
    EXPECT_EQ(empty.peek(), std::ifstream::traits_type::eof());
    EXPECT_THROW(write_dump("/nonexistent/dir/d.csv", sums), std::runtime_error);
}

// --key FILE and --allow CIDR[,...]: loaded and checked while parsing; they reach the kernel's
// config and the JSON (the key's presence only).
TEST(KvaggOptions, KeyAndAllowReachTheConfigs) {
    const std::string key = linerate::test::scratch("kvagg_opt.key");
    std::ofstream(key) << std::string(64, 'a') << "\n";
    ASSERT_EQ(chmod(key.c_str(), 0600), 0);
    const Options o =
        parse({"--key", key, "--allow", "10.1.0.0/16,192.168.7.9", "--allow", "127.0.0.1"});
    ASSERT_TRUE(o.key.has_value());
    EXPECT_EQ(o.key->bytes[0], 0xAA);
    const KvKernelConfig k = kernel_config(o);
    EXPECT_TRUE(k.key.has_value());
    ASSERT_EQ(k.allow.nets.size(), 3u);
    EXPECT_TRUE(k.allow.contains(0x0A01FF01u));
    EXPECT_FALSE(k.allow.contains(0x0A02FF01u));
    const nlohmann::json j = config_json(o);
    EXPECT_EQ(j["key"], true);
    EXPECT_EQ(j["allow"], nlohmann::json({"10.1.0.0/16", "192.168.7.9/32", "127.0.0.1/32"}));
    EXPECT_TRUE(exposure_lines(o).empty());
    EXPECT_EQ(config_json(parse({}))["key"], false);
    // Neither: two lines at start, service refused and data from anyone.
    const std::vector<std::string> open = exposure_lines(parse({}));
    ASSERT_EQ(open.size(), 2u);
    EXPECT_EQ(open[0],
              "kvagg: service ops are refused until --key or --allow is given "
              "(docs/security.md)");
    EXPECT_TRUE(exposure_lines(parse({"--allow", "10.0.0.0/8"})).empty());
}

TEST(KvaggOptions, BadKeyOrAllowFailsTheParse) {
    const std::string readable = linerate::test::scratch("kvagg_opt_readable.key");
    std::ofstream(readable) << std::string(64, 'a') << "\n";
    ASSERT_EQ(chmod(readable.c_str(), 0644), 0);
    const std::string short_key = linerate::test::scratch("kvagg_opt_short.key");
    std::ofstream(short_key) << "abcd\n";
    ASSERT_EQ(chmod(short_key.c_str(), 0600), 0);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"--key", readable},
             {"--key", short_key},
             {"--key", linerate::test::scratch("kvagg_opt_missing.key")},
             {"--allow", "10.0.0.0/33"},
             {"--allow", "10.0.0.1/8"},  // host bits set
             {"--allow", "host"},
         })
        EXPECT_THROW(parse(args), CLI::ParseError) << testing::PrintToString(args);
}
