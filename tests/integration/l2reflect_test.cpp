// l2reflect end to end: pcap mode byte-exact, virtual ports with counters, signals, regions,
// command-line errors.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>

#include <unistd.h>
#include <sstream>

#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "pcapio/pcap_file.hpp"
#include "pkt/bytes.hpp"
#include "support/doc_table.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;
using pcapio::Frame;

namespace {

const std::string kApp = binary("apps/l2reflect/l2reflect");

// Random frames of every size in [min_len, max_len] cycling through odd ethertypes and 802.3
// length fields.
std::vector<Frame> random_frames(size_t count, size_t min_len, size_t max_len, unsigned seed) {
    const uint16_t types[] = {0x0800, 0x86DD, 0x0806, 0x8100, 0x88A8, 0x88CC,
                              0x1234, 0xFFFF, 0x0000, 0x05DC, 0x88F7, 0x8847};
    std::mt19937 rng(seed);
    std::vector<Frame> frames;
    for (size_t i = 0; i < count; ++i) {
        size_t len = min_len + (max_len > min_len ? rng() % (max_len - min_len + 1) : 0);
        Frame f(len);
        for (auto& b : f) b = uint8_t(rng());
        if (len >= 14) pkt::store_be16(&f[12], types[i % std::size(types)]);
        frames.push_back(f);
    }
    return frames;
}

Frame swapped(Frame f) {
    if (f.size() >= 14)
        for (int i = 0; i < 6; ++i) std::swap(f[i], f[6 + i]);
    return f;
}

uint64_t bytes(const std::vector<Frame>& frames) {
    uint64_t n = 0;
    for (const auto& f : frames) n += f.size();
    return n;
}

PcapRun run_pcap(const std::vector<Frame>& in, const std::vector<std::string>& extra = {}) {
    return run_pcap_app(kApp, in, extra);
}

}  // namespace

TEST(L2reflectPcap, ReflectsEveryFrameExactlyWithMacsSwapped) {
    auto in = random_frames(2000, 60, 1514, 1);
    auto start = std::chrono::steady_clock::now();
    PcapRun r = run_pcap(in);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_LT(secs, 5.0);
    ASSERT_EQ(r.out.size(), in.size());
    for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(r.out[i], swapped(in[i])) << "frame " << i;
    EXPECT_EQ(r.json["app"], "l2reflect");
    EXPECT_EQ(r.json["rx_packets"], 2000);
    EXPECT_EQ(r.json["tx_packets"], 2000);
    EXPECT_EQ(r.json["dropped"], 0);
    EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0);
    expect_json_documented(r.json);
}

// cycles_per_packet is busy_cycles / rx_packets, per worker and in total; every burst that
// returned frames was busy for some cycles.
TEST(L2reflectPcap, CyclesPerPacketIsBusyCyclesOverFramesReceived) {
    PcapRun r = run_pcap(random_frames(2000, 60, 1514, 3));
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    const uint64_t busy = r.json["busy_cycles"], rx = r.json["rx_packets"];
    EXPECT_GT(busy, 0u);
    EXPECT_DOUBLE_EQ(r.json["cycles_per_packet"].get<double>(), double(busy) / double(rx));
    EXPECT_GT(r.json["tsc_hz"].get<uint64_t>(), 0u);
    const nlohmann::json& w = r.json["workers"][0];
    EXPECT_EQ(w["busy_cycles"], busy);
    EXPECT_DOUBLE_EQ(w["cycles_per_packet"].get<double>(), double(busy) / double(rx));
    EXPECT_NE(r.proc.out.find("cycles per packet"), std::string::npos) << r.proc.out;
}

TEST(L2reflectPcap, EveryFrameSizeFrom60To1514) {
    std::vector<Frame> in;
    for (size_t len = 60; len <= 1514; ++len)
        in.push_back(random_frames(1, len, len, unsigned(len))[0]);
    PcapRun r = run_pcap(in, {"--burst", "7"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    ASSERT_EQ(r.out.size(), in.size());
    for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(r.out[i], swapped(in[i])) << "frame " << i;
}

TEST(L2reflectPcap, RuntsAreDroppedAndCounted) {
    std::vector<Frame> in = random_frames(30, 60, 128, 3);
    std::vector<Frame> want;
    size_t runts = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        if (i % 3 == 0) {
            in[i].resize(1 + i % 13);  // 1..13 bytes: no room for an Ethernet header
            ++runts;
        } else {
            want.push_back(swapped(in[i]));
        }
    }
    PcapRun r = run_pcap(in);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.out, want);
    EXPECT_EQ(r.json["drops"]["runt"], runts);
    EXPECT_EQ(r.json["rx_packets"], in.size());
    EXPECT_EQ(r.json["tx_packets"], want.size());
    // Bytes: all that came in, and only the reflected frames out.
    EXPECT_EQ(r.json["rx_bytes"], bytes(in));
    EXPECT_EQ(r.json["tx_bytes"], bytes(want));
}

