// Unit tests of nfv's options (Click's keyword precedence), config report and --verbose line.
#include <gtest/gtest.h>

#include <thread>

#include "nfv/first_bad_log.hpp"
#include "nfv/options.hpp"
#include "pkt/address.hpp"

using namespace linerate;
using namespace linerate::nfv;

namespace {

Options parse(std::vector<std::string> args) {
    CLI::App app("nfv options", "nfv");
    Options o;
    o.add(app);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
    return o;
}

std::vector<std::string> addresses(const std::vector<uint32_t>& v) {
    std::vector<std::string> s;
    for (uint32_t a : v) s.push_back(pkt::format_ipv4(a));
    return s;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST(NfvOptions, DefaultsAreRfc1812BadSourcesAndChecksumOn) {
    const Config c = make_config(parse({}));
    EXPECT_TRUE(c.verify_checksum);
    EXPECT_FALSE(c.pass_non_ip);
    EXPECT_EQ(addresses(c.bad_src), (Strings{"0.0.0.0", "255.255.255.255"}));
    EXPECT_TRUE(c.good_dst.empty());
}

TEST(NfvOptions, FlagsReachTheConfig) {
    const Options o =
        parse({"--no-checksum", "--pass-non-ip", "--no-mac-swap", "--verbose", "--bad-port", "3"});
    const Config c = make_config(o);
    EXPECT_FALSE(c.verify_checksum);
    EXPECT_TRUE(c.pass_non_ip);
    EXPECT_FALSE(o.forward.swaps_macs());
    EXPECT_EQ(o.forward.mode, ForwardMode::reflect);
    EXPECT_TRUE(o.verbose);
    EXPECT_EQ(o.bad_port, 3);
}

TEST(NfvOptions, ForwardPairLeavesMacsUnlessAsked) {
    EXPECT_TRUE(parse({}).forward.swaps_macs());
    EXPECT_EQ(parse({"--forward", "pair"}).forward.mode, ForwardMode::pair);
    EXPECT_FALSE(parse({"--forward", "pair"}).forward.swaps_macs());
    EXPECT_TRUE(parse({"--forward", "pair", "--mac-swap"}).forward.swaps_macs());
    EXPECT_FALSE(parse({"--forward", "reflect", "--no-mac-swap"}).forward.swaps_macs());
}

TEST(NfvOptions, InterfacesBuildBothLists) {
    Config c = make_config(parse({"--interfaces", "10.1.0.1/24"}));
    EXPECT_EQ(addresses(c.bad_src), (Strings{"10.1.0.255", "0.0.0.0", "255.255.255.255"}));
    EXPECT_EQ(addresses(c.good_dst), (Strings{"10.1.0.1"}));
    c = make_config(parse({"--bad-src", "1.2.3.4", "--good-dst", "9.9.9.9,8.8.8.8"}));
    EXPECT_EQ(addresses(c.bad_src), (Strings{"1.2.3.4"}));
    EXPECT_EQ(addresses(c.good_dst), (Strings{"9.9.9.9", "8.8.8.8"}));
    c = make_config(parse({"--bad-src", ""}));  // Click's default: no bad sources
    EXPECT_TRUE(c.bad_src.empty());
}

// Click's CheckIPHeader ignores BADSRC and GOODDST given INTERFACES: the combination is refused
// rather than silently meaning something else, whatever the order on the line.
TEST(NfvOptions, InterfacesWithBadSrcOrGoodDstIsRefused) {
    for (const Strings& args : {Strings{"--bad-src", "1.2.3.4", "--interfaces", "10.1.0.1/24"},
                                Strings{"--interfaces", "10.1.0.1/24", "--bad-src", "1.2.3.4"},
                                Strings{"--interfaces", "10.1.0.1/24", "--good-dst", "9.9.9.9"},
                                Strings{"--good-dst", "", "--interfaces", "10.1.0.1"}}) {
        try {
            parse(args);
            ADD_FAILURE() << args[0] << " " << args[2] << " parsed";
        } catch (const CLI::ParseError& e) {
            EXPECT_NE(std::string(e.what()).find("--interfaces: cannot be combined with "
                                                 "--bad-src or --good-dst: Click's CheckIPHeader"),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST(NfvOptions, BadValuesFailTheParseNamingTheToken) {
    for (const Strings& args :
         {Strings{"--bad-src", "1.2.3"}, Strings{"--good-dst", "a,b"},
          Strings{"--interfaces", "1.2.3.4/40"}, Strings{"--bad-port", "70000"}}) {
        try {
            parse(args);
            ADD_FAILURE() << args[0] << " " << args[1] << " parsed";
        } catch (const CLI::ParseError& e) {
            EXPECT_NE(std::string(e.what()).find(args[0]), std::string::npos) << e.what();
        }
    }
}

TEST(NfvOptions, ConfigJsonShowsTheEffectiveLists) {
    const Options o = parse({"--interfaces", "10.1.0.1/24", "--bad-port", "1"});
    const CheckIpHeader check(make_config(o));
    const nlohmann::json j = config_json(o, check);
    EXPECT_EQ(j["checksum"], true);
    EXPECT_EQ(j["bad_src"], nlohmann::json({"0.0.0.0", "10.1.0.255", "255.255.255.255"}));
    EXPECT_EQ(j["good_dst"], nlohmann::json({"10.1.0.1"}));
    EXPECT_EQ(j["interfaces"], "10.1.0.1/24");
    EXPECT_EQ(j["bad_port"], 1);
    EXPECT_TRUE(config_json(parse({}), CheckIpHeader())["bad_port"].is_null());
}

TEST(NfvVerbose, LineHasReasonLengthAndFirstBytes) {
    std::vector<uint8_t> f(100);
    for (size_t i = 0; i < f.size(); ++i) f[i] = uint8_t(i);
    std::string line = describe_bad_frame("nfv", Verdict::bad_checksum, f.data(), 3);
    EXPECT_EQ(line, "nfv: first \"bad IP checksum\" frame: 3 bytes: 00 01 02");
    line = describe_bad_frame("nfv", Verdict::tiny_packet, f.data(), 0);
    EXPECT_EQ(line, "nfv: first \"tiny packet\" frame: 0 bytes:");
    line = describe_bad_frame("nfv", Verdict::not_ipv4, f.data(), f.size());
    EXPECT_NE(line.find("100 bytes: 00 01"), std::string::npos);
    EXPECT_NE(line.find(" 3f ..."), std::string::npos) << line;  // 64 bytes, then an ellipsis
    EXPECT_EQ(line.find(" 40"), std::string::npos) << line;
}

TEST(NfvVerbose, EachReasonIsLoggedOnceAcrossThreads) {
    FirstBadLog log("nfv");
    const uint8_t frame[4] = {1, 2, 3, 4};
    std::atomic<int> printed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 1000; ++i)
                printed += log.record(i % 2 ? Verdict::bad_length : Verdict::bad_source, frame, 4);
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(printed, 2);
}
