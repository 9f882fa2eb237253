// gen end to end: --write-pcap output checked by tshark (when installed) and against the traffic
// model, sends on net_null checked through the JSON, command-line errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "gen/pcap_out.hpp"
#include "gen/returns.hpp"
#include "gen/traffic.hpp"
#include "nfv/check_ip_header.hpp"
#include "pcapio/pcap_file.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;
using pcapio::Frame;

namespace {

const std::string kGen = binary("bench/gen/linerate-gen");

bool have_tshark() {
    return std::system("command -v tshark >/dev/null 2>&1") == 0;
}

// Frame numbers (1-based) tshark reports expert info of warning level or worse for, with the
// messages. IP header checksums are verified too.
std::map<uint64_t, std::string> tshark_flagged(const std::string& pcap, uint64_t* frames) {
    std::string cmd = "tshark -r '" + pcap +
                      "' -o ip.check_checksum:TRUE -T fields -e frame.number "
                      "-e _ws.expert.severity -e _ws.expert.message 2>/dev/null";
    std::map<uint64_t, std::string> flagged;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return flagged;
    char line[4096];
    *frames = 0;
    while (std::fgets(line, sizeof line, p)) {
        ++*frames;
        std::istringstream in(line);
        std::string number, severities, messages;
        std::getline(in, number, '\t');
        std::getline(in, severities, '\t');
        std::getline(in, messages);
        std::istringstream sev(severities);
        std::string s;
        bool bad = false;
        while (std::getline(sev, s, ','))
            if (!s.empty() && std::stoul(s) >= 0x00600000) bad = true;  // PI_WARN and up
        if (bad) flagged[std::stoull(number)] = messages;
    }
    pclose(p);
    return flagged;
}

struct WrittenPcap {
    ProcessResult proc;
    std::vector<Frame> frames;
    nlohmann::json json;
    std::string pcap;
};

WrittenPcap write_pcap(std::vector<std::string> args, uint64_t count) {
    WrittenPcap r;
    r.pcap = scratch("gen.pcap");
    const std::string json = scratch("gen.json");
    std::vector<std::string> argv = {
        kGen, "--write-pcap", r.pcap, "--count", std::to_string(count), "--json", json};
    argv.insert(argv.end(), args.begin(), args.end());
    r.proc = run_process(argv, {.timeout_s = 60});
    r.frames = pcapio::read_frames(r.pcap);
    r.json = read_json(json);
    return r;
}

// The frames the traffic model makes for `c`: what the pcap must hold byte for byte.
std::vector<std::pair<Frame, gen::FrameClass>> model(const gen::TrafficConfig& c, uint64_t n) {
    gen::TrafficPlan plan(c);
    gen::Traffic t(plan);
    std::vector<std::pair<Frame, gen::FrameClass>> out;
    Frame buf(plan.frame_len());
    for (uint64_t i = 0; i < n; ++i) {
        gen::FrameInfo info = t.next(buf.data());
        out.emplace_back(Frame(buf.begin(), buf.begin() + info.len), info.cls);
    }
    return out;
}

}  // namespace

struct ValidCase {
    std::string name;
    std::vector<std::string> args;
    friend void PrintTo(const ValidCase& c, std::ostream* os) { *os << c.name; }
};

class GenPcapValid : public testing::TestWithParam<ValidCase> {};

TEST_P(GenPcapValid, WrittenAndNothingMalformedForTshark) {
    WrittenPcap r = write_pcap(GetParam().args, 500);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    ASSERT_EQ(r.frames.size(), 500u);
    EXPECT_EQ(r.json["frames"], 500);
    if (!have_tshark()) {
        GTEST_SKIP() << "tshark not installed";
    }
    uint64_t seen = 0;
    auto flagged = tshark_flagged(r.pcap, &seen);
    EXPECT_EQ(seen, 500u);
    for (const auto& [frame, msg] : flagged) ADD_FAILURE() << "frame " << frame << ": " << msg;
}

INSTANTIATE_TEST_SUITE_P(
    All, GenPcapValid,
    testing::Values(ValidCase{"udp64", {"--kind", "udp"}},
                    ValidCase{"udp1518", {"--size", "1518", "--flows", "7"}},
                    ValidCase{"udp9000", {"--size", "9000"}},
                    ValidCase{"udp_odd", {"--size", "333", "--src-ip", "10.9.8.7"}},
                    ValidCase{"kvagg",
                              {"--kind", "kvagg", "--tuples", "32", "--dist", "zipf:0.99",
                               "--dup-share", "0.1"}},
                    ValidCase{"kvagg_jumbo", {"--kind", "kvagg", "--tuples", "558"}},
                    ValidCase{"kvagg_malformed", {"--kind", "kvagg", "--malformed-share", "0.3"}},
                    ValidCase{"clocksync", {"--kind", "clocksync", "--flows", "3"}}),
    [](const auto& p) { return p.param.name; });