// The loop leaves kept frames in place and takes rejected ones out after the burst: runts first,
// side by side, and last in a burst (of 32, and of 64, the default) leave the kept frames in
// order around them.
TEST(L2reflectPcap, RuntsAtABurstsEdgesAndSideBySideLeaveTheRestInOrder) {
    std::vector<Frame> in = random_frames(64, 60, 128, 5);
    std::vector<Frame> want;
    const std::set<size_t> runt_at = {0, 1, 15, 16, 17, 31, 32, 62, 63};
    for (size_t i = 0; i < in.size(); ++i) {
        if (runt_at.count(i))
            in[i].resize(1 + i % 13);
        else
            want.push_back(swapped(in[i]));
    }
    for (const char* burst : {"32", "64"}) {
        SCOPED_TRACE(burst);
        PcapRun r = run_pcap(in, {"--burst", burst});
        ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
        EXPECT_EQ(r.out, want);
        EXPECT_EQ(r.json["drops"]["runt"], runt_at.size());
        EXPECT_EQ(r.json["tx_packets"], want.size());
        EXPECT_EQ(r.json["rx_bytes"], bytes(in));
        EXPECT_EQ(r.json["tx_bytes"], bytes(want));
    }
}

TEST(L2reflectPcap, EmptyAndTruncatedInputsEndCleanly) {
    PcapRun empty = run_pcap({});
    ASSERT_EQ(empty.proc.exit_status, 0) << empty.proc.out;
    EXPECT_TRUE(empty.out.empty());
    EXPECT_EQ(empty.json["rx_packets"], 0);

    std::string in_path = scratch("trunc.pcap"), out_path = scratch("trunc_out.pcap");
    pcapio::write_frames(in_path, random_frames(10, 100, 100, 4));
    ASSERT_EQ(truncate(in_path.c_str(), 24 + 9 * 116 + 50), 0);  // the 10th record cut short
    auto r = run_process({kApp, "--pcap", in_path + ":" + out_path}, {.timeout_s = 30});
    EXPECT_EQ(r.exit_status, 0) << r.out;
    EXPECT_EQ(pcapio::read_frames(out_path).size(), 9u);
    EXPECT_NE(r.out.find("truncated dump file; tried to read 100 captured bytes, only got 34; "
                         "delivering the 9 whole records before it (bytes 0-1068 of 1118), the "
                         "remaining 50 bytes are not read"),
              std::string::npos)
        << r.out;
}

namespace {

// A pcap file written byte by byte (little-endian, microsecond stamps), so tests can give it any
// link type and damaged records.
struct RawPcap {
    std::string bytes;
    explicit RawPcap(uint32_t link_type, uint32_t snaplen = 65535) {
        put(0xA1B2C3D4);
        put(2 | 4u << 16);  // version 2.4
        put(0);
        put(0);
        put(snaplen);
        put(link_type);
    }
    void put(uint32_t v) { bytes.append(reinterpret_cast<const char*>(&v), 4); }
    void record(const Frame& f, uint32_t caplen) {
        put(0);
        put(0);
        put(caplen);
        put(uint32_t(f.size()));
        bytes.append(f.begin(), f.end());
    }
    std::string write() const {
        std::string path = scratch("raw.pcap");
        std::ofstream(path, std::ios::binary) << bytes;
        return path;
    }
};

}  // namespace

TEST(L2reflectPcap, LinkTypeOtherThanEthernetIsRefused) {
    RawPcap raw_ip(101);  // LINKTYPE_RAW: IPv4 packets without an Ethernet header
    for (const Frame& f : random_frames(3, 60, 60, 11)) raw_ip.record(f, uint32_t(f.size()));
    const std::string in = raw_ip.write(), out = scratch("out.pcap");
    expect_usage_error(kApp, {"--pcap", in + ":" + out},
                       "link type Raw IP, not Ethernet: the apps read Ethernet frames only");
    EXPECT_NE(access(out.c_str(), F_OK), 0) << "the run started";
}

