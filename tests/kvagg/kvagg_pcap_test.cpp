// kvagg end to end on pcap files: exact dumps and counters against an independent computation,
// every index/agg mode, table full, regions, jumbo frames on mbuf chains, two workers on two
// queues, and gen's own traces and expected sums.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "kvagg_trace.hpp"
#include "support/checksum.hpp"
#include "support/doc_table.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;
using namespace linerate::kvagg;
using namespace linerate::kvagg::test;

namespace {

const std::string kApp = binary("apps/kvagg/kvagg");
const std::string kGen = binary("bench/gen/linerate-gen");

std::string file_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

uint64_t sum_of(const Dump& d) {
    uint64_t s = 0;
    for (auto [k, v] : d) s += v;
    return s;
}

struct AppRun {
    ProcessResult proc;
    Dump dump;
    std::string dump_text;
    nlohmann::json json;
};

// kvagg on a pcap already written; extra args after the app's own.
AppRun run_file(const std::vector<std::string>& eal, const std::vector<std::string>& args) {
    const std::string dump = scratch("dump.csv"), json = scratch("kv.json");
    std::vector<std::string> argv = {kApp};
    argv.insert(argv.end(), eal.begin(), eal.end());
    if (!eal.empty()) argv.push_back("--");
    argv.insert(argv.end(), {"--dump", dump, "--json", json, "--stats-period", "0"});
    argv.insert(argv.end(), args.begin(), args.end());
    AppRun r;
    r.proc = run_process(argv, {.timeout_s = 60});
    r.dump = read_dump(dump);
    r.dump_text = file_text(dump);
    r.json = read_json(json);
    return r;
}

// The EAL args come from --pcap itself (no hugepages, no PCI, no telemetry), as users run it.
AppRun run_pcap(const std::vector<pcapio::Frame>& frames, std::vector<std::string> args = {}) {
    const std::string in = scratch("in.pcap");
    pcapio::write_frames(in, frames);
    args.insert(args.begin(), {"--pcap", in});
    AppRun r = run_file({}, args);
    return r;
}

// rx == aggregated packets + dropped, for the run and each worker; kvagg sends nothing.
void expect_conserved(const nlohmann::json& j) {
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["rx_packets"].get<uint64_t>(),
              j["aggregated_packets"].get<uint64_t>() + j["dropped"].get<uint64_t>());
    EXPECT_EQ(j["tx_packets"], 0);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    for (const auto& w : j["workers"])
        EXPECT_EQ(w["rx_packets"].get<uint64_t>(), w["aggregated_packets"].get<uint64_t>() +
                                                       w["requests"].get<uint64_t>() +
                                                       w["dropped"].get<uint64_t>());
}

void expect_counters(const nlohmann::json& j, const Expected& e, size_t frames) {
    expect_conserved(j);
    EXPECT_EQ(j["app"], "kvagg");
    EXPECT_EQ(j["rx_packets"], frames);
    EXPECT_EQ(j["aggregated_packets"], e.good);
    EXPECT_EQ(j["tuples"], e.tuples);
    EXPECT_EQ(j["overflow"], 0);
    EXPECT_EQ(j["overflow_sum"], 0);
    EXPECT_EQ(j["keys"], e.sums.size());
    EXPECT_EQ(j["aggregated_sum"], e.sent_sum);
    EXPECT_EQ(j["duplicates"], e.duplicate);
    EXPECT_EQ(j["dropped"], e.dropped());
    const nlohmann::json& d = j["drops"];
    EXPECT_EQ(d["duplicate"], e.duplicate);
    EXPECT_EQ(d["stale"], e.stale);
    EXPECT_EQ(d["too_many_streams"], e.too_many_streams);
    EXPECT_EQ(d["malformed"], e.malformed);
    EXPECT_EQ(d["bad_magic"], e.bad_magic);
    EXPECT_EQ(d["bad_version"], e.bad_version);
    EXPECT_EQ(d["bad_op"], e.bad_op);
    EXPECT_EQ(d["not_kvagg"], e.not_kvagg);
    EXPECT_EQ(d["bad_request"], 0);  // the trace holds no service requests
    EXPECT_EQ(d["control_busy"], 0);
    EXPECT_EQ(d["other_address"], 0);    // no --listen-ip: every address is served
    EXPECT_EQ(d["bad_ip_checksum"], 0);  // the trace's frames carry valid checksums
    EXPECT_EQ(d["bad_udp_checksum"], 0);
    EXPECT_EQ(d["tx_full"], 0);  // every board has it; only responses are transmitted
    EXPECT_EQ(d["bad_auth"], 0);     // no --key
    EXPECT_EQ(d["not_allowed"], 0);  // no --allow: sums from anyone
    EXPECT_EQ(d.size(), 16u);        // packet reasons only: table_full is counted in tuples
}

