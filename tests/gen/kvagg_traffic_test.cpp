// kvagg traffic: the expected sums gen writes equal what an independent reading of the frames
// (a minimal parser here, not kvagg's) adds up, with duplicates and malformed frames excluded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "gen/pcap_out.hpp"
#include "gen/traffic.hpp"
#include "pcapio/pcap_file.hpp"
#include "support/scratch.hpp"

using namespace linerate;
using namespace linerate::gen;

namespace {

uint64_t be(const uint8_t* p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = v << 8 | p[i];
    return v;
}

struct Reading {
    std::map<uint64_t, uint64_t> sums;
    uint64_t tuples = 0, frames = 0, duplicates = 0, refused = 0;
    std::map<uint32_t, uint64_t> next_seq;  // per stream
    bool seq_in_order = true;
};

// The kvagg layout of docs/wire-formats.md, read straight from the offsets of its table.
void read_frame(Reading& r, const uint8_t* f, size_t len,
                std::set<std::pair<uint32_t, uint64_t>>& seen) {
    ++r.frames;
    ASSERT_GE(len, 64u);
    ASSERT_EQ(be(f + 12, 2), 0x0800u);
    ASSERT_EQ(be(f + 36, 2), 9000u);  // UDP destination port
    const uint64_t udp_len = be(f + 38, 2);
    const uint64_t n = be(f + 46, 2);
    if (be(f + 42, 2) != 0x4B56 || f[44] != 1 || f[45] != 0 || 8 + 22 + 16 * n > udp_len) {
        ++r.refused;
        return;
    }
    const auto stream = uint32_t(be(f + 48, 4));
    const uint64_t seq = be(f + 52, 8);
    EXPECT_EQ(be(f + 60, 4), 0u);
    if (!seen.insert({stream, seq}).second) {
        ++r.duplicates;
        return;
    }
    if (seq != r.next_seq[stream]) r.seq_in_order = false;
    r.next_seq[stream] = seq + 1;
    for (uint64_t i = 0; i < n; ++i) {
        r.sums[be(f + 64 + 16 * i, 8)] += be(f + 72 + 16 * i, 8);
        ++r.tuples;
    }
}

std::map<uint64_t, uint64_t> read_csv(const std::string& path, std::vector<uint64_t>& order) {
    std::map<uint64_t, uint64_t> m;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        auto comma = line.find(',');
        uint64_t k = std::stoull(line.substr(0, comma)), v = std::stoull(line.substr(comma + 1));
        m[k] = v;
        order.push_back(k);
    }
    return m;
}

std::string temp(const std::string& name) {
    return linerate::test::scratch(name);
}

}  // namespace

struct KvCase {
    std::string name;
    uint32_t tuples;
    uint64_t keys;
    DistSpec dist;
    uint32_t streams;
    double dup, malformed;
    uint64_t vmin, vmax;
    friend void PrintTo(const KvCase& c, std::ostream* os) { *os << c.name; }
};

class GenKvSums : public testing::TestWithParam<KvCase> {};