TEST(L2reflectPcap, RecordWithoutCapturedBytesIsRefused) {
    RawPcap file(1);
    const auto frames = random_frames(3, 60, 60, 12);
    file.record(frames[0], 60);
    file.record({}, 0);  // caplen 0: net_pcap would make an empty frame of it
    file.record(frames[2], 60);
    const std::string in = file.write();
    expect_usage_error(kApp, {"--pcap", in}, "record 2 has no captured byte (caplen 0)");
}

// An absurd caplen stops libpcap with an error; asked again it would read on from inside the
// damaged record, where these bytes look like a whole record. Only the records before the
// damage may come out, and the warning says what was read and what was not.
TEST(L2reflectPcap, AbsurdCaplenDeliversOnlyTheRecordsBeforeIt) {
    const auto frames = random_frames(5, 60, 200, 13);
    RawPcap file(1);
    for (const Frame& f : frames) file.record(f, uint32_t(f.size()));
    const size_t good = file.bytes.size();
    file.put(0);
    file.put(0);
    file.put(0x7FFFFFF0);
    file.put(0x7FFFFFF0);
    Frame decoy = random_frames(1, 60, 60, 14)[0];
    for (int i = 0; i < 3; ++i) file.record(decoy, 60);
    const std::string in = file.write(), out = scratch("out.pcap"), json = scratch("r.json");
    auto r = run_process({kApp, "--pcap", in + ":" + out, "--json", json}, {.timeout_s = 30});
    EXPECT_EQ(r.exit_status, 0) << r.out;
    EXPECT_NE(r.out.find("warning: --pcap " + in + ": invalid packet capture length 2147483632"),
              std::string::npos)
        << r.out;
    EXPECT_NE(
        r.out.find("delivering the 5 whole records before it (bytes 0-" + std::to_string(good) +
                   " of " + std::to_string(file.bytes.size()) + "), the remaining " +
                   std::to_string(file.bytes.size() - good) + " bytes are not read"),
        std::string::npos)
        << r.out;
    auto sent = pcapio::read_frames(out);
    ASSERT_EQ(sent.size(), frames.size());
    for (size_t i = 0; i < frames.size(); ++i) EXPECT_EQ(sent[i], swapped(frames[i])) << i;
    EXPECT_EQ(read_json(json)["rx_packets"], frames.size());
}

// net_pcap has no rte_flow: --isolate cannot be honoured, and the app says so in one line.
TEST(L2reflectPcap, IsolateOnAPortWithoutFlowIsolationIsAUsageError) {
    PcapRun r = run_pcap_app(kApp, {}, {"--isolate"});
    EXPECT_EQ(r.proc.exit_status, 2) << r.proc.out;
    EXPECT_NE(r.proc.out.find("l2reflect: --isolate: port 0 (net_pcap_linerate) cannot be put in "
                              "flow isolated mode"),
              std::string::npos)
        << r.proc.out;
    std::istringstream out(r.proc.out);
    size_t lines = 0;
    for (std::string line; std::getline(out, line);) lines += line.find("--isolate") != line.npos;
    EXPECT_EQ(lines, 1u) << r.proc.out;
    EXPECT_TRUE(r.json.is_null());  // it never ran
}

TEST(L2reflectPcap, MissingInputIsAUsageError) {
    auto r = run_process({kApp, "--pcap", "/nonexistent/in.pcap"});
    EXPECT_EQ(r.exit_status, 2);
    EXPECT_NE(r.out.find("cannot read pcap"), std::string::npos) << r.out;
}

// net_pcap hands frames longer than an mbuf's data room (2 KiB) over as chains of segments.
const std::vector<size_t> kJumboSizes = {3000, 9000, 2048, 2049, 4096, 4097, 6144, 9018, 60};

std::vector<Frame> jumbo_frames(unsigned seed) {
    std::vector<Frame> in;
    for (size_t len : kJumboSizes)
        in.push_back(random_frames(1, len, len, seed + unsigned(len))[0]);
    return in;
}

