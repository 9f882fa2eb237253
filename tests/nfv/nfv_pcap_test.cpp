// nfv end to end on pcap files: which frames come out (trimmed, MAC-swapped, in order), the
// per-reason counts in the JSON, and how each option changes the verdicts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <numeric>

#include "frames.hpp"
#include "support/doc_table.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;
using namespace linerate::test::nfv;

namespace {

const std::string kApp = binary("apps/nfv/nfv");

// Every reason on nfv's board, each at 0: a JSON "drops" object lists them all.
const char* const kReasons[] = {"tx_full",      "not_ipv4",          "tiny_packet",
                                "bad_version",  "bad_header_length", "bad_length",
                                "bad_checksum", "bad_source",        "split_header"};

std::vector<Case> mix() {
    std::vector<Case> m;
    m.push_back(valid({.ip_total = 46}));                    // 60 B, no padding
    m.push_back(valid({.ip_total = 28, .padding = 18}));     // 60 B padded: trimmed to 42
    m.push_back(valid({.ip_total = 1500}));                  // 1514 B
    m.push_back(valid({.ip_total = 114, .padding = 1}));     // odd padding
    m.push_back(valid({.tags = {0x8100}, .ip_total = 46}));  // VLAN
    m.push_back(valid({.tags = {0x88A8, 0x8100}, .ip_total = 28, .padding = 14}));  // QinQ
    m.push_back(valid({.ver_ihl = 0x46, .ip_total = 52}));                          // options
    m.push_back(valid({.ver_ihl = 0x4F, .ip_total = 68}));                          // IHL 15
    m.push_back(valid({.src = ip(10, 0, 0, 255)}));  // a broadcast is only bad if listed

    Frame short_ip = ip_frame({});
    short_ip.resize(14 + 19);
    Frame cut_tag = ip_frame({.tags = {0x8100}});
    cut_tag.resize(16);
    m.push_back(invalid(Frame(10, 0x11), "tiny_packet"));
    m.push_back(invalid(short_ip, "tiny_packet"));
    m.push_back(invalid(cut_tag, "tiny_packet"));
    m.push_back(invalid(ip_frame({.ver_ihl = 0x65}), "bad_version"));
    m.push_back(invalid(ip_frame({.ver_ihl = 0x44}), "bad_header_length"));
    m.push_back(invalid(ip_frame({.ip_total = 46, .total_field = 47}), "bad_length"));
    m.push_back(invalid(ip_frame({.ip_total = 46, .total_field = 19}), "bad_length"));
    m.push_back(invalid(ip_frame({.break_checksum = true}), "bad_checksum"));
    m.push_back(invalid(ip_frame({.src = ip(0, 0, 0, 0)}), "bad_source"));
    m.push_back(invalid(ip_frame({.src = ip(255, 255, 255, 255)}), "bad_source"));
    m.push_back(invalid(other_frame(0x0806, 60), "not_ipv4"));
    m.push_back(invalid(other_frame(0x86DD, 78), "not_ipv4"));

    // Interleave valid and invalid frames (a step prime to the size visits each once), so order
    // within bursts is tested too.
    size_t step = 5;
    while (std::gcd(step, m.size()) != 1) ++step;
    std::vector<Case> out;
    for (size_t i = 0; i < m.size(); ++i) out.push_back(m[(i * step) % m.size()]);
    return out;
}

std::vector<Frame> inputs(const std::vector<Case>& cases) {
    std::vector<Frame> f;
    for (const auto& c : cases) f.push_back(c.frame);
    return f;
}

std::vector<Frame> expected_out(const std::vector<Case>& cases) {
    std::vector<Frame> f;
    for (const auto& c : cases)
        if (c.reason.empty()) f.push_back(c.out);
    return f;
}

nlohmann::json expected_drops(const std::vector<Case>& cases) {
    nlohmann::json j = nlohmann::json::object();
    for (const char* r : kReasons) j[r] = 0;
    for (const auto& c : cases)
        if (!c.reason.empty()) j[c.reason] = j[c.reason].get<int>() + 1;
    return j;
}

PcapRun run_pcap(const std::vector<Frame>& in, std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--stats-period", "0"});
    return run_pcap_app(kApp, in, extra);
}

uint64_t total_bytes(const std::vector<Frame>& frames) {
    uint64_t n = 0;
    for (const auto& f : frames) n += f.size();
    return n;
}

// Byte counters: what came in, and what went out after trimming (the output pcap's frames).
void expect_bytes(const PcapRun& r, const std::vector<Case>& cases) {
    EXPECT_EQ(r.json["rx_bytes"], total_bytes(inputs(cases)));
    EXPECT_EQ(r.json["tx_bytes"], total_bytes(expected_out(cases)));
    EXPECT_EQ(r.json["tx_bytes"], total_bytes(r.out));
}

void expect_frames(const std::vector<Frame>& got, const std::vector<Frame>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "output frame " << i;
}

}  // namespace