const std::vector<std::string> kTraceArgs = {"--dup-window", "256",  "--max-streams", "4",
                                             "--keys",       "10000"};

}  // namespace

TEST(KvaggPcap, TraceWithEveryVerdictDumpsExactSums) {
    const Trace t = make_trace({.seed = 1});
    // Every counter is exercised.
    const Expected& e = t.expected;
    for (uint64_t n : {e.duplicate, e.stale, e.too_many_streams, e.malformed, e.bad_magic,
                       e.bad_version, e.bad_op, e.not_kvagg})
        ASSERT_GT(n, 0u);
    ASSERT_TRUE(e.sums.count(0) && e.sums.count(~0ull));

    AppRun r = run_pcap(t.frames, kTraceArgs);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.dump, e.sums);
    expect_counters(r.json, e, t.frames.size());
    EXPECT_EQ(r.json["agg"], "per-worker");
    EXPECT_EQ(r.json["index"], "hash");
    EXPECT_GT(r.json["mtuples_per_s"].get<double>(), 0);
    linerate::test::expect_json_documented(r.json);
    EXPECT_NE(r.proc.out.find("kvagg: aggbuf 1 table x"), std::string::npos) << r.proc.out;
}

TEST(KvaggPcap, SameTraceSameBytes) {
    const Trace t = make_trace({.seed = 2, .frames = 1500});
    AppRun a = run_pcap(t.frames, kTraceArgs), b = run_pcap(t.frames, kTraceArgs);
    ASSERT_EQ(a.proc.exit_status, 0) << a.proc.out;
    EXPECT_FALSE(a.dump_text.empty());
    EXPECT_EQ(a.dump_text, b.dump_text);
}

TEST(KvaggPcap, EmptyInputGivesAnEmptyDump) {
    AppRun r = run_pcap({}, {});  // `kvagg --pcap IN --dump OUT` as documented
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.dump_text, "");
    EXPECT_EQ(r.json["keys"], 0);
    EXPECT_EQ(r.json["tuples"], 0);
}

// --index direct and --agg shared, alone and together, give the dump of the default.
TEST(KvaggPcap, IndexAndAggModesGiveTheSameDump) {
    const Trace t = make_trace({.seed = 3, .dense_keys = 3000, .sparse_keys = false});
    const std::vector<std::vector<std::string>> modes = {
        {},
        {"--index", "direct"},
        {"--agg", "shared"},
        {"--index", "direct", "--agg", "shared"},
    };
    for (const auto& mode : modes) {
        std::vector<std::string> args = kTraceArgs;
        args.insert(args.end(), mode.begin(), mode.end());
        AppRun r = run_pcap(t.frames, args);
        ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
        EXPECT_EQ(r.dump, t.expected.sums) << testing::PrintToString(mode);
        expect_counters(r.json, t.expected, t.frames.size());
        EXPECT_EQ(r.json["agg"],
                  mode.size() >= 2 && mode.back() == "shared" ? "shared" : "per-worker");
    }
}

// --keys below the distinct keys: the refused tuples are counted, their values summed into
// overflow_sum, and sum(dump) + overflow_sum == sum(sent) (mod 2^64).
TEST(KvaggPcap, TableFullConservesTheSum) {
    const Trace t = make_trace({.seed = 4, .dense_keys = 2000, .sparse_keys = false});
    for (const char* index : {"hash", "direct"}) {
        for (const char* agg : {"per-worker", "shared"}) {
            AppRun r = run_pcap(t.frames, {"--dup-window", "256", "--max-streams", "4", "--keys",
                                           "500", "--index", index, "--agg", agg});
            ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
            const nlohmann::json& j = r.json;
            expect_conserved(j);
            EXPECT_EQ(r.dump.size(), 500u);
            EXPECT_EQ(j["keys"], 500);
            EXPECT_GT(j["overflow"].get<uint64_t>(), 0u);
            EXPECT_EQ(j["overflow_tuples"], j["overflow"]);
            EXPECT_EQ(j["tuples"], t.expected.tuples);  // stored + overflow
            EXPECT_EQ(sum_of(r.dump) + j["overflow_sum"].get<uint64_t>(), t.expected.sent_sum);
            EXPECT_EQ(j["aggregated_sum"], sum_of(r.dump));
            EXPECT_EQ(j["aggregated_packets"], t.expected.good);  // overflow is per tuple
            // A stored key holds its whole sum: no key is split between table and overflow.
            for (auto [k, v] : r.dump) EXPECT_EQ(v, t.expected.sums.at(k)) << k;
            if (std::string(index) == "direct") {
                for (auto [k, v] : r.dump) EXPECT_LT(k, 500u);
            }
        }
    }
}