TEST(L2reflectPcap, JumboFramesOnChainsComeBackWhole) {
    const std::vector<Frame> in = jumbo_frames(11);
    PcapRun r = run_pcap(in, {"--burst", "4"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    ASSERT_EQ(r.out.size(), in.size());
    for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(r.out[i], swapped(in[i])) << "frame " << i;
    EXPECT_EQ(r.json["rx_bytes"], bytes(in));
    EXPECT_EQ(r.json["tx_bytes"], bytes(in));
    EXPECT_EQ(r.json["dropped"], 0);
    EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0);
}

// net_pcap's infinite_rx (issue 22) reads its whole file into mbufs at queue setup, one
// unchained mbuf per frame, and replays them: the pool is sized to the file (4096 frames, one of
// 9014 B) by the app, or an explicit --mbufs too small for it stops the app in one line that
// names the figure and the flag.
TEST(L2reflectPcap, InfiniteRxGetsAnMbufForEveryFrameOfItsFile) {
    std::vector<Frame> in = random_frames(4095, 60, 1514, 31);
    in.push_back(random_frames(1, 9014, 9014, 32)[0]);
    const std::string file = scratch("infinite.pcap"), json = scratch("infinite.json");
    pcapio::write_frames(file, in);
    auto argv = [&](const std::vector<std::string>& args) {
        std::vector<std::string> a = {kApp};
        for (const std::string& e : no_huge_eal()) a.push_back(e);
        a.insert(a.end(), {"--vdev=net_pcap0,rx_pcap=" + file + ",infinite_rx=1", "--",
                           "--stats-period", "0", "--json", json});
        a.insert(a.end(), args.begin(), args.end());
        return a;
    };
    ProcessResult r = run_process(argv({"--duration", "1"}));
    ASSERT_EQ(r.exit_status, 0) << r.out;
    EXPECT_NE(r.out.find("l2reflect: port 0 (net_pcap0): mbufs of 9142 B data room for "
                         "infinite_rx (no mbuf chains) and a 9014 B frame\n"),
              std::string::npos)
        << r.out;
    nlohmann::json j = read_json(json);
    EXPECT_GT(j["rx_packets"].get<uint64_t>(), in.size()) << "the file was not replayed";
    EXPECT_EQ(j["rx_packets"], j["tx_packets"].get<uint64_t>() + j["dropped"].get<uint64_t>());
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0) << r.out;

    r = run_process(argv({"--duration", "1", "--mbufs", "4095"}));
    EXPECT_EQ(r.exit_status, 1) << r.out;
    EXPECT_NE(r.out.find("l2reflect: port 0 (net_pcap0): infinite_rx holds the 4096 frames of " +
                         file + " for the whole run, so --mbufs 4095 is too few: give --mbufs "),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("rx_queue_setup"), std::string::npos) << r.out;
}

TEST(L2reflectPair, EachPortsFramesLeaveByTheOtherUnchanged) {
    const std::vector<Frame> a = random_frames(300, 60, 1514, 21), b = jumbo_frames(22);
    PcapPortsRun r = run_pcap_ports(kApp, {a, b}, {"--forward", "pair"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.out[1], a);  // port 0's frames out of port 1, byte for byte
    EXPECT_EQ(r.out[0], b);
    EXPECT_EQ(r.json["forward"], "pair");
    EXPECT_EQ(r.json["mac_swap"], false);
    EXPECT_EQ(r.json["rx_packets"], a.size() + b.size());
    EXPECT_EQ(r.json["tx_packets"], a.size() + b.size());
    EXPECT_EQ(r.json["tx_bytes"], bytes(a) + bytes(b));
    EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0);
}