TEST(GenPcap, NfvMixFlagsOnlyTheIntendedBadFramesAndTheModelMatches) {
    const uint64_t n = 3000;
    WrittenPcap r =
        write_pcap({"--kind", "nfv-mix", "--size", "128", "--bad", "0.35", "--seed", "9"}, n);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    gen::TrafficConfig c;
    c.kind = gen::Kind::nfv_mix;
    c.frame_size = 128;
    c.bad.fill(0.05);
    c.seed = 9;
    auto want = model(c, n);
    ASSERT_EQ(r.frames.size(), n);
    std::map<gen::FrameClass, int> classes;
    for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(r.frames[i], want[i].first) << "frame " << i;
        ++classes[want[i].second];
    }
    EXPECT_EQ(r.json["classes"]["normal"], classes[gen::FrameClass::normal]);
    EXPECT_EQ(r.json["expected_back"], classes[gen::FrameClass::normal]);
    if (!have_tshark()) GTEST_SKIP() << "tshark not installed";
    uint64_t seen = 0;
    auto flagged = tshark_flagged(r.pcap, &seen);
    EXPECT_EQ(seen, n);
    for (const auto& [frame, msg] : flagged)
        EXPECT_NE(want[frame - 1].second, gen::FrameClass::normal)
            << "frame " << frame << ": " << msg;
    // What tshark checks in IPv4 it must find in every frame of those classes.
    using gen::FrameClass;
    for (size_t i = 0; i < n; ++i) {
        FrameClass k = want[i].second;
        // Except an IP total length of 0, which tshark takes for TCP segmentation offload.
        const bool tso =
            k == FrameClass::bad_length && r.frames[i][16] == 0 && r.frames[i][17] == 0;
        if ((k == FrameClass::tiny || k == FrameClass::bad_version || k == FrameClass::bad_ihl ||
             k == FrameClass::bad_length || k == FrameClass::bad_checksum) &&
            !tso) {
            EXPECT_TRUE(flagged.count(i + 1))
                << "frame " << i + 1 << " " << gen::frame_class_name(k);
        }
    }
}

