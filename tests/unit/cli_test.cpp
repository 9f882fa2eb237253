#include <gtest/gtest.h>

#include "cli/command_line.hpp"
#include "eal/eal.hpp"

using namespace linerate;

TEST(SplitArgs, EalBeforeSeparator) {
    const char* argv[] = {"app", "-l", "0-1", "--vdev=net_null0", "--", "--burst", "64"};
    auto s = cli::split_args(7, argv);
    EXPECT_TRUE(s.had_separator);
    EXPECT_EQ(s.eal, (std::vector<std::string>{"-l", "0-1", "--vdev=net_null0"}));
    EXPECT_EQ(s.app, (std::vector<std::string>{"--burst", "64"}));
}

TEST(SplitArgs, NoSeparatorMeansAllAppArgs) {
    const char* argv[] = {"app", "--pcap", "in.pcap"};
    auto s = cli::split_args(3, argv);
    EXPECT_FALSE(s.had_separator);
    EXPECT_TRUE(s.eal.empty());
    EXPECT_EQ(s.app.size(), 2u);
}

TEST(SplitArgs, RecognisesEalOptions) {
    EXPECT_EQ(cli::find_eal_option({"--burst", "1", "--no-huge"}), "--no-huge");
    EXPECT_EQ(cli::find_eal_option({"-l0-3"}), "-l0-3");
    EXPECT_EQ(cli::find_eal_option({"--file-prefix=x"}), "--file-prefix=x");
    EXPECT_EQ(cli::find_eal_option({"--burst", "--netbuf", "pages:4k", "-p", "3"}), "");
    EXPECT_EQ(cli::find_eal_option({"--vdevx"}), "");
}

TEST(PortList, ListAndMask) {
    cli::CommonOptions o;
    EXPECT_TRUE(cli::parse_port_list(o).empty());
    o.ports = "0,2";
    EXPECT_EQ(cli::parse_port_list(o), (std::vector<uint16_t>{0, 2}));
    o.ports = "1,";
    EXPECT_THROW(cli::parse_port_list(o), std::invalid_argument);
    o.ports.clear();
    o.port_mask = "0x5";
    EXPECT_EQ(cli::parse_port_list(o), (std::vector<uint16_t>{0, 2}));
    o.port_mask = "zz";
    EXPECT_THROW(cli::parse_port_list(o), std::invalid_argument);
}

TEST(PcapMode, EalArgsOnlyWhenUserGaveNone) {
    auto a = eal::pcap_mode_eal_args("in.pcap:out.pcap", false);
    EXPECT_NE(std::find(a.begin(), a.end(), "--no-huge"), a.end());
    EXPECT_NE(std::find(a.begin(), a.end(), "--no-pci"), a.end());
    EXPECT_EQ(a.back(), "--vdev=net_pcap_linerate,rx_pcap=in.pcap,tx_pcap=out.pcap");
    auto b = eal::pcap_mode_eal_args("in.pcap", true);
    EXPECT_EQ(
        b,
        (std::vector<std::string>{"--vdev=net_pcap_linerate,rx_pcap=in.pcap,tx_pcap=/dev/null"}));
    EXPECT_THROW(eal::pcap_mode_eal_args(":out", false), std::invalid_argument);
    EXPECT_THROW(eal::pcap_mode_eal_args("a,b.pcap", false), std::invalid_argument);
}