// Frames longer than an mbuf's data room arrive as chains: aggregated all the same.
TEST(KvaggPcap, JumboFramesOnMbufChains) {
    std::vector<pcapio::Frame> frames;
    Dump want;
    std::mt19937_64 rng(5);
    for (uint64_t seq = 0; seq < 40; ++seq) {
        std::vector<KvTuple> tuples(seq % 2 ? 500 : 30);  // 8064-byte and 544-byte frames
        for (KvTuple& tp : tuples) {
            tp = {rng() % 1000, rng()};
            want[tp.key] += tp.value;
        }
        frames.push_back(make_kv_frame(kv_spec(1), 1, seq, tuples));
    }
    AppRun r = run_pcap(frames);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.dump, want);
    EXPECT_EQ(r.json["aggregated_packets"], 40);
    EXPECT_EQ(r.json["dropped"], 0);
}

// A bit flipped on the way must not become a wrong sum: frames whose IPv4 header or UDP
// checksum fails are dropped by reason, 3000 B and 9000 B frames (chains) included, the damage
// anywhere in the chain. --no-verify-checksums aggregates them all, damage included.
TEST(KvaggPcap, FramesFailingAChecksumAreNotAggregated) {
    std::vector<pcapio::Frame> frames;
    Dump good, all;
    uint64_t bad_ip = 0, bad_udp = 0;
    std::mt19937_64 rng(9);
    for (uint64_t seq = 0; seq < 60; ++seq) {
        // 3000 B, 9008 B and 576 B frames.
        std::vector<KvTuple> tuples(seq % 3 == 0 ? 183 : seq % 3 == 1 ? 559 : 32);
        for (KvTuple& tp : tuples) tp = {rng() % 500, rng() % 1000};
        pcapio::Frame f = make_kv_frame(kv_spec(1), 1, seq, tuples);
        const unsigned damage = seq % 10 == 3 ? 1 : seq % 10 == 7 ? 2 : 0;
        // Half carry a UDP checksum, half none (0); a damaged payload needs one to be caught.
        if (seq % 2 || damage == 1) set_udp_checksum(f);
        if (damage == 1) {  // the last tuple's value, at the end of the chain
            f.back() ^= 0x01;
            tuples.back().value ^= 0x01;
            ++bad_udp;
        } else if (damage == 2) {
            f[22] ^= 0x01;  // TTL
            ++bad_ip;
        }
        for (const KvTuple& tp : tuples) {
            all[tp.key] += tp.value;
            if (damage == 0) good[tp.key] += tp.value;
        }
        frames.push_back(f);
    }
    AppRun r = run_pcap(frames);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.dump, good);
    EXPECT_EQ(r.json["drops"]["bad_ip_checksum"], bad_ip);
    EXPECT_EQ(r.json["drops"]["bad_udp_checksum"], bad_udp);
    EXPECT_EQ(r.json["aggregated_packets"], frames.size() - bad_ip - bad_udp);
    expect_conserved(r.json);
    EXPECT_EQ(r.json["kvagg"]["verify_checksums"], true);

    AppRun off = run_pcap(frames, {"--no-verify-checksums"});
    ASSERT_EQ(off.proc.exit_status, 0) << off.proc.out;
    EXPECT_EQ(off.dump, all);
    EXPECT_EQ(off.json["aggregated_packets"], frames.size());
    EXPECT_EQ(off.json["kvagg"]["verify_checksums"], false);
}

// Two workers, each on its own queue of one net_pcap port (one input file per queue, as RSS
// pins a stream to a worker): the merged dump is exact, per-worker tables or one shared table.
TEST(KvaggPcap, TwoWorkersTwoQueuesExact) {
    const Trace a = make_trace({.seed = 6, .frames = 2000, .first_stream = 0});
    const Trace b = make_trace({.seed = 7, .frames = 2000, .first_stream = 4});
    Expected want = a.expected;
    for (auto [k, v] : b.expected.sums) want.sums[k] += v;
    const std::string pa = scratch("a.pcap"), pb = scratch("b.pcap");
    pcapio::write_frames(pa, a.frames);
    pcapio::write_frames(pb, b.frames);
    const std::string vdev = "--vdev=net_pcap0,rx_pcap=" + pa + ",rx_pcap=" + pb +
                             ",tx_pcap=/dev/null,tx_pcap=/dev/null";
    for (const char* agg : {"per-worker", "shared"}) {
        std::vector<std::string> eal = no_huge_eal("0@0,1@0,2@1");
        eal.push_back(vdev);
        AppRun r = run_file(eal, {"--duration", "1.5", "--dup-window", "256", "--max-streams", "4",
                                  "--keys", "10000", "--agg", agg});
        ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
        EXPECT_EQ(r.dump, want.sums) << agg;
        expect_conserved(r.json);
        ASSERT_EQ(r.json["workers"].size(), 2u);
        EXPECT_EQ(r.json["workers"][0]["rx_packets"], a.frames.size());
        EXPECT_EQ(r.json["workers"][1]["rx_packets"], b.frames.size());
        EXPECT_EQ(r.json["aggregated_packets"], a.expected.good + b.expected.good);
        EXPECT_EQ(r.json["duplicates"], a.expected.duplicate + b.expected.duplicate);
        EXPECT_EQ(r.json["aggregated_sum"], a.expected.sent_sum + b.expected.sent_sum);
    }
}