TEST_P(GenKvSums, ExpectedSumsEqualARecomputationFromThePcap) {
    const KvCase& k = GetParam();
    TrafficConfig c;
    c.kind = Kind::kvagg;
    c.tuples = k.tuples;
    c.keys = k.keys;
    c.dist = k.dist;
    c.streams = k.streams;
    c.dup_share = k.dup;
    c.malformed_share = k.malformed;
    c.value_min = k.vmin;
    c.value_max = k.vmax;
    c.track_expected = true;
    TrafficPlan plan(c);
    const std::string pcap = temp("kv.pcap"), csv = temp("kv.csv");
    const uint64_t count = 3000;
    PcapSummary s = write_traffic_pcap(plan, count, pcap, 0);
    s.expected.write_csv(csv);

    Reading r;
    std::set<std::pair<uint32_t, uint64_t>> seen;
    pcapio::PcapReader in(pcap);
    while (auto f = in.next()) {
        ASSERT_EQ(f->size(), 64 + 16 * k.tuples);
        read_frame(r, f->data(), f->size(), seen);
    }
    EXPECT_EQ(r.frames, count);
    EXPECT_TRUE(r.seq_in_order) << "sequence numbers per stream go 0, 1, 2 ...";
    EXPECT_EQ(r.duplicates, s.classes[size_t(FrameClass::kv_duplicate)]);
    EXPECT_EQ(r.refused, s.classes[size_t(FrameClass::kv_malformed)]);
    if (k.dup > 0) {
        EXPECT_GT(r.duplicates, 0u);
    }
    if (k.malformed > 0) {
        EXPECT_GT(r.refused, 0u);
    }
    EXPECT_EQ(r.next_seq.size(), std::min<uint64_t>(k.streams, count));

    std::vector<uint64_t> order;
    auto written = read_csv(csv, order);
    EXPECT_EQ(written, r.sums);
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
    EXPECT_EQ(order.size(), written.size());
    ExpectedTotals t = s.expected.totals();
    EXPECT_EQ(t.keys, r.sums.size());
    EXPECT_EQ(t.tuples, r.tuples);
    uint64_t total = 0;
    for (auto& [key, v] : r.sums) {
        EXPECT_LT(key, k.keys);
        total += v;
    }
    EXPECT_EQ(t.sum, total);
}

INSTANTIATE_TEST_SUITE_P(
    All, GenKvSums,
    testing::Values(KvCase{"plain", 32, 1024, {}, 16, 0, 0, 1, 100},
                    KvCase{"zipf_dup_malformed", 8, 100000, {true, 0.99}, 4, 0.1, 0.1, 0, 1000000},
                    KvCase{"one_key_dups", 1, 1, {}, 1, 0.3, 0.0, 5, 5},
                    KvCase{"jumbo_wrapping", 558, 5000, {true, 1.5}, 7, 0.05, 0.2, 0, ~0ull},
                    KvCase{"half_malformed", 16, 64, {}, 3, 0.0, 0.5, 1, 10}),
    [](const auto& p) { return p.param.name; });

TEST(GenKv, UnsendTakesAFrameBackOutOfTheSums) {
    TrafficConfig c;
    c.kind = Kind::kvagg;
    c.tuples = 4;
    c.keys = 10;
    c.track_expected = true;
    c.dup_share = 0.5;
    TrafficPlan plan(c);
    Traffic t(plan);
    std::vector<uint8_t> f(plan.frame_len());
    FrameInfo a;
    do a = t.next(f.data());
    while (a.cls != FrameClass::normal);
    const ExpectedTotals before = t.expected().totals();
    EXPECT_EQ(before.tuples % 4, 0u);
    FrameInfo b;
    do b = t.next(f.data());
    while (b.cls != FrameClass::normal);
    t.unsend(f.data(), b);
    const ExpectedTotals after = t.expected().totals();
    EXPECT_EQ(after.tuples, before.tuples);
    EXPECT_EQ(after.sum, before.sum);
    // A duplicate right after an unsent frame would repeat a frame kvagg never saw.
    FrameInfo next = t.next(f.data());
    EXPECT_NE(next.cls, FrameClass::kv_duplicate);
}

TEST(GenKv, StreamsAreSourcePortsAndWorkersSplitThem) {
    TrafficConfig c;
    c.kind = Kind::kvagg;
    c.streams = 6;
    c.tuples = 2;
    TrafficPlan plan(c);
    for (unsigned w = 0; w < 2; ++w) {
        Traffic t(plan, w, 2);
        std::vector<uint8_t> f(plan.frame_len());
        for (int i = 0; i < 12; ++i) {
            t.next(f.data());
            const uint64_t stream = be(&f[48], 4);
            EXPECT_EQ(stream % 2, w);
            EXPECT_EQ(be(&f[34], 2), 1024 + stream);
            EXPECT_EQ(be(&f[52], 8), uint64_t(i / 3));  // 3 streams each, round robin
        }
    }
}
