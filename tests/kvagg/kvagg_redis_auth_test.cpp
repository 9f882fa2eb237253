// kvagg --export with --export-auth end to end on 127.0.0.1 (no root, no namespace): six
// redis-server processes (three primaries, three replicas, `redis-cli --cluster create`) with
// `requirepass` (`masterauth` for the replicas) and the least-privilege ACL user of
// docs/scale-out.md; kvagg on a pcap trace (--pcap) with one seed, so that it learns the other
// primaries through CLUSTER SLOTS and authenticates to each. The sums in Redis, read back with
// redis-cli -a, grow by the trace's exact sums, with the requirepass password and with the ACL
// user; a wrong password, none, or a file others may read: exit 2 with one line.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kvagg_trace.hpp"
#include "redis_node.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;
using namespace linerate::kvagg::test;

namespace {

const std::string kApp = binary("apps/kvagg/kvagg");
const char* const kAdminPassword = "admin-Pw-4711";
const char* const kUserPassword = "kvagg-Pw-0815";

// Good kvagg frames on 4 streams, keys anywhere in u64 (0 and ~0 too), values below 10^6: sums
// that fit Redis's signed 64 bits (the apply script refuses the others); their sums.
struct SmallTrace {
    std::vector<pcapio::Frame> frames;
    std::map<uint64_t, uint64_t> sums;
};
SmallTrace small_trace(unsigned seed, unsigned frames) {
    std::mt19937_64 rng(seed);
    SmallTrace t;
    std::vector<uint64_t> next(4, 0);
    for (unsigned i = 0; i < frames; ++i) {
        std::vector<kvagg::KvTuple> tuples(1 + rng() % 60);
        for (kvagg::KvTuple& tp : tuples) {
            const uint64_t specials[] = {0, ~0ull, rng()};
            tp.key = rng() % 8 == 0 ? specials[rng() % 3] : rng() % 5000;
            tp.value = rng() % 1'000'000;
            t.sums[tp.key] += tp.value;
        }
        const uint32_t stream = uint32_t(rng() % next.size());
        t.frames.push_back(
            kvagg::make_kv_frame(kvagg::test::kv_spec(stream), stream, next[stream]++, tuples));
    }
    std::erase_if(t.sums, [](const auto& kv) { return kv.second == 0; });  // not exported
    return t;
}

class PasswordCluster : public testing::Test {
  protected:
    static void SetUpTestSuite() {
        if (!redis_installed()) return;
        std::vector<std::string> extra{"--requirepass", kAdminPassword,           "--masterauth",
                                       kAdminPassword,  "--cluster-node-timeout", "2000"};
        for (const std::string& a : kvagg_acl_user(kUserPassword)) extra.push_back(a);
        cluster_ = std::make_unique<SixNodeCluster>(extra, kAdminPassword);
    }
    static void TearDownTestSuite() { cluster_.reset(); }
    void SetUp() override {
        if (!redis_installed()) GTEST_SKIP() << "redis-server or redis-cli not installed";
        ASSERT_FALSE(kvagg_acl_user("x").empty())
            << "docs/scale-out.md gives no `user kvagg on >PASSWORD` line";
        ASSERT_TRUE(cluster_->ready()) << "the six-node cluster did not come up";
    }

    static std::map<uint64_t, uint64_t> sums_in_redis() { return cluster_->sums(); }

    // kvagg on `trace` exporting to the cluster through its first node, `args` added; its JSON
    // goes to `json`.
    static ProcessResult run_kvagg(const std::vector<pcapio::Frame>& trace,
                                   const std::vector<std::string>& args,
                                   const std::string& json = scratch("kv.json")) {
        const std::string in = scratch("in.pcap");
        pcapio::write_frames(in, trace);
        std::vector<std::string> argv{kApp,
                                      "--pcap",
                                      in,
                                      "--json",
                                      json,
                                      "--stats-period",
                                      "0",
                                      "--dup-window",
                                      "256",
                                      "--max-streams",
                                      "4",
                                      "--keys",
                                      "10000",
                                      "--export",
                                      "redis://" + cluster_->node(0).address()};
        argv.insert(argv.end(), args.begin(), args.end());
        return run_process(argv, {.timeout_s = 60});
    }

    // The trace's sums added to Redis exactly: each key's value grew by its sum (wrapping), and
    // no other key changed. kvagg's JSON: nothing left in the backlog, every primary reached.
    static void expect_exported(const SmallTrace& t, const std::vector<std::string>& auth) {
        const std::map<uint64_t, uint64_t> before = sums_in_redis();
        const std::string json = scratch("kv.json");
        const ProcessResult r = run_kvagg(t.frames, auth, json);
        ASSERT_EQ(r.exit_status, 0) << r.out;
        std::map<uint64_t, uint64_t> grew;
        for (const auto& [k, v] : sums_in_redis())
            if (const auto b = before.find(k); v != (b == before.end() ? 0 : b->second))
                grew[k] = v - (b == before.end() ? 0 : b->second);
        EXPECT_EQ(grew.size(), t.sums.size()) << r.out;
        EXPECT_TRUE(grew == t.sums);
        const nlohmann::json j = read_json(json);
        EXPECT_EQ(j["export"]["backlog"], 0);
        EXPECT_GE(j["export"]["epochs"].get<uint64_t>(), 1u);
        EXPECT_GE(j["export"]["connects"].get<uint64_t>(), 3u) << "AUTH to each primary";
        EXPECT_EQ(j["kvagg"]["export_auth"], auth[1]);
        for (const char* secret : {kAdminPassword, kUserPassword})
            EXPECT_EQ(r.out.find(secret), std::string::npos) << "a password printed";
    }

    // kvagg refused at start: exit 2, and `needle` on exactly one line.
    static void expect_refused(const std::vector<std::string>& args, const std::string& needle) {
        const ProcessResult r = run_kvagg({}, args);
        EXPECT_EQ(r.exit_status, 2) << r.out;
        std::istringstream lines(r.out);
        int found = 0;
        for (std::string line; std::getline(lines, line);) found += line.find(needle) != line.npos;
        EXPECT_EQ(found, 1) << needle << " in:\n" << r.out;
    }

    static inline std::unique_ptr<SixNodeCluster> cluster_;
};

TEST_F(PasswordCluster, RequirepassExactSums) {
    const std::string file = write_file_with_mode("pass", std::string(kAdminPassword) + "\n", 0600);
    expect_exported(small_trace(11, 1500), {"--export-auth", file});
}

TEST_F(PasswordCluster, LeastPrivilegeAclUserExactSums) {
    const std::string file =
        write_file_with_mode("user", std::string("kvagg ") + kUserPassword + "\n", 0600);
    expect_exported(small_trace(12, 1500), {"--export-auth", file});
}

TEST_F(PasswordCluster, WrongMissingOrExposedCredentialsExitTwoWithOneLine) {
    const std::string at = cluster_->node(0).address();
    const std::string wrong = write_file_with_mode("wrong", "kvagg not-the-password\n", 0600);
    expect_refused({"--export-auth", wrong},
                   "Redis at " + at +
                       " refused --export-auth: WRONGPASS invalid username-password pair or user "
                       "is disabled.");
    expect_refused({}, "Redis at " + at + " wants a password (give --export-auth FILE): NOAUTH");
    const std::string exposed = write_file_with_mode("exposed", kAdminPassword, 0644);
    expect_refused({"--export-auth", exposed}, "chmod 600 " + exposed);
    const std::string empty = write_file_with_mode("empty", "\n", 0600);
    expect_refused({"--export-auth", empty}, "must hold one line");
}

}  // namespace