TEST(GenPcap, KvaggExpectFileAndModelMatch) {
    const std::string csv = scratch("expect.csv");
    WrittenPcap r = write_pcap(
        {"--kind", "kvagg", "--tuples", "16", "--keys", "500", "--streams", "3", "--dup-share",
         "0.1", "--malformed-share", "0.05", "--value-max", "1000", "--expect", csv},
        2000);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    gen::TrafficConfig c;
    c.kind = gen::Kind::kvagg;
    c.tuples = 16;
    c.keys = 500;
    c.streams = 3;
    c.dup_share = 0.1;
    c.malformed_share = 0.05;
    c.value_max = 1000;
    auto want = model(c, 2000);
    ASSERT_EQ(r.frames.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(r.frames[i], want[i].first) << i;
    std::ifstream in(csv);
    std::string line;
    uint64_t lines = 0, sum = 0;
    while (std::getline(in, line)) {
        ++lines;
        sum += std::stoull(line.substr(line.find(',') + 1));
    }
    EXPECT_EQ(r.json["expect"]["keys"], lines);
    EXPECT_EQ(r.json["expect"]["sum"], sum);
    EXPECT_GT(lines, 400u);
}

TEST(GenPcap, NfvDropsExactlyTheBadClassesAndReflectsTheRestStamped) {
    const std::string nfv = binary("apps/nfv/nfv");
    if (access(nfv.c_str(), X_OK) != 0) GTEST_SKIP() << "nfv not built";
    WrittenPcap r = write_pcap({"--kind", "nfv-mix", "--size", "100", "--bad", "0.3"}, 5000);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    const std::string out = scratch("nfv_out.pcap"), json = scratch("nfv.json");
    auto p = run_process({nfv, "--pcap", r.pcap + ":" + out, "--json", json}, {.timeout_s = 60});
    ASSERT_EQ(p.exit_status, 0) << p.out;
    auto j = read_json(json);
    std::map<std::string_view, std::string> key_of_text;  // nfv's drop keys by Click's text
    for (const stats::Name& n : nfv::kDrops) key_of_text[n.text] = n.key;
    for (size_t i = 0; i < gen::kBadClassCount; ++i) {
        const std::string cls = gen::frame_class_name(gen::bad_class(i));
        EXPECT_EQ(j["drops"][key_of_text.at(gen::kBadClassVerdicts[i])], r.json["classes"][cls])
            << cls;
    }
    EXPECT_EQ(j["tx_packets"], r.json["classes"]["normal"]);
    auto back = pcapio::read_frames(out);
    ASSERT_EQ(back.size(), r.json["classes"]["normal"].get<size_t>());
    gen::TrafficConfig c;
    gen::ReturnTracker tracker(c, {});
    for (const Frame& f : back)
        EXPECT_EQ(tracker.on_frame(f.data(), f.size(), 0), gen::Return::in_order);
}

TEST(GenPcap, KvaggReproducesTheExpectedSumsExactly) {
    const std::string kvagg = binary("apps/kvagg/kvagg");
    if (access(kvagg.c_str(), X_OK) != 0) GTEST_SKIP() << "kvagg not built";
    const std::string expect = scratch("kv_expect.csv"), dump = scratch("kv_dump.csv");
    WrittenPcap r =
        write_pcap({"--kind", "kvagg", "--tuples", "24", "--keys", "500", "--dist", "zipf:0.9",
                    "--streams", "5", "--dup-share", "0.1", "--malformed-share", "0.1",
                    "--value-max", "1000000", "--expect", expect},
                   4000);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    auto p = run_process({kvagg, "--pcap", r.pcap, "--dump", dump}, {.timeout_s = 60});
    ASSERT_EQ(p.exit_status, 0) << p.out;
    auto slurp = [](const std::string& path) {
        std::ifstream in(path);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    const std::string want = slurp(expect);
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(slurp(dump), want);
}

namespace {

struct SendRun {
    ProcessResult proc;
    nlohmann::json json;
};

SendRun send_null(const std::string& lcores, std::vector<std::string> args) {
    const std::string json = scratch("send.json");
    std::vector<std::string> argv = {kGen};
    auto eal = no_huge_eal(lcores);
    argv.insert(argv.end(), eal.begin(), eal.end());
    // copy=1: net_null's RX frames are zeroed, not stale mbuf data that may hold our stamps.
    argv.insert(argv.end(), {"--vdev=net_null0,copy=1", "--", "--json", json, "--drain", "0.05"});
    argv.insert(argv.end(), args.begin(), args.end());
    SendRun r;
    r.proc = run_process(argv, {.timeout_s = 60});
    r.json = read_json(json);
    return r;
}

}  // namespace

TEST(GenSend, CountOnNetNullWithOneLcore) {
    SendRun r = send_null("0", {"--count", "100000"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    const auto& j = r.json;
    EXPECT_EQ(j["app"], "linerate-gen");
    EXPECT_EQ(j["kind"], "udp");
    EXPECT_EQ(j["tx_packets"], 100000);
    EXPECT_EQ(j["tx_bytes"], 100000 * 60);
    EXPECT_EQ(j["expected_back"], 100000);
    EXPECT_EQ(j["returned"], 0);  // net_null sends back zeroed frames, not ours
    EXPECT_EQ(j["lost"], 100000);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    EXPECT_EQ(j["sent_pps_target"], 0);
    for (const char* k : {"p50", "p99", "p999", "max", "mean"})
        EXPECT_TRUE(j["latency_ns"].contains(k)) << k;
    for (const char* k : {"reordered", "drops", "workers", "duration_s", "tx_gbps", "send_s"})
        EXPECT_TRUE(j.contains(k)) << k;
}

TEST(GenSend, PacedByPpsTakesTheTimeItShould) {
    SendRun r = send_null("0", {"--count", "50000", "--rate-pps", "100000"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.json["tx_packets"], 50000);
    EXPECT_EQ(r.json["sent_pps_target"], 100000.0);
    // Never faster than asked; slower only when the machine is busy (shared cores).
    const double s = r.json["send_s"];
    EXPECT_GT(s, 0.49);
    EXPECT_LT(s, 5.0);
    EXPECT_LT(r.json["sent_mpps"].get<double>(), 0.1 * 1.01);
}

TEST(GenSend, PacedByGbps) {
    // 0.5 Gb/s of 1518-byte frames: 0.5e9 / 8 / 1538 = 40637 fps; 20000 frames ~ 0.49 s.
    SendRun r = send_null("0", {"--count", "20000", "--size", "1518", "--rate-gbps", "0.5"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.json["tx_packets"], 20000);
    const double s = r.json["send_s"];
    EXPECT_GT(s, 0.48);
    EXPECT_LT(s, 5.0);
    EXPECT_LT(r.json["sent_gbps"].get<double>(), 0.5 * 1.01);
}

TEST(GenSend, TwoWorkersSplitTheCount) {
    SendRun r = send_null("0@0,1@0,2@1", {"--count", "100001", "--flows", "4"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.json["tx_packets"], 100001);
    ASSERT_EQ(r.json["workers"].size(), 2u);
    EXPECT_EQ(r.json["workers"][0]["tx_packets"], 50001);
    EXPECT_EQ(r.json["workers"][1]["tx_packets"], 50000);
    EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0);
}

TEST(GenSend, JumboFramesGoOutAsChains) {
    SendRun r = send_null("0", {"--count", "2000", "--size", "9000"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.json["tx_packets"], 2000);
    EXPECT_EQ(r.json["tx_bytes"], 2000 * 8996);
    EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0);
}

TEST(GenSend, KvaggForADurationWritesTheExpectedSums) {
    const std::string csv = scratch("send_expect.csv");
    SendRun r =
        send_null("0", {"--kind", "kvagg", "--duration", "0.3", "--tuples", "8", "--keys", "100",
                        "--dup-share", "0.1", "--rate-pps", "200000", "--expect", csv});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    const auto& j = r.json;
    EXPECT_GT(j["tx_packets"].get<uint64_t>(), 10000u);
    EXPECT_EQ(j["expected_back"], 0);
    EXPECT_EQ(j["tuples"], j["expect"]["tuples"]);
    std::ifstream in(csv);
    std::string line;
    uint64_t lines = 0;
    while (std::getline(in, line)) ++lines;
    EXPECT_EQ(lines, j["expect"]["keys"].get<uint64_t>());
    EXPECT_EQ(lines, 100u);
}

TEST(GenSend, ClocksyncAndNfvMixRun) {
    for (std::vector<std::string> args :
         {std::vector<std::string>{"--kind", "clocksync", "--count", "5000"},
          std::vector<std::string>{"--kind", "nfv-mix", "--bad", "0.5", "--count", "5000"}}) {
        SendRun r = send_null("0", args);
        ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
        EXPECT_EQ(r.json["tx_packets"], 5000);
        EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0);
    }
}

TEST(GenSend, SigintStopsCleanly) {
    const std::string json = scratch("sig.json");
    std::vector<std::string> argv = {kGen};
    auto eal = no_huge_eal("0");
    argv.insert(argv.end(), eal.begin(), eal.end());
    argv.insert(argv.end(), {"--vdev=net_null0", "--", "--json", json, "--rate-pps", "1000000"});
    auto p = run_process(argv, {.timeout_s = 30, .signal_after_s = 1.0});
    EXPECT_EQ(p.exit_status, 0) << p.out;
    auto j = read_json(json);
    EXPECT_GT(j["tx_packets"].get<uint64_t>(), 0u);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
}

struct GenCliCase {
    std::string name;
    std::vector<std::string> args;
    std::string message;
    friend void PrintTo(const GenCliCase& c, std::ostream* os) {
        for (const auto& a : c.args) *os << a << ' ';
    }
};

class GenCliErrors : public testing::TestWithParam<GenCliCase> {};

TEST_P(GenCliErrors, ExitTwoWithOneLine) {
    expect_usage_error(kGen, GetParam().args, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    All, GenCliErrors,
    testing::Values(
        GenCliCase{"kind", {"--kind", "tcp"}, "bad kind 'tcp'"},
        GenCliCase{"size", {"--size", "63"}, "--size must be 64..9000"},
        GenCliCase{"pcap_count", {"--write-pcap", "/tmp/x.pcap"}, "--write-pcap needs --count"},
        GenCliCase{"size_kvagg", {"--kind", "kvagg", "--size", "100"}, "--size applies"},
        GenCliCase{"pcap_mode", {"--pcap", "in.pcap"}, "use --write-pcap"},
        GenCliCase{"bad_share", {"--bad", "2"}, "--bad"},
        GenCliCase{"two_rates", {"--rate-pps", "1", "--rate-gbps", "1"}, "excludes"},
        GenCliCase{"eal_arg", {"--vdev=net_null0"}, "EAL args go before `--`"}),
    [](const auto& p) { return p.param.name; });

TEST(GenCli, HelpListsTheOptions) {
    auto r = run_process({kGen, "--help"});
    EXPECT_EQ(r.exit_status, 0);
    for (const char* opt : {"--kind", "--size", "--bad-tiny", "--tuples", "--dist", "--expect",
                            "--rate-pps", "--rate-gbps", "--count", "--write-pcap", "--drain"})
        EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
}
