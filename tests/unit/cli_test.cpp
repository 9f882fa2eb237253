#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "cli/command_line.hpp"
#include "eal/af_xdp_ports.hpp"
#include "eal/eal.hpp"
#include "support/scratch.hpp"
#include "worker/worker_map.hpp"

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
    // An app's own option of an EAL option's name (kvagg's --allow, DPDK's PCI allow list).
    auto declares_allow = [](std::string_view name) { return name == "--allow"; };
    EXPECT_EQ(cli::find_eal_option({"--allow", "10.0.0.0/8"}), "--allow");
    EXPECT_EQ(cli::find_eal_option({"--allow", "10.0.0.0/8"}, declares_allow), "");
    EXPECT_EQ(cli::find_eal_option({"--allow=10.0.0.0/8", "-l1"}, declares_allow), "-l1");
}

TEST(PortList, ListAndMask) {
    cli::CommonOptions o;
    EXPECT_TRUE(cli::parse_port_list(o).empty());
    o.ports = "0,2";
    EXPECT_EQ(cli::parse_port_list(o), (std::vector<uint16_t>{0, 2}));
    o.ports = "1,";
    EXPECT_THROW(cli::parse_port_list(o), std::invalid_argument);
    o.ports = "0,0";
    EXPECT_THROW(cli::parse_port_list(o), std::invalid_argument);
    o.ports = "7";
    EXPECT_EQ(cli::parse_port_list(o), (std::vector<uint16_t>{7}));  // the EAL knows if it exists
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

TEST(FiniteRange, RefusesNanInfinityAndOutOfRange) {
    CLI::App app;
    double v = 0;
    app.add_option("--x", v)->check(cli::finite_range(0.0, 10.0));
    for (const char* bad : {"nan", "NaN", "inf", "-inf", "-1", "10.5", "ten"}) {
        std::vector<std::string> args = {bad, "--x"};  // CLI11 parses a reversed vector
        EXPECT_THROW(app.parse(args), CLI::ValidationError) << bad;
    }
    std::vector<std::string> ok = {"2.5", "--x"};
    app.parse(ok);
    EXPECT_EQ(v, 2.5);
}

// add_bounded: integers by CLI::Range, floating point by finite_range, the default in the help.
TEST(OptionShapes, BoundedChecksItsRangeAndShowsItsDefault) {
    CLI::App app;
    unsigned count = 7;
    double period = 1.5;
    cli::add_bounded(app, "--count", count, 1u, 100u, "How many");
    cli::add_bounded(app, "--period", period, 0.0, 10.0, "How long");
    EXPECT_EQ(app.get_option("--count")->get_default_str(), "7");
    EXPECT_EQ(app.get_option("--period")->get_default_str(), "1.5");
    for (std::vector<std::string> bad : {std::vector<std::string>{"0", "--count"},
                                         {"101", "--count"},
                                         {"nan", "--period"},
                                         {"10.5", "--period"}}) {
        EXPECT_THROW(app.parse(bad), CLI::ValidationError) << bad[0];
        app.clear();
    }
    std::vector<std::string> ok = {"2.5", "--period", "100", "--count"};  // reversed, as CLI11
    app.parse(ok);
    EXPECT_EQ(count, 100u);
    EXPECT_EQ(period, 2.5);
}

// add_choice: a listed name sets its value, another name is refused, none keeps the default.
TEST(OptionShapes, ChoiceSetsTheNamedValueOnly) {
    enum class Mode { slow, fast, faster };
    CLI::App app;
    Mode mode = Mode::fast;
    cli::add_choice(app, "--mode", mode, {{"slow", Mode::slow}, {"faster", Mode::faster}}, "Pace");
    std::vector<std::string> none;
    app.parse(none);
    EXPECT_EQ(mode, Mode::fast);
    std::vector<std::string> bad = {"fast", "--mode"};
    EXPECT_THROW(app.parse(bad), CLI::ValidationError);
    EXPECT_EQ(mode, Mode::fast);
    app.clear();
    std::vector<std::string> slow = {"slow", "--mode"};
    app.parse(slow);
    EXPECT_EQ(mode, Mode::slow);
    app.clear();
    std::vector<std::string> faster = {"faster", "--mode"};
    app.parse(faster);
    EXPECT_EQ(mode, Mode::faster);
}

// add_group: the options `add` declares, and only those, go under the heading.
TEST(OptionShapes, GroupHeadsOnlyWhatItAdds) {
    CLI::App app;
    int a = 0, b = 0;
    app.add_option("--before", a, "Outside");
    const auto added = cli::add_group(
        app, "Heading", [&](CLI::App& in) { in.add_option("--inside", b, "Inside"); });
    ASSERT_EQ(added.size(), 1u);
    EXPECT_EQ(added[0]->get_name(), "--inside");
    EXPECT_EQ(app.get_option("--inside")->get_group(), "Heading");
    EXPECT_EQ(app.get_option("--before")->get_group(), "Options");
}

// add_key_option: the file is loaded while parsing; one others may read is refused with what
// to do. add_allow_option: comma-separated and repeatable, a bad network refused.
TEST(OptionShapes, KeyIsCheckedWhileParsingAndAllowTakesNetworks) {
    CLI::App app;
    std::optional<auth::Key> key;
    pkt::Ipv4AllowList allow;
    cli::add_key_option(app, key, "Key");
    cli::add_allow_option(app, allow, "Sources");
    const std::string path = "/tmp/linerate-cli-test.key";
    const std::string hex(64, 'a');
    {
        FILE* f = fopen(path.c_str(), "w");
        ASSERT_NE(f, nullptr);
        fputs((hex + "\n").c_str(), f);
        fclose(f);
    }
    chmod(path.c_str(), 0644);
    std::vector<std::string> args = {path, "--key"};
    try {
        app.parse(args);
        ADD_FAILURE() << "a key others may read was taken";
    } catch (const CLI::ValidationError& e) {
        EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
    }
    app.clear();
    chmod(path.c_str(), 0600);
    args = {"127.0.0.1", "--allow", "10.0.0.0/8,192.168.1.0/24", "--allow", path, "--key"};
    app.parse(args);
    ASSERT_TRUE(key);
    EXPECT_EQ(key->bytes[0], 0xAA);
    EXPECT_EQ(allow.nets.size(), 3u);
    EXPECT_TRUE(allow.contains(0x7F000001u));
    EXPECT_TRUE(allow.contains(0xC0A80105u));
    EXPECT_FALSE(allow.contains(0xC0A80205u));
    app.clear();
    args = {"10.0.0.1/8", "--allow"};
    EXPECT_THROW(app.parse(args), CLI::ValidationError);
    unlink(path.c_str());
}

TEST(CommonOptions, PoolMustHoldOneAndAHalfCaches) {
    cli::CommonOptions o;
    cli::check_common_options(o);  // sized from the setup
    o.mbufs = 64;
    EXPECT_THROW(cli::check_common_options(o), std::invalid_argument);
    o.mbufs = 384;  // 1.5 x 256
    cli::check_common_options(o);
    o.mbufs = 64;
    o.mbuf_cache = 42;
    cli::check_common_options(o);
    o.mbuf_cache = 43;
    EXPECT_THROW(cli::check_common_options(o), std::invalid_argument);
}

TEST(CommonOptions, WritableCheckCreatesNothing) {
    const std::string dir = linerate::test::scratch("cli_writable");
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
    const std::string file = dir + "/r.json";
    cli::check_writable(file, "--json");
    EXPECT_NE(access(file.c_str(), F_OK), 0) << "the check left " << file << " behind";
    EXPECT_THROW(cli::check_writable(dir, "--json"), std::invalid_argument);
    EXPECT_THROW(cli::check_writable(dir + "/missing/r.json", "--json"), std::invalid_argument);
    cli::CommonOptions o;
    o.json_path = dir + "/no/r.json";
    EXPECT_THROW(cli::check_common_options(o), std::invalid_argument);
}

TEST(AfXdpMode, SpecAndOneVdevPerQueue) {
    auto s = eal::parse_af_xdp_spec("veth0");
    EXPECT_EQ(s.iface, "veth0");
    EXPECT_EQ(s.queues, 0u);
    s = eal::parse_af_xdp_spec("eth1,queues=4");
    EXPECT_EQ(s.iface, "eth1");
    EXPECT_EQ(s.queues, 4u);
    EXPECT_EQ(eal::af_xdp_devargs(s, 3), "iface=eth1,start_queue=3,queue_count=1");
    s.devargs.push_back("key=value");
    EXPECT_EQ(eal::af_xdp_devargs(s, 0), "iface=eth1,start_queue=0,queue_count=1,key=value");
    for (const char* bad : {"", ",queues=2", "eth0,queues=0", "eth0,queues=x", "eth0,queue=2",
                            "eth0,queues=65", "a_name_longer_than_ifnamsiz"})
        EXPECT_THROW(eal::parse_af_xdp_spec(bad), std::invalid_argument) << bad;
}

// No vdev names the steering program (xdp_prog=: the PMD would attach it through netlink, where
// it outlives a killed app): the app attaches it with a BPF link first, and every queue's vdev
// adopts it.
TEST(AfXdpMode, NoVdevNamesAnXdpProgram) {
    auto s = eal::parse_af_xdp_spec("eth1,queues=2");
    EXPECT_EQ(eal::af_xdp_devargs(s, 0), "iface=eth1,start_queue=0,queue_count=1");
    EXPECT_EQ(eal::af_xdp_devargs(s, 1), "iface=eth1,start_queue=1,queue_count=1");
}

TEST(AfXdpMode, EalDefaultsGiveOneWorkerLcorePerQueue) {
    auto one = eal::af_xdp_mode_eal_args({eal::parse_af_xdp_spec("veth0")});
    EXPECT_EQ(one.front(), "--lcores=0");  // the main lcore is the worker
    EXPECT_NE(std::find(one.begin(), one.end(), "--no-huge"), one.end());
    auto three = eal::af_xdp_mode_eal_args({eal::parse_af_xdp_spec("veth0,queues=3")});
    EXPECT_EQ(three.front().rfind("--lcores=0@", 0), 0u) << three.front();
    EXPECT_NE(three.front().find(",3@"), std::string::npos) << three.front();
}

TEST(WorkerMap, PortMadeForOneQueueGoesToThatQueuesWorker) {
    // Ports 5 and 6: queues 0 and 1 of one interface, one vdev each; port 7 has two queues.
    worker::WorkerMap map({1, 2}, {{5, 1, 0}, {6, 1, 1}, {7, 2, 0}});
    ASSERT_EQ(map.size(), 2u);
    const auto& w0 = map.slots()[0].queues;
    const auto& w1 = map.slots()[1].queues;
    ASSERT_EQ(w0.size(), 2u);
    ASSERT_EQ(w1.size(), 2u);
    EXPECT_EQ(w0[0].port, 5);
    EXPECT_EQ(w0[1].port, 7);
    EXPECT_EQ(w0[1].queue, 0);
    EXPECT_EQ(w1[0].port, 6);
    EXPECT_EQ(w1[0].queue, 0);
    EXPECT_EQ(w1[1].port, 7);
    EXPECT_EQ(w1[1].queue, 1);
}