TEST(L2reflectPair, MacSwapOnRequestAndFourPortsMakeTwoPairs) {
    const std::vector<Frame> a = random_frames(50, 60, 200, 31), b = random_frames(40, 60, 200, 32),
                             c = jumbo_frames(33), d = random_frames(20, 60, 200, 34);
    PcapPortsRun r = run_pcap_ports(kApp, {a, b, c, d}, {"--forward", "pair", "--mac-swap"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    auto all_swapped = [](std::vector<Frame> f) {
        for (auto& x : f) x = swapped(x);
        return f;
    };
    EXPECT_EQ(r.out[0], all_swapped(b));
    EXPECT_EQ(r.out[1], all_swapped(a));
    EXPECT_EQ(r.out[2], all_swapped(d));
    EXPECT_EQ(r.out[3], all_swapped(c));
    EXPECT_EQ(r.json["mac_swap"], true);
}

TEST(L2reflectPair, OddPortCountIsRefused) {
    const std::string in = scratch("odd.pcap");
    pcapio::write_frames(in, random_frames(3, 60, 60, 5));
    auto r = run_process({kApp, "--pcap", in, "--forward", "pair"}, {.timeout_s = 30});
    EXPECT_EQ(r.exit_status, 2) << r.out;
    EXPECT_NE(r.out.find("--forward pair needs an even number of ports, 1 in use"),
              std::string::npos)
        << r.out;
}

namespace {

nlohmann::json run_net_null(const std::string& lcores, std::vector<std::string> app_args,
                            RunOptions opts = {}) {
    std::string json_path = scratch("null.json");
    std::vector<std::string> argv = {kApp};
    auto eal = no_huge_eal(lcores);
    argv.insert(argv.end(), eal.begin(), eal.end());
    argv.insert(argv.end(), {"--vdev=net_null0", "--", "--json", json_path, "--stats-period", "0"});
    argv.insert(argv.end(), app_args.begin(), app_args.end());
    ProcessResult r = run_process(argv, opts);
    EXPECT_EQ(r.exit_status, 0) << r.out;
    auto j = read_json(json_path);
    return j;
}

void expect_conserved(const nlohmann::json& j) {
    ASSERT_TRUE(j.is_object());
    uint64_t rx = j["rx_packets"], tx = j["tx_packets"], dropped = j["dropped"];
    EXPECT_GT(rx, 0u);
    EXPECT_EQ(rx, tx + dropped);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    uint64_t sum = 0;
    for (const auto& w : j["workers"]) {
        EXPECT_EQ(w["rx_packets"].get<uint64_t>(),
                  w["tx_packets"].get<uint64_t>() + w["dropped"].get<uint64_t>());
        sum += w["rx_packets"].get<uint64_t>();
    }
    EXPECT_EQ(sum, rx);
}

}  // namespace

TEST(L2reflectNetNull, DurationRunConservesPackets) {
    auto j = run_net_null("0", {"--duration", "0.5"});
    expect_conserved(j);
    EXPECT_EQ(j["workers"].size(), 1u);
    EXPECT_GE(j["duration_s"].get<double>(), 0.5);
}

TEST(L2reflectNetNull, TwoWorkersConservePackets) {
    auto j = run_net_null("0@0,1@0,2@1", {"--duration", "0.5"});
    expect_conserved(j);
    ASSERT_EQ(j["workers"].size(), 2u);
    for (const auto& w : j["workers"]) EXPECT_GT(w["rx_packets"].get<uint64_t>(), 0u);
}

// l2reflect on net_null until `sig`, sent once start-up is over (its worker map is printed) and
// frames flowed for a moment: not after a fixed delay, which on a loaded machine, under a
// sanitizer or qemu, can fall inside EAL start-up.
nlohmann::json run_net_null_until(const std::string& lcores, int sig) {
    const std::string json_path = scratch("null_signal.json");
    std::vector<std::string> argv = {kApp};
    for (const std::string& a : no_huge_eal(lcores)) argv.push_back(a);
    argv.insert(argv.end(), {"--vdev=net_null0", "--", "--json", json_path, "--stats-period", "0"});
    BackgroundProcess app(argv);
    EXPECT_TRUE(app.wait_for_output(": running", 60)) << app.output();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    app.signal(sig);
    const ProcessResult r = app.finish(30);
    EXPECT_EQ(r.exit_status, 0) << r.out;
    EXPECT_NE(r.out.find("stopped by signal " + std::to_string(sig)), std::string::npos) << r.out;
    return read_json(json_path);
}

TEST(L2reflectNetNull, SigintGivesSummaryJsonAndNoLeak) {
    expect_conserved(run_net_null_until("0-1", SIGINT));
}

TEST(L2reflectNetNull, SigtermAlsoStopsCleanly) {
    expect_conserved(run_net_null_until("0", SIGTERM));
}

class L2reflectRegions : public testing::TestWithParam<std::string> {};

TEST_P(L2reflectRegions, PoolLivesInTheRegion) {
    std::string region = GetParam();
    if (region == "file") region = "file:" + scratch("netbuf.bin") + ",size=64M,create";
    auto j = run_net_null("0", {"--duration", "0.3", "--netbuf", region});
    expect_conserved(j);
    std::string where = j["netbuf"];
    EXPECT_NE(where.find("region " + region), std::string::npos) << where;
    if (region.rfind("socket", 0) == 0)
        EXPECT_NE(where.find(": socket 0"), std::string::npos) << where;
    else
        EXPECT_NE(where.find("external heap"), std::string::npos) << where;
}

INSTANTIATE_TEST_SUITE_P(All, L2reflectRegions,
                         testing::Values("socket:0", "pages:4k", "pages:thp", "file"),
                         [](const auto& param_info) { return identifier(param_info.param); });

TEST(L2reflectNetNull, RegionAliasFromDefinition) {
    auto j =
        run_net_null("0", {"--duration", "0.2", "--region", "arm=pages:4k", "--netbuf", "arm"});
    expect_conserved(j);
    EXPECT_NE(j["netbuf"].get<std::string>().find("region arm (pages:4k)"), std::string::npos);
}

// --xdp-steer asks for the steering program: a port without it (no AF_XDP here) is an error
// that says how to attach it, never a silent run that hands the app every frame.
TEST(L2reflectNetNull, XdpSteerWithoutTheProgramFails) {
    std::vector<std::string> argv = {kApp};
    auto eal = no_huge_eal("0");
    argv.insert(argv.end(), eal.begin(), eal.end());
    argv.insert(argv.end(), {"--vdev=net_null0", "--", "--duration", "0.2", "--xdp-steer", "ipv4"});
    ProcessResult r = run_process(argv);
    EXPECT_EQ(r.exit_status, 1) << r.out;
    EXPECT_NE(r.out.find("--xdp-steer: no net_af_xdp port's interface has linerate's steering "
                         "program (use --af-xdp IFACE, or attach it with the vdev's xdp_prog="),
              std::string::npos)
        << r.out;
}

class L2reflectCliErrors : public testing::TestWithParam<CliCase> {};

TEST_P(L2reflectCliErrors, ExitTwoWithOneLine) {
    expect_usage_error(kApp, GetParam().args, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    All, L2reflectCliErrors,
    testing::Values(
        CliCase{{"--frobnicate"}, "not expected: --frobnicate"},
        CliCase{{"--burst", "0"}, "--burst"}, CliCase{{"--burst", "many"}, "--burst"},
        CliCase{{"--stats-period", "-1"}, "--stats-period"},
        CliCase{{"--netbuf", "pages:2m"}, "bad region 'pages:2m'"},
        CliCase{{"--netbuf", "socket:x"}, "bad region 'socket:x'"},
        CliCase{{"--netbuf", "file:/tmp/x,size=12Q"}, "bad size suffix"},
        CliCase{{"--netbuf", "dpa"}, "unknown region alias 'dpa'"},
        CliCase{{"--region", "=pages:4k"}, "bad region alias name"},
        CliCase{{"--ports", "0,x"}, "bad port id 'x'"},
        CliCase{{"--xdp-steer", "udp:0"}, "bad --xdp-steer 'udp:0'"},
        CliCase{{"--xdp-steer", "tcp"}, "bad --xdp-steer 'tcp'"},
        CliCase{{"--netbuf", "file:/tmp/x,size=99999999999999999999"},
                "size out of range: '99999999999999999999'"},
        CliCase{{"--netbuf", "file:/tmp/x,size=18446744073709551615"},
                "size out of range: '18446744073709551615'"},
        CliCase{{"--netbuf", "file:/tmp/x,size=16777216G"}, "size out of range"},
        CliCase{{"--netbuf", "file:/tmp/x,size=1M,creat"}, "unknown option 'creat'"},
        CliCase{{"--touch", "101"}, "--touch: Value 101 not in range 0 to 100"},
        CliCase{{"--lookups", "4097"}, "--lookups: Value 4097 not in range"},
        CliCase{{"--lookup-buffer", "1M"},
                "--lookup-buffer, --lookup-region and --lookup-kind need --lookups"},
        CliCase{{"--lookups", "2", "--lookup-buffer", "1K"},
                "--lookup-buffer: 1K is outside 4.0 KiB .. 32.0 GiB"},
        CliCase{{"--lookups", "2", "--lookup-buffer", "4100"},
                "--lookup-buffer: 4100 is not a multiple of 8 bytes"},
        CliCase{{"--lookups", "2", "--lookup-buffer", "8Q"}, "bad size suffix"},
        CliCase{{"--lookups", "2", "--lookup-region", "pages:2m"},
                "--lookup-region: bad region 'pages:2m'"},
        CliCase{{"--lookups", "2", "--lookup-region", "dpa"}, "unknown region alias 'dpa'"},
        CliCase{{"--lookups", "2", "--lookup-kind", "chained"},
                "--lookup-kind: chained not in {dependent,independent}"},
        CliCase{{"--touch", "50", "--datapath", "xdp"},
                "--touch and --lookups are the poll loop's work: not with --datapath "
                "xdp"},
        CliCase{{"--duration", "nan"}, "--duration: must be a finite number"},
        CliCase{{"--duration", "inf"}, "--duration: must be a finite number"},
        CliCase{{"--duration", "-1"}, "--duration: must be a finite number"},
        CliCase{{"--stats-period", "nan"}, "--stats-period: must be a finite number"},
        CliCase{{"--link-wait", "nan"}, "--link-wait: must be a finite number"},
        CliCase{{"--mbufs", "64"}, "--mbufs 64 is too small for a per-lcore cache of 256 mbufs"},
        CliCase{{"--mbufs", "100", "--mbuf-cache", "67"}, "--mbuf-cache 66 or less"},
        CliCase{{"--ports", "0,0"}, "port 0 is given twice in --ports"},
        CliCase{{"--ports", "1,2,1"}, "port 1 is given twice in --ports"},
        CliCase{{"--json", "/nonexistent/dir/r.json"},
                "--json /nonexistent/dir/r.json: No such file or directory"},
        CliCase{{"--json", "/tmp"}, "--json /tmp: is a directory"},
        CliCase{{"--vdev=net_null0"}, "EAL args go before `--`"},
        CliCase{{"-l", "0", "--duration", "1"}, "EAL args go before `--`"}));

// A mistyped region file must not become a new file; `,create` asks for one.
TEST(L2reflectCli, MissingRegionFileIsAnErrorUnlessCreateIsAsked) {
    const std::string path = scratch("no_such_netbuf.bin");
    const std::string pcap = scratch("in.pcap");
    pcapio::write_frames(pcap, random_frames(3, 60, 60, 9));
    expect_usage_error(kApp, {"--pcap", pcap, "--netbuf", "file:" + path},
                       "region file:" + path + ": " + path +
                           ": No such file or directory (add ,create to create it)");
    EXPECT_NE(access(path.c_str(), F_OK), 0) << path << " was created";
    auto r = run_process({kApp, "--pcap", pcap, "--netbuf", "file:" + path + ",create"});
    EXPECT_EQ(r.exit_status, 0) << r.out;
    EXPECT_EQ(access(path.c_str(), F_OK), 0) << path << " was not created";
}

// --json is checked before anything runs: nothing is transmitted, nothing is left behind.
TEST(L2reflectCli, UnwritableJsonStopsBeforeTheRun) {
    const std::string pcap = scratch("in.pcap"), out = scratch("out.pcap");
    pcapio::write_frames(pcap, random_frames(3, 60, 60, 10));
    expect_usage_error(kApp, {"--pcap", pcap + ":" + out, "--json", "/proc/no/r.json"},
                       "--json /proc/no/r.json:");
    EXPECT_NE(access(out.c_str(), F_OK), 0) << "the run started";
}

TEST(L2reflectCli, PortsTheEalDoesNotHaveAreUsageErrors) {
    auto eal = no_huge_eal();
    std::vector<std::string> args = eal;
    args.insert(args.end(), {"--vdev=net_null0", "--", "--ports", "7"});
    expect_usage_error(kApp, args, "port 7 does not exist (1 ports probed)");
    args = eal;
    args.insert(args.end(), {"--", "--duration", "1"});
    expect_usage_error(kApp, args, "no ethdev ports");
}

// A second primary on the same --file-prefix: the EAL alone says "Cannot init config".
TEST(L2reflectCli, SecondProcessOnTheSameFilePrefixIsAUsageError) {
    const std::string prefix = "lrprefix" + std::to_string(getpid());
    ProcessResult first;
    std::thread runner([&] {
        first = run_process({kApp, "-l", "0", "--no-huge", "-m", "256", "--no-pci",
                             "--no-telemetry", "--file-prefix=" + prefix, "--vdev=net_null0", "--",
                             "--duration", "3", "--stats-period", "0"},
                            {.timeout_s = 30});
    });
    // Wait until the first one holds the prefix (its netbuf line is printed after EAL init).
    const std::string config = "/var/run/dpdk/" + prefix + "/config";
    for (int i = 0; i < 200 && access(config.c_str(), F_OK) != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    expect_usage_error(kApp,
                       {"-l", "1", "--no-huge", "-m", "256", "--no-pci", "--no-telemetry",
                        "--file-prefix", prefix, "--vdev=net_null0", "--", "--duration", "1"},
                       "runs with --file-prefix " + prefix + ": give this one its own");
    runner.join();
    EXPECT_EQ(first.exit_status, 0) << first.out;
    system(("rm -rf /var/run/dpdk/" + prefix).c_str());
}

TEST(L2reflectCli, HelpExitsZeroAndListsOptions) {
    auto r = run_process({kApp, "--help"});
    EXPECT_EQ(r.exit_status, 0);
    for (const char* opt : {"--burst", "--netbuf", "--pcap", "--json", "--duration", "--region"})
        EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
}

TEST(L2reflectTelemetry, StatsCommandAnswersWhileRunning) {
    if (!telemetry_client_installed()) GTEST_SKIP() << "dpdk-telemetry.py not installed";
    const std::string prefix = "lrtest" + std::to_string(getpid());
    std::vector<std::string> argv = eal_command(kApp, "0", prefix);
    argv.insert(argv.end(), {"--vdev=net_null0", "--", "--stats-period", "0"});
    BackgroundProcess running(argv);
    std::string raw;
    auto answers =
        telemetry_query_when_ready(prefix, {"/linerate/stats", "/linerate/drops"}, 20, &raw);
    running.signal(SIGINT);
    const ProcessResult app = running.finish(30);
    EXPECT_EQ(app.exit_status, 0) << app.out;
    EXPECT_EQ(answers[0]["app"], "l2reflect") << raw;
    EXPECT_TRUE(answers[0]["workers_rx_packets"].is_array()) << raw;
    EXPECT_EQ(answers[1], nlohmann::json({{"runt", 0}, {"split_header", 0}, {"tx_full", 0}}))
        << raw;
    system(("rm -rf /var/run/dpdk/" + prefix).c_str());
}

// --touch and --lookups only read: the frames come back exactly as without them, and the JSON
// has the exact sum of the touched words (little-endian, whole words of the percentage).
TEST(L2reflectMemoryWork, PcapOutputUnchangedAndTouchSumExact) {
    const auto in = random_frames(2000, 60, 1514, 11);
    const PcapRun plain = run_pcap(in);
    ASSERT_EQ(plain.proc.exit_status, 0) << plain.proc.out;
    for (unsigned pct : {25u, 100u}) {
        uint64_t sum = 0, touched = 0;
        for (const Frame& f : in) {
            const size_t words = f.size() * pct / 100 / 8;
            for (size_t w = 0; w < words; ++w)
                for (size_t b = 0; b < 8; ++b) sum += uint64_t(f[w * 8 + b]) << (8 * b);
            touched += words * 8;
        }
        const PcapRun r = run_pcap(in, {"--touch", std::to_string(pct), "--lookups", "4",
                                        "--lookup-buffer", "64K", "--lookup-region", "pages:4k"});
        ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
        EXPECT_EQ(r.out, plain.out) << pct;
        const nlohmann::json& w = r.json["workers"][0];
        EXPECT_EQ(w["touch_sum"].get<uint64_t>(), sum) << pct;
        EXPECT_EQ(w["touched_bytes"].get<uint64_t>(), touched) << pct;
        EXPECT_EQ(w["lookups"].get<uint64_t>(), 4 * in.size());
        EXPECT_EQ(r.json["memory_work"]["touch_pct"], pct);
        EXPECT_EQ(r.json["memory_work"]["lookups"], 4);
        EXPECT_EQ(r.json["memory_work"]["lookup_kind"], "dependent");
        EXPECT_EQ(r.json["memory_work"]["lookup_buffer_bytes"], 65536);
        EXPECT_NE(r.json["memory_work"]["lookup_region"].get<std::string>().find("pages:4k"),
                  std::string::npos);
        EXPECT_EQ(r.json["mempool_in_use_at_exit"], 0);
        expect_json_documented(r.json);
    }
}

// A dependent walk of 8192 reads (4 per frame) round a 64 KiB buffer's 8192-slot cycle reads
// every slot index once: their sum is 0 + 1 + ... + 8191. Independent reads are counted too.
TEST(L2reflectMemoryWork, LookupsWalkTheWholeCycle) {
    const auto in = random_frames(2048, 60, 60, 12);
    const PcapRun r = run_pcap(in, {"--lookups", "4", "--lookup-buffer", "64K"});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.json["workers"][0]["lookups"], 8192);
    EXPECT_EQ(r.json["workers"][0]["lookup_sum"], 8192ull * 8191 / 2);
    EXPECT_FALSE(r.json["workers"][0].contains("touch_sum"));
    const PcapRun ind = run_pcap(in, {"--lookups", "3", "--lookup-kind", "independent"});
    ASSERT_EQ(ind.proc.exit_status, 0) << ind.proc.out;
    EXPECT_EQ(ind.out, r.out);
    EXPECT_EQ(ind.json["workers"][0]["lookups"], 3 * 2048);
    EXPECT_EQ(ind.json["memory_work"]["lookup_kind"], "independent");
    EXPECT_EQ(ind.json["memory_work"]["lookup_buffer_bytes"], 8 << 20);
}

// Off, nothing of it is in the JSON.
TEST(L2reflectMemoryWork, OffLeavesNoTrace) {
    const PcapRun r = run_pcap(random_frames(10, 60, 60, 13));
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_FALSE(r.json.contains("memory_work"));
    EXPECT_FALSE(r.json["workers"][0].contains("touched_bytes"));
}
