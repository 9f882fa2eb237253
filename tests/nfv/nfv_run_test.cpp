// nfv end to end beyond one pcap port: conservation with two workers, --bad-port diversion to a
// second port, command-line errors, telemetry.
#include <gtest/gtest.h>

#include <unistd.h>
#include <csignal>

#include <thread>

#include "frames.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;
using namespace linerate::test::nfv;

namespace {

const std::string kApp = binary("apps/nfv/nfv");

nlohmann::json run_net_null(const std::string& lcores, std::vector<std::string> app_args) {
    std::string json_path = scratch("null.json");
    std::vector<std::string> argv = {kApp};
    auto eal = no_huge_eal(lcores);
    argv.insert(argv.end(), eal.begin(), eal.end());
    argv.insert(argv.end(), {"--vdev=net_null0", "--", "--json", json_path, "--stats-period", "0",
                             "--duration", "0.5"});
    argv.insert(argv.end(), app_args.begin(), app_args.end());
    ProcessResult r = run_process(argv, {.timeout_s = 30});
    EXPECT_EQ(r.exit_status, 0) << r.out;
    auto j = read_json(json_path);
    return j;
}

uint64_t u64(const nlohmann::json& j, const char* key) {
    return j[key].get<uint64_t>();
}

// rx == tx + dropped overall and per worker; every worker got traffic; no mbuf leaked.
void expect_conserved(const nlohmann::json& j, size_t workers) {
    ASSERT_TRUE(j.is_object());
    EXPECT_GT(u64(j, "rx_packets"), 0u);
    EXPECT_EQ(u64(j, "rx_packets"), u64(j, "tx_packets") + u64(j, "dropped"));
    uint64_t by_reason = 0;
    for (const auto& [reason, n] : j["drops"].items()) by_reason += n.get<uint64_t>();
    EXPECT_EQ(by_reason, u64(j, "dropped"));
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    ASSERT_EQ(j["workers"].size(), workers);
    uint64_t rx = 0;
    for (const auto& w : j["workers"]) {
        EXPECT_GT(u64(w, "rx_packets"), 0u);
        EXPECT_EQ(u64(w, "rx_packets"), u64(w, "tx_packets") + u64(w, "dropped"));
        rx += u64(w, "rx_packets");
    }
    EXPECT_EQ(rx, u64(j, "rx_packets"));
}

}  // namespace

// net_null's frames are zero-filled: ethertype 0, so "not_ipv4" unless --pass-non-ip.
TEST(NfvNetNull, TwoWorkersConserveDroppedFrames) {
    auto j = run_net_null("0@0,1@0,2@1", {});
    expect_conserved(j, 2);
    EXPECT_EQ(u64(j["drops"], "not_ipv4"), u64(j, "rx_packets"));
}

TEST(NfvNetNull, TwoWorkersConserveForwardedFrames) {
    auto j = run_net_null("0@0,1@0,2@1", {"--pass-non-ip"});
    expect_conserved(j, 2);
    EXPECT_EQ(u64(j, "rx_packets"), u64(j, "tx_packets") + u64(j["drops"], "tx_full"));
}

TEST(NfvNetNull, TwoWorkersConserveDivertedFrames) {
    auto j = run_net_null("0@0,1@0,2@1", {"--bad-port", "0"});
    expect_conserved(j, 2);
    // Diverted frames stay counted by reason; the divert port's fate is told apart.
    EXPECT_EQ(u64(j, "diverted") + u64(j, "divert_tx_full"), u64(j["drops"], "not_ipv4"));
    EXPECT_GT(u64(j, "diverted"), 0u);
    for (const auto& w : j["workers"])
        EXPECT_EQ(u64(w, "diverted") + u64(w, "divert_tx_full"), u64(w["drops"], "not_ipv4"));
}

// Valid frames out of port 0 into good.pcap, invalid ones out of port 1 into bad.pcap.
TEST(NfvBadPort, InvalidFramesGoOutTheBadPortUnchanged) {
    const IpSpec ok1{.ip_total = 46}, ok2{.ip_total = 28, .padding = 18},
        ok3{.tags = {0x8100}, .ip_total = 100};
    const std::vector<Frame> bad = {ip_frame({.break_checksum = true}),
                                    ip_frame({.src = ip(0, 0, 0, 0)}), other_frame(0x0806, 60),
                                    Frame(12, 0x33), ip_frame({.ver_ihl = 0x44})};
    const std::vector<Frame> in = {ip_frame(ok1), bad[0], bad[1], ip_frame(ok2),
                                   bad[2],        bad[3], bad[4], ip_frame(ok3)};
    const std::string in_path = scratch("in.pcap"), empty_path = scratch("empty.pcap"),
                      good_path = scratch("good.pcap"), bad_path = scratch("bad.pcap"),
                      json_path = scratch("out.json");
    pcapio::write_frames(in_path, in);
    pcapio::write_frames(empty_path, {});
    std::vector<std::string> argv = {kApp};
    auto eal = no_huge_eal("0");
    argv.insert(argv.end(), eal.begin(), eal.end());
    // Plain vdev mode never sees the end of input: a short --duration ends the run.
    argv.insert(argv.end(), {"--vdev=net_pcap0,rx_pcap=" + in_path + ",tx_pcap=" + good_path,
                             "--vdev=net_pcap1,rx_pcap=" + empty_path + ",tx_pcap=" + bad_path,
                             "--", "--bad-port", "1", "--duration", "0.5", "--stats-period", "0",
                             "--json", json_path});
    ProcessResult r = run_process(argv, {.timeout_s = 30});
    ASSERT_EQ(r.exit_status, 0) << r.out;
    EXPECT_EQ(pcapio::read_frames(good_path),
              (std::vector<Frame>{forwarded(ok1), forwarded(ok2), forwarded(ok3)}));
    EXPECT_EQ(pcapio::read_frames(bad_path), bad);
    auto j = read_json(json_path);
    EXPECT_EQ(u64(j, "rx_packets"), in.size());
    EXPECT_EQ(u64(j, "tx_packets"), 3u);
    EXPECT_EQ(u64(j, "dropped"), bad.size());
    EXPECT_EQ(u64(j, "diverted"), bad.size());
    EXPECT_EQ(u64(j, "divert_tx_full"), 0u);
    EXPECT_EQ(u64(j["drops"], "bad_checksum"), 1u);
    EXPECT_EQ(u64(j["drops"], "bad_source"), 1u);
    EXPECT_EQ(u64(j["drops"], "not_ipv4"), 1u);
    EXPECT_EQ(u64(j["drops"], "tiny_packet"), 1u);
    EXPECT_EQ(u64(j["drops"], "bad_header_length"), 1u);
    EXPECT_EQ(j["nfv"]["bad_port"], 1);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
}