// The AggBuf in every kind of region: same dump, and the JSON tells where it lives.
class KvaggRegions : public testing::TestWithParam<std::string> {};

TEST_P(KvaggRegions, TableLivesInTheRegionAndDumpIsExact) {
    std::string region = GetParam();
    std::string file;
    if (region == "file") {
        file = scratch("aggbuf.bin");
        region = "file:" + file + ",create";
    }
    const Trace t = make_trace({.seed = 8, .frames = 1000});
    std::vector<std::string> args = kTraceArgs;
    args.insert(args.end(), {"--aggbuf", region});
    AppRun r = run_pcap(t.frames, args);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(r.dump, t.expected.sums);
    const std::string where = r.json["aggbuf"];
    std::cout << "aggbuf " << region << " -> " << where << "\n";
    EXPECT_EQ(where.rfind("region " + region + ": ", 0), 0u) << where;
    if (region.rfind("socket", 0) == 0) {
        EXPECT_NE(where.find(": socket 0"), std::string::npos) << where;
    } else {
        EXPECT_NE(where.find("external heap"), std::string::npos) << where;
    }
    if (region == "pages:thp") {
        EXPECT_NE(where.find("2.0 MiB pages"), std::string::npos) << where;
    }
    EXPECT_GE(r.json["aggbuf_bytes"].get<uint64_t>(), 16u * 2 * 10000);
}

INSTANTIATE_TEST_SUITE_P(All, KvaggRegions,
                         testing::Values("socket:0", "pages:4k", "pages:thp", "file"),
                         [](const auto& param_info) { return identifier(param_info.param); });

// gen's traces and its own expected sums (an implementation independent of kvagg's).
TEST(KvaggGen, GenTraceMatchesGenExpectedSums) {
    if (access(kGen.c_str(), X_OK) != 0) GTEST_SKIP() << "gen not built: " << kGen;
    struct Case {
        std::vector<std::string> args;
    };
    const std::vector<Case> cases = {
        {{"--tuples", "32", "--keys", "5000", "--dist", "zipf:0.99", "--streams", "8"}},
        {{"--tuples", "89", "--keys", "100000", "--dist", "uniform", "--value-max",
          "18446744073709551615"}},
        {{"--tuples", "1", "--keys", "64", "--streams", "3"}},
    };
    for (const Case& c : cases) {
        const std::string pcap = scratch("gen.pcap"), expect = scratch("gen.csv"),
                          gen_json = scratch("gen.json");
        std::vector<std::string> argv = {
            kGen,      "--kind",   "kvagg",       "--write-pcap", pcap,
            "--count", "4000",     "--dup-share", "0.05",         "--malformed-share",
            "0.05",    "--expect", expect,        "--json",       gen_json};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        ProcessResult g = run_process(argv);
        ASSERT_EQ(g.exit_status, 0) << g.out;
        const nlohmann::json gj = read_json(gen_json);
        AppRun r = run_file({}, {"--pcap", pcap, "--keys", "200000"});
        ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
        EXPECT_EQ(r.dump_text, file_text(expect)) << testing::PrintToString(c.args);
        const nlohmann::json& j = r.json;
        expect_conserved(j);
        EXPECT_EQ(j["rx_packets"], gj["frames"]);
        EXPECT_EQ(j["aggregated_packets"], gj["classes"]["normal"]);
        EXPECT_EQ(j["duplicates"], gj["classes"]["kv_duplicate"]);
        EXPECT_EQ(j["dropped"], gj["classes"]["kv_duplicate"].get<uint64_t>() +
                                    gj["classes"]["kv_malformed"].get<uint64_t>());
        EXPECT_EQ(j["tuples"], gj["expect"]["tuples"]);
        EXPECT_EQ(j["keys"], gj["expect"]["keys"]);
        EXPECT_EQ(j["aggregated_sum"], gj["expect"]["sum"]);
    }
}
