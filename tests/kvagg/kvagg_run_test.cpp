// kvagg on virtual ports: two-worker conservation on net_null, SIGINT still writes the dump,
// the key telemetry command, command-line errors.
#include <gtest/gtest.h>

#include <unistd.h>
#include <csignal>

#include <fstream>
#include <thread>

#include "kvagg_trace.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;
using namespace linerate::kvagg;
using namespace linerate::kvagg::test;

namespace {

const std::string kApp = binary("apps/kvagg/kvagg");

std::vector<std::string> with_eal(const std::vector<std::string>& eal,
                                  const std::vector<std::string>& app) {
    std::vector<std::string> argv = {kApp};
    argv.insert(argv.end(), eal.begin(), eal.end());
    argv.push_back("--");
    argv.insert(argv.end(), app.begin(), app.end());
    return argv;
}

// A small trace replayed forever by net_pcap (infinite_rx): keys 0..99, one stream. Replays
// repeat sequence numbers, so the runs turn duplicate detection off.
std::string replay_pcap() {
    std::vector<pcapio::Frame> frames;
    for (uint64_t seq = 0; seq < 64; ++seq) {
        std::vector<KvTuple> tuples;
        for (uint64_t i = 0; i < 8; ++i) tuples.push_back({(seq * 8 + i) % 100, 1});
        frames.push_back(make_kv_frame(kv_spec(0), 0, seq, tuples));
    }
    const std::string path = scratch("replay.pcap");
    pcapio::write_frames(path, frames);
    return path;
}

std::string replay_vdev(const std::string& pcap) {
    return "--vdev=net_pcap0,rx_pcap=" + pcap + ",tx_pcap=/dev/null,infinite_rx=1";
}

}  // namespace

TEST(KvaggNetNull, TwoWorkersConservePackets) {
    const std::string json = scratch("null.json"), dump = scratch("null.csv");
    std::vector<std::string> eal = no_huge_eal("0@0,1@0,2@1");
    eal.push_back("--vdev=net_null0");
    ProcessResult r =
        run_process(with_eal(eal, {"--duration", "0.5", "--stats-period", "0", "--json", json,
                                   "--dump", dump, "--keys", "1024"}));
    ASSERT_EQ(r.exit_status, 0) << r.out;
    const nlohmann::json j = read_json(json);
    ASSERT_TRUE(j.is_object());
    // net_null frames are not kvagg: every one is received and dropped as such.
    const uint64_t rx = j["rx_packets"];
    EXPECT_GT(rx, 0u);
    EXPECT_EQ(j["dropped"], rx);
    EXPECT_EQ(j["drops"]["not_kvagg"], rx);
    EXPECT_EQ(j["aggregated_packets"], 0);
    EXPECT_EQ(j["tx_packets"], 0);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    ASSERT_EQ(j["workers"].size(), 2u);
    uint64_t sum = 0;
    for (const auto& w : j["workers"]) {
        EXPECT_GT(w["rx_packets"].get<uint64_t>(), 0u);
        EXPECT_EQ(w["rx_packets"], w["dropped"]);
        sum += w["rx_packets"].get<uint64_t>();
    }
    EXPECT_EQ(sum, rx);
    EXPECT_NE(r.out.find("kvagg: aggbuf 2 tables x"), std::string::npos) << r.out;
    std::ifstream d(dump);
    EXPECT_TRUE(d.good());
    EXPECT_EQ(d.peek(), std::ifstream::traits_type::eof());  // empty: no key got a tuple
}

TEST(KvaggReplay, SigintWritesTheDumpAndConsistentFigures) {
    const std::string pcap = replay_pcap(), json = scratch("sig.json"), dump = scratch("sig.csv");
    std::vector<std::string> eal = no_huge_eal("0,1");
    eal.push_back(replay_vdev(pcap));
    ProcessResult r = run_process(with_eal(eal, {"--stats-period", "0", "--json", json, "--dump",
                                                 dump, "--dup-window", "0", "--keys", "1000"}),
                                  {.timeout_s = 30, .signal_after_s = 2.5});
    ASSERT_EQ(r.exit_status, 0) << r.out;
    EXPECT_NE(r.out.find("stopped by signal 2"), std::string::npos) << r.out;
    const nlohmann::json j = read_json(json);
    ASSERT_TRUE(j.is_object());
    uint64_t keys = 0, total = 0;
    std::ifstream in(dump);
    std::string line;
    while (std::getline(in, line)) {
        ++keys;
        total += std::stoull(line.substr(line.find(',') + 1));
    }
    EXPECT_EQ(keys, 100u);
    EXPECT_EQ(j["keys"], 100);
    EXPECT_GT(j["tuples"].get<uint64_t>(), 0u);
    EXPECT_EQ(j["tuples"], total);  // every value is 1
    EXPECT_EQ(j["aggregated_sum"], total);
    EXPECT_EQ(j["tuples"].get<uint64_t>(), 8 * j["aggregated_packets"].get<uint64_t>());
    EXPECT_EQ(j["rx_packets"], j["aggregated_packets"]);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    EXPECT_GT(j["mtuples_per_s"].get<double>(), 0);
}