TEST(NfvBadPort, APortNotInUseIsAUsageError) {
    const std::string in_path = scratch("in.pcap");
    pcapio::write_frames(in_path, {ip_frame({})});
    auto r = run_process({kApp, "--pcap", in_path, "--bad-port", "3"}, {.timeout_s = 30});
    EXPECT_EQ(r.exit_status, 2) << r.out;
    EXPECT_NE(r.out.find("nfv: --bad-port 3: not one of the ports in use"), std::string::npos)
        << r.out;
}

class NfvCliErrors : public testing::TestWithParam<CliCase> {};

TEST_P(NfvCliErrors, ExitTwoWithOneLine) {
    expect_usage_error(kApp, GetParam().args, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    All, NfvCliErrors,
    testing::Values(
        CliCase{{"--bad-src", "1.2.3"}, "--bad-src: bad IPv4 address '1.2.3'"},
        CliCase{{"--bad-src", "1.2.3.4,,5.6.7.8"}, "--bad-src: empty entry"},
        CliCase{{"--bad-src", "1.2.3.4/24"}, "bad IPv4 address '1.2.3.4/24'"},
        CliCase{{"--good-dst", "10.0.0.256"}, "--good-dst: bad IPv4 address '10.0.0.256'"},
        CliCase{{"--interfaces", "10.0.0.1/33"}, "--interfaces: bad prefix length"},
        CliCase{{"--interfaces", "10.0.0.1/"}, "--interfaces: bad prefix length"},
        CliCase{{"--interfaces", "10.0.0/24"}, "--interfaces: bad IPv4 address '10.0.0'"},
        CliCase{{"--bad-port", "x"}, "--bad-port"}, CliCase{{"--bad-port", "-1"}, "--bad-port"},
        CliCase{{"--no-checksum=maybe"}, "--no-checksum"},
        CliCase{{"--interfaces", "10.0.0.1/24", "--bad-src", "1.2.3.4"},
                "--interfaces: cannot be combined with --bad-src or --good-dst: Click's "
                "CheckIPHeader ignores BADSRC and GOODDST when INTERFACES is given"},
        CliCase{{"--good-dst", "9.9.9.9", "--interfaces", "10.0.0.1/24"},
                "--interfaces: cannot be combined with --bad-src or --good-dst"},
        CliCase{{"--datapath", "ebpf"}, "--datapath"},
        // The XDP datapath runs on an --af-xdp interface or in pcap test mode.
        CliCase{{"--datapath", "xdp", "--pcap", "in.pcap"},
                "--datapath xdp runs on --af-xdp interfaces or in pcap test mode"},
        // A bad value exits before anything else happens, even with a good --pcap beside it.
        CliCase{{"--pcap", "/nonexistent.pcap", "--bad-src", "x"}, "--bad-src"}));

TEST(NfvCli, HelpListsTheNfvOptions) {
    auto r = run_process({kApp, "--help"});
    EXPECT_EQ(r.exit_status, 0);
    for (const char* opt : {"--no-checksum", "--bad-src", "--good-dst", "--interfaces",
                            "--pass-non-ip", "--no-mac-swap", "--bad-port", "--verbose", "--pcap"})
        EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
}

TEST(NfvTelemetry, ConfigCommandAnswersWhileRunning) {
    if (!telemetry_client_installed()) GTEST_SKIP() << "dpdk-telemetry.py not installed";
    const std::string prefix = "lrnfv" + std::to_string(getpid());
    std::vector<std::string> argv = eal_command(kApp, "0", prefix);
    argv.insert(argv.end(),
                {"--vdev=net_null0", "--", "--stats-period", "0", "--bad-src", "10.0.0.9"});
    BackgroundProcess running(argv);
    std::string raw;
    auto answers =
        telemetry_query_when_ready(prefix, {"/linerate/nfv/config", "/linerate/drops"}, 20, &raw);
    running.signal(SIGINT);
    const ProcessResult app = running.finish(30);
    EXPECT_EQ(app.exit_status, 0) << app.out;
    EXPECT_EQ(answers[0]["bad_port"], "null") << raw;
    EXPECT_EQ(answers[0]["bad_src"], nlohmann::json::array({"10.0.0.9"})) << raw;
    EXPECT_TRUE(answers[1].contains("not_ipv4")) << raw;
    system(("rm -rf /var/run/dpdk/" + prefix).c_str());
}
