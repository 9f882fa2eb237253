// gen's options: what they turn into, and the errors.
#include <gtest/gtest.h>

#include <vector>

#include "cli/command_line.hpp"
#include "gen/options.hpp"

using namespace linerate;
using namespace linerate::gen;

namespace {

GenOptions parse(std::vector<std::string> args) {
    CLI::App app("test", "gen");
    cli::CommonOptions common;
    cli::add_common_options(app, common);
    GenOptions g;
    add_gen_options(app, g);
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);
    finish_gen_options(app, g);
    return g;
}

std::string error(std::vector<std::string> args) {
    try {
        parse(args);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(GenOptions, Defaults) {
    GenOptions g = parse({});
    EXPECT_EQ(g.traffic.kind, Kind::udp);
    EXPECT_EQ(g.traffic.frame_len(), 60u);
    EXPECT_EQ(g.traffic.udp_dst_port(), 9);
    EXPECT_EQ(target_pps(g), 0);
    EXPECT_DOUBLE_EQ(g.drain_s, 0.2);
}

TEST(GenOptions, BadSharesSpreadAndOverride) {
    GenOptions g = parse({"--kind", "nfv-mix", "--bad", "0.07", "--bad-tiny", "0.02"});
    EXPECT_DOUBLE_EQ(g.traffic.bad[0], 0.02);
    for (size_t i = 1; i < kBadClassCount; ++i) EXPECT_DOUBLE_EQ(g.traffic.bad[i], 0.01);
    g = parse({"--kind", "nfv-mix", "--bad-checksum", "0.5"});
    for (size_t i = 0; i < kBadClassCount; ++i)
        EXPECT_DOUBLE_EQ(g.traffic.bad[i], bad_class(i) == FrameClass::bad_checksum ? 0.5 : 0);
}

TEST(GenOptions, KvaggAndAddresses) {
    GenOptions g = parse({"--kind", "kvagg", "--tuples", "64", "--keys", "1000000", "--dist",
                          "zipf:1.1", "--streams", "8", "--expect", "/tmp/x.csv", "--dst-mac",
                          "aa:bb:cc:dd:ee:ff", "--src-ip", "10.0.0.1"});
    EXPECT_EQ(g.traffic.frame_len(), 64u + 64 * 16);
    EXPECT_TRUE(g.traffic.dist.zipf);
    EXPECT_TRUE(g.traffic.track_expected);
    EXPECT_EQ(g.traffic.udp_dst_port(), 9000);
    EXPECT_EQ(g.traffic.dst_mac, (pkt::MacAddr{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}));
    EXPECT_EQ(g.traffic.src_ip, 0x0A000001u);
}

TEST(GenOptions, RateInGbpsCountsWireOverhead) {
    GenOptions g = parse({"--rate-gbps", "10"});
    EXPECT_NEAR(target_pps(g), 14880952.38, 0.01);  // 10GbE line rate at 64 bytes
    g = parse({"--rate-pps", "1000"});
    EXPECT_EQ(target_pps(g), 1000);
}

TEST(GenOptions, Errors) {
    EXPECT_NE(error({"--kind", "tcp"}).find("bad kind"), std::string::npos);
    EXPECT_NE(error({"--kind", "kvagg", "--size", "128"}).find("--size applies"),
              std::string::npos);
    EXPECT_NE(error({"--tuples", "4"}).find("--tuples applies to --kind kvagg"), std::string::npos);
    EXPECT_NE(error({"--bad", "0.1"}).find("nfv-mix"), std::string::npos);
    EXPECT_NE(error({"--size", "20"}).find("--size must be"), std::string::npos);
    EXPECT_NE(error({"--dst-mac", "aa:bb"}).find("bad MAC"), std::string::npos);
    EXPECT_NE(error({"--dst-ip", "1.2.3"}).find("bad IPv4"), std::string::npos);
    EXPECT_NE(error({"--kind", "kvagg", "--dist", "zipf"}).find("bad distribution"),
              std::string::npos);
    EXPECT_NE(error({"--write-pcap", "x.pcap"}).find("--count"), std::string::npos);
    EXPECT_NE(error({"--rate-pps", "1", "--rate-gbps", "1"}).find("excludes"), std::string::npos);
    EXPECT_NE(error({"--kind", "nfv-mix", "--bad", "0.8", "--bad-tiny", "0.5"}).find("more than 1"),
              std::string::npos);
}

TEST(GenOptions, NanAndInfinityAreRefused) {
    for (const char* opt : {"--rate-pps", "--rate-gbps", "--catch-up", "--drain"})
        for (const char* v : {"nan", "inf"})
            EXPECT_NE(error({opt, v}).find("must be a finite number"), std::string::npos)
                << opt << " " << v;
}