TEST(KvaggTelemetry, KeyCommandAnswersWhileRunning) {
    if (!telemetry_client_installed()) GTEST_SKIP() << "dpdk-telemetry.py not installed";
    const std::string pcap = replay_pcap();
    for (const char* agg : {"per-worker", "shared"}) {
        const std::string prefix = "lrkv" + std::to_string(getpid()) + agg;
        std::vector<std::string> argv = eal_command(kApp, "0,1", prefix);
        argv.insert(argv.end(), {replay_vdev(pcap), "--", "--stats-period", "0", "--dup-window",
                                 "0", "--keys", "1000", "--agg", agg});
        BackgroundProcess running(argv);
        std::string answer;
        const auto replies = telemetry_query_when_ready(
            prefix, {"/linerate/kvagg/key,5", "/linerate/kvagg/key,0x3e8", "/linerate/kvagg/key,x"},
            20, &answer);
        running.signal(SIGINT);
        const ProcessResult app = running.finish(30);
        EXPECT_EQ(app.exit_status, 0) << app.out;
        ASSERT_FALSE(replies[2].is_null()) << answer;
        EXPECT_EQ(replies[0]["key"], 5);
        EXPECT_EQ(replies[0]["found"], 1);
        EXPECT_GT(replies[0]["value"].get<uint64_t>(), 0u);
        EXPECT_EQ(replies[0]["keys"], 100);
        EXPECT_EQ(replies[0]["agg"], agg);
        EXPECT_GT(replies[0]["tuples"].get<uint64_t>(), 0u);
        EXPECT_EQ(replies[1]["key"], 1000);
        EXPECT_EQ(replies[1]["found"], 0);
        EXPECT_TRUE(replies[2].contains("error")) << replies[2];
        if (std::string(agg) == "per-worker") {
            EXPECT_EQ(replies[0]["unanswered_workers"], 0);
        }
        system(("rm -rf /var/run/dpdk/" + prefix).c_str());
    }
}

class KvaggCliErrors : public testing::TestWithParam<CliCase> {};

TEST_P(KvaggCliErrors, ExitTwoWithOneLine) {
    expect_usage_error(kApp, GetParam().args, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    All, KvaggCliErrors,
    testing::Values(CliCase{{"--index", "tree"}, "--index: tree not in {hash,direct}"},
                    CliCase{{"--agg", "both"}, "--agg: both not in {per-worker,shared}"},
                    CliCase{{"--keys", "0"}, "--keys"}, CliCase{{"--keys", "many"}, "--keys"},
                    CliCase{{"--udp-port", "0"}, "--udp-port"},
                    CliCase{{"--udp-port", "70000"}, "--udp-port"},
                    CliCase{{"--dup-window", "100"}, "--dup-window: must be 0 (off) or a power"},
                    CliCase{{"--dup-window", "32"}, "--dup-window"},
                    CliCase{{"--max-streams", "0"}, "--max-streams"},
                    CliCase{{"--probe-limit", "0"}, "--probe-limit"},
                    CliCase{{"--prefetch", "1000"}, "--prefetch"},
                    CliCase{{"--max-streams", "1048576", "--dup-window", "16777216"},
                            "1 GiB of duplicate bitmap"},
                    CliCase{{"--aggbuf", "pages:2m"}, "--aggbuf: bad region 'pages:2m'"},
                    CliCase{{"--aggbuf", "nosuchalias"}, "--aggbuf"},
                    CliCase{{"--region", "arm=pages:4k", "--aggbuf", "socket:x"}, "--aggbuf"},
                    CliCase{{"--dump"}, "--dump"},
                    CliCase{{"--dump", "/nonexistent/sums.csv"},
                            "--dump /nonexistent/sums.csv: No such file or directory"},
                    CliCase{{"--aggbuf", "file:/nonexistent/aggbuf"},
                            "--aggbuf: region file:/nonexistent/aggbuf: /nonexistent/aggbuf: No "
                            "such file or directory (add ,create to create it)"}));

TEST(KvaggCli, AliasResolvesAndHelpListsOptions) {
    auto r = run_process({kApp, "--help"});
    EXPECT_EQ(r.exit_status, 0);
    for (const char* opt : {"--udp-port", "--keys", "--index", "--agg", "--dup-window",
                            "--max-streams", "--probe-limit", "--aggbuf", "--dump", "--pcap"})
        EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
    const std::string pcap = replay_pcap(), json = scratch("alias.json");
    r = run_process({kApp, "--pcap", pcap, "--region", "agg=pages:4k", "--aggbuf", "agg", "--json",
                     json, "--keys", "100"});
    EXPECT_EQ(r.exit_status, 0) << r.out;
    const nlohmann::json j = read_json(json);
    EXPECT_EQ(j["aggbuf"].get<std::string>().rfind("region agg (pages:4k): external heap", 0), 0u)
        << j["aggbuf"];
}