TEST(NfvPcap, OnlyValidFramesComeOutTrimmedAndSwapped) {
    const auto cases = mix();
    PcapRun r = run_pcap(inputs(cases));
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    expect_frames(r.out, expected_out(cases));
    EXPECT_EQ(r.json["app"], "nfv");
    EXPECT_EQ(r.json["rx_packets"], cases.size());
    EXPECT_EQ(r.json["tx_packets"], expected_out(cases).size());
    EXPECT_EQ(r.json["drops"], expected_drops(cases));
    EXPECT_EQ(r.json["rx_packets"].get<uint64_t>(),
              r.json["tx_packets"].get<uint64_t>() + r.json["dropped"].get<uint64_t>());
    EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0);
    expect_bytes(r, cases);
    EXPECT_FALSE(r.json.contains("diverted"));  // only with --bad-port
}

TEST(NfvPcap, ManyBurstsKeepOrderAndCounts) {
    std::vector<Case> cases;
    for (int i = 0; i < 40; ++i)
        for (const auto& c : mix()) cases.push_back(c);
    PcapRun r = run_pcap(inputs(cases), {"--burst", "7"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    expect_frames(r.out, expected_out(cases));
    EXPECT_EQ(r.json["drops"], expected_drops(cases));
    expect_bytes(r, cases);
}

TEST(NfvPcap, JsonReportsTheEffectiveConfig) {
    PcapRun r = run_pcap({}, {"--interfaces", "10.1.0.1/24", "--no-checksum"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    const nlohmann::json want = {
        {"checksum", false},
        {"pass_non_ip", false},
        {"forward", "reflect"},
        {"mac_swap", true},
        {"bad_src", {"0.0.0.0", "10.1.0.255", "255.255.255.255"}},
        {"good_dst", {"10.1.0.1"}},
        {"interfaces", "10.1.0.1/24"},
        {"bad_port", nullptr},
        {"verbose", false},
    };
    EXPECT_EQ(r.json["nfv"], want);
    linerate::test::expect_json_documented(r.json);
    PcapRun d = run_pcap({});
    EXPECT_EQ(d.json["nfv"]["checksum"], true);
    EXPECT_EQ(d.json["nfv"]["bad_src"], nlohmann::json({"0.0.0.0", "255.255.255.255"}));
    EXPECT_EQ(d.json["nfv"]["good_dst"], nlohmann::json::array());
}

// Rewrites the expected fate of the frames whose reason is `reason`: they now pass (trimmed to
// the IP length when `trim`; the frames of the mix this is used on have no VLAN tags).
std::vector<Case> passing(std::vector<Case> cases, const std::string& reason, bool trim = true) {
    for (auto& c : cases)
        if (c.reason == reason) {
            c.reason.clear();
            c.out = swap_macs(c.frame);
            if (trim) c.out.resize(14 + pkt::load_be16(&c.frame[16]));
        }
    return cases;
}

TEST(NfvPcap, NoChecksumPassesBadChecksums) {
    const auto cases = mix();
    PcapRun r = run_pcap(inputs(cases), {"--no-checksum"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    const auto want = passing(cases, "bad_checksum");
    expect_frames(r.out, expected_out(want));
    EXPECT_EQ(r.json["drops"], expected_drops(want));
    EXPECT_EQ(r.json["drops"]["bad_checksum"], 0);
}

void expect_non_ip_passed_whole(const std::vector<Case>& cases) {
    PcapRun r = run_pcap(inputs(cases), {"--pass-non-ip"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    const auto want = passing(cases, "not_ipv4", false);
    expect_frames(r.out, expected_out(want));
    EXPECT_EQ(r.json["drops"], expected_drops(want));
}

TEST(NfvPcap, PassNonIpForwardsThemWhole) {
    expect_non_ip_passed_whole(mix());
}

TEST(NfvPcap, NoMacSwapOnlyTrims) {
    const auto cases = mix();
    PcapRun r = run_pcap(inputs(cases), {"--no-mac-swap"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    std::vector<Frame> want;
    for (const Frame& f : expected_out(cases)) want.push_back(swap_macs(f));  // swapped back
    expect_frames(r.out, want);
    EXPECT_EQ(r.json["drops"], expected_drops(cases));
}

struct SourceCase {
    std::vector<std::string> args;
    std::string bad;  // letters of the frames below that must be dropped as bad sources
};

class NfvSources : public testing::TestWithParam<SourceCase> {};

TEST_P(NfvSources, ListsDecideBadSources) {
    // a: 0.0.0.0 -> 10.0.0.2         b: 255.255.255.255 -> 10.0.0.2  c: 10.1.0.255 -> 10.0.0.2
    // d: 0.0.0.0 -> 10.1.0.1         e: 10.0.0.9 -> 10.0.0.2         f: 10.0.0.1 -> 10.0.0.2
    const std::map<char, IpSpec> frames = {
        {'a', {.src = ip(0, 0, 0, 0)}},    {'b', {.src = ip(255, 255, 255, 255)}},
        {'c', {.src = ip(10, 1, 0, 255)}}, {'d', {.src = ip(0, 0, 0, 0), .dst = ip(10, 1, 0, 1)}},
        {'e', {.src = ip(10, 0, 0, 9)}},   {'f', {}},
    };
    std::vector<Frame> in, want;
    for (const auto& [name, spec] : frames) {
        in.push_back(ip_frame(spec));
        if (GetParam().bad.find(name) == std::string::npos) want.push_back(forwarded(spec));
    }
    PcapRun r = run_pcap(in, GetParam().args);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    expect_frames(r.out, want);
    EXPECT_EQ(r.json["drops"]["bad_source"], GetParam().bad.size());
    EXPECT_EQ(r.json["dropped"], GetParam().bad.size());
}

INSTANTIATE_TEST_SUITE_P(
    All, NfvSources,
    testing::Values(SourceCase{{}, "abd"}, SourceCase{{"--bad-src", "10.0.0.9"}, "e"},
                    SourceCase{{"--bad-src", ""}, ""},
                    SourceCase{{"--bad-src", "10.0.0.9, 0.0.0.0"}, "ade"},
                    SourceCase{{"--good-dst", "10.0.0.2"}, "d"},
                    SourceCase{{"--interfaces", "10.1.0.1/24"}, "abc"},
                    // Every destination (10.0.0.2, 10.1.0.1) is now ours: all pass.
                    SourceCase{{"--interfaces", "10.1.0.1/24,10.0.0.2/32"}, ""}));

TEST(NfvPcap, VerboseLogsTheFirstFrameOfEachReasonOnce) {
    // Known first frames for two reasons, then the mix five times over.
    std::vector<Case> cases = {invalid(other_frame(0x0806, 60), "not_ipv4"),
                               invalid(Frame(10, 0x11), "tiny_packet")};
    for (int i = 0; i < 5; ++i)
        for (const auto& c : mix()) cases.push_back(c);
    PcapRun r = run_pcap(inputs(cases), {"--verbose"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    size_t lines = 0;
    for (size_t at = 0; (at = r.proc.out.find("nfv: first \"", at)) != std::string::npos; ++at)
        ++lines;
    EXPECT_EQ(lines, 7u) << r.proc.out;  // every reason but "tx_full"
    EXPECT_NE(r.proc.out.find("nfv: first \"not IPv4\" frame: 60 bytes: 02 00 00 00 00 04 02 00 "
                              "00 00 00 03 08 06 5a"),
              std::string::npos)
        << r.proc.out;
    EXPECT_NE(r.proc.out.find("nfv: first \"tiny packet\" frame: 10 bytes: 11 11 11 11 11 11 11 "
                              "11 11 11\n"),
              std::string::npos)
        << r.proc.out;
    PcapRun quiet = run_pcap(inputs(cases));
    EXPECT_EQ(quiet.proc.out.find("nfv: first"), std::string::npos) << quiet.proc.out;
}

// Frames longer than an mbuf's data room (2 KiB) reach nfv as chains of segments (net_pcap
// splits them, as scattered RX on a real port does): the same verdicts, the trim across
// segments (the cut may free whole segments), byte-exact output.
std::vector<Case> jumbo_mix() {
    std::vector<Case> m;
    m.push_back(valid({.ip_total = 2986}));                    // 3000 B
    m.push_back(valid({.ip_total = 8986}));                    // 9000 B
    m.push_back(valid({.ip_total = 6000, .padding = 2986}));   // 9000 B cut inside segment 3
    m.push_back(valid({.ip_total = 2050, .padding = 2136}));   // 4200 B: segment 3 freed
    m.push_back(valid({.ip_total = 2034, .padding = 2048}));   // cut exactly at a segment end
    m.push_back(valid({.ip_total = 1000, .padding = 2000}));   // back into the first segment
    m.push_back(valid({.tags = {0x8100}, .ip_total = 8982}));  // 9000 B, VLAN
    m.push_back(valid({.ver_ihl = 0x4F, .ip_total = 2986}));   // IHL 15
    m.push_back(valid({.ip_total = 46}));
    m.push_back(invalid(ip_frame({.ip_total = 8986, .total_field = 8987}), "bad_length"));
    m.push_back(invalid(ip_frame({.ip_total = 2986, .break_checksum = true}), "bad_checksum"));
    m.push_back(invalid(ip_frame({.ip_total = 8986, .src = ip(0, 0, 0, 0)}), "bad_source"));
    m.push_back(invalid(ip_frame({.ver_ihl = 0x65, .ip_total = 2986}), "bad_version"));
    m.push_back(invalid(other_frame(0x86DD, 9000), "not_ipv4"));
    return m;
}

TEST(NfvPcap, JumboFramesOnChainsGetTheSameVerdictsAndTrim) {
    const auto cases = jumbo_mix();
    PcapRun r = run_pcap(inputs(cases), {"--burst", "5"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    expect_frames(r.out, expected_out(cases));
    EXPECT_EQ(r.json["drops"], expected_drops(cases));
    EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0);
    expect_bytes(r, cases);
}

TEST(NfvPcap, JumboNonIpPassesWhole) {
    expect_non_ip_passed_whole(jumbo_mix());
}

// --forward pair: valid frames from port 0 leave by port 1 and back, trimmed, MACs unchanged;
// the rest is dropped by reason.
TEST(NfvPair, ValidFramesCrossUnchangedOthersAreCounted) {
    const auto a = mix(), b = jumbo_mix();
    auto unswapped = [](const std::vector<Case>& cases) {
        std::vector<Frame> f;
        for (const Frame& x : expected_out(cases)) f.push_back(swap_macs(x));
        return f;
    };
    PcapPortsRun r = run_pcap_ports(kApp, {inputs(a), inputs(b)}, {"--forward", "pair"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    expect_frames(r.out[1], unswapped(a));
    expect_frames(r.out[0], unswapped(b));
    nlohmann::json drops = expected_drops(a);
    const nlohmann::json drops_b = expected_drops(b);
    for (const auto& [reason, n] : drops_b.items())
        drops[reason] = drops[reason].get<int>() + n.get<int>();
    EXPECT_EQ(r.json["drops"], drops);
    EXPECT_EQ(r.json["nfv"]["forward"], "pair");
    EXPECT_EQ(r.json["nfv"]["mac_swap"], false);
    EXPECT_EQ(r.json["rx_packets"], a.size() + b.size());
    EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0);

    PcapPortsRun swapped =
        run_pcap_ports(kApp, {inputs(a), inputs(b)}, {"--forward", "pair", "--mac-swap"});
    ASSERT_EQ(swapped.proc.exit_status, 0) << swapped.proc.out;
    expect_frames(swapped.out[1], expected_out(a));
    expect_frames(swapped.out[0], expected_out(b));
}

// --datapath xdp: which tier handled each frame. BPF_PROG_TEST_RUN makes a frame longer than
// its one-page linear area (4 KiB pages: 4096 - 256 headroom - 320 shared info = 3520 B) a
// multi-buffer frame, which the program leaves to the slow path, the C++ kernel; a frame shorter
// than an Ethernet header it does not take at all (no NIC delivers one), so the C++ kernel has it
// too. Every frame is answered as on the DPDK datapath.
TEST(NfvXdpPcap, TiersSayWhichKernelHandledEachFrame) {
    std::vector<Case> cases = mix();
    for (const Case& c : jumbo_mix()) cases.push_back(c);
    PcapRun r = run_pcap(inputs(cases), {"--datapath", "xdp"});
    if (r.proc.exit_status == 1 && r.proc.out.find("cannot load") != std::string::npos)
        GTEST_SKIP() << r.proc.out;
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    expect_frames(r.out, expected_out(cases));
    EXPECT_EQ(r.json["drops"], expected_drops(cases));
    uint64_t multi_buffer = 0, runts = 0;
    for (const Case& c : cases) {
        multi_buffer += c.frame.size() > 3520;
        runts += c.frame.size() < 14;
    }
    ASSERT_GT(multi_buffer, 0u);
    EXPECT_EQ(r.json["datapath"], "xdp");
    EXPECT_EQ(r.json["xdp"]["tiers"]["slow_path"], multi_buffer + runts);
    EXPECT_EQ(r.json["xdp"]["tiers"]["xdp"], cases.size() - multi_buffer - runts);
    EXPECT_EQ(r.json["xdp"]["program"]["slow_path"], multi_buffer);
    EXPECT_EQ(r.json["xdp"]["program"]["tx"].get<uint64_t>() +
                  r.json["xdp"]["program"]["pass"].get<uint64_t>() +
                  r.json["xdp"]["program"]["drop"].get<uint64_t>(),
              cases.size() - multi_buffer - runts);
}
