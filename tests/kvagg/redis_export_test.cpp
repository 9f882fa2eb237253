// kvagg --export's parts (apps/kvagg/redis_cluster.hpp, redis_export.hpp): the cluster's key
// slots (CRC16 per the cluster specification), the seeds' syntax (redis:// required), the
// backlog's bound, and the apply script against a real one-node Redis Cluster on 127.0.0.1
// (redis-server started here in a scratch directory; skips without redis-server): an epoch
// applied twice counts once, a later one adds, u64 sums exact mod 2^64 across 2^63 and 2^64, a
// field that is not an integer held apart and added once repaired, the sums read back with
// redis-cli. A Redis without cluster mode and a closed port are told apart. --export-auth: its
// file, a node with `requirepass` and the least-privilege ACL user (missing and wrong
// credentials refused in one line; a password changed while running keeps the backlog).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kvagg/redis_export.hpp"
#include "redis_node.hpp"
#include "support/process.hpp"

using namespace linerate::kvagg;
using namespace linerate::test;
using namespace linerate::kvagg::test;

TEST(RedisSlot, Crc16MatchesTheClusterSpecification) {
    EXPECT_EQ(crc16_xmodem("123456789"), 0x31C3);  // the specification's check value
    EXPECT_EQ(cluster_slot("foo"), 12182);         // CLUSTER KEYSLOT foo
    EXPECT_EQ(cluster_slot("{user1000}.following"), cluster_slot("user1000"));
    EXPECT_EQ(cluster_slot("foo{}{bar}"), crc16_xmodem("foo{}{bar}") % 16384);  // empty tag
    EXPECT_EQ(cluster_slot("foo{{bar}}zap"), crc16_xmodem("{bar") % 16384);
    EXPECT_EQ(cluster_slot(export_sums_key(7)), cluster_slot(export_marker_key(7)));
    EXPECT_EQ(export_sums_key(7), "kvagg:{p7}:sums");
}

TEST(RedisSlot, SeedsParsed) {
    const auto s = parse_redis_seeds("redis://127.0.0.1:7000,localhost:7001,redis://h:7002");
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].name(), "127.0.0.1:7000");
    EXPECT_EQ(s[1].name(), "localhost:7001");
    EXPECT_EQ(s[2].name(), "h:7002");
    for (const char* bad :
         {"", "redis://", "redis://h", "redis://h:0", "redis://h:65536", "redis://h:12x",
          "redis://:1", "redis://h:1,", "127.0.0.1:7000", "http://127.0.0.1:7000",
          "redis://http://h:1", "redis://u@h:1", "rediss://h:1", "redis://h:1,http://h:2"})
        EXPECT_THROW(parse_redis_seeds(bad), std::invalid_argument) << bad;
    try {
        parse_redis_seeds("127.0.0.1:7000");
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()),
                  "--export 127.0.0.1:7000: not redis://HOST:PORT[,HOST:PORT...] (the scheme "
                  "redis:// first)");
    }
}

TEST(ExportBacklog, BoundAndDurability) {
    ExportCounters c;
    ExportBacklog b(2, c);
    EXPECT_EQ(b.add({{1, 5}}), 1u);
    EXPECT_FALSE(b.full());
    EXPECT_EQ(b.oldest_durable(std::chrono::milliseconds(0)), nullptr);  // not checkpointed
    b.durable_through(1);
    ASSERT_NE(b.oldest_durable(std::chrono::milliseconds(0)), nullptr);
    EXPECT_EQ(b.add({{2, 6}}), 2u);
    EXPECT_TRUE(b.full());
    EXPECT_EQ(c.backlog.load(), 2u);
    b.acknowledged(1);
    EXPECT_FALSE(b.full());
    const ExportImage im = b.image();
    ASSERT_EQ(im.epochs.size(), 1u);
    EXPECT_EQ(im.epochs[0]->epoch, 2u);
    EXPECT_EQ(im.next_epoch, 3u);
    b.add({{2, 1}, {7, ~uint64_t(0)}});
    const std::vector<AggSlot> left = b.sums_left();  // epochs 2 and 3, per key
    ASSERT_EQ(left.size(), 2u);
    EXPECT_EQ(left[0].key, 2u);
    EXPECT_EQ(left[0].value, 7u);
    EXPECT_EQ(left[1].value, ~uint64_t(0));
}

// An exporter (instance 0xabc) on a one-node cluster.
class OneNodeExport : public testing::Test {
  protected:
    void SetUp() override {
        if (!redis_installed()) GTEST_SKIP() << "redis-server or redis-cli not installed";
        node.emplace(RedisMode::one_node_cluster);
        ASSERT_TRUE(node->ready());
        cluster.emplace(std::vector<RedisEndpoint>{{"127.0.0.1", node->port()}},
                        std::chrono::milliseconds(2000));
        ex.emplace(*cluster, 0xabc, c, std::chrono::milliseconds(100));
    }
    std::optional<RedisNode> node;
    std::optional<RedisCluster> cluster;
    ExportCounters c;
    std::optional<RedisExporter> ex;
};

TEST_F(OneNodeExport, AnEpochAppliedTwiceCountsOnce) {
    const ExportEpoch e1{1, {{3, 10}, {16 + 3, 7}, {4, ~uint64_t(0)}}};  // 4: -1 in Redis
    EXPECT_TRUE(ex->export_epoch(e1));
    EXPECT_TRUE(ex->export_epoch(e1));  // done already: nothing sent again
    EXPECT_EQ(c.applied.load(), 2u);    // partitions 3 and 4
    EXPECT_EQ(c.already.load(), 0u);
    // A restart that sends its backlog again (a new exporter: it does not know what it sent).
    RedisExporter again(*cluster, 0xabc, c, std::chrono::milliseconds(100));
    EXPECT_TRUE(again.export_epoch(e1));
    EXPECT_EQ(c.already.load(), 2u);
    EXPECT_TRUE(ex->export_epoch({2, {{3, 1}}}));
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 3"), "11\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 19"), "7\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p4}:sums' 4"), "-1\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:epochs' 0000000000000abc"), "2\n");
    EXPECT_TRUE(ex->export_epoch(e1));  // an old epoch after a newer one: still nothing
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 3"), "11\n");
    // The script flushed from the node: NOSCRIPT, then EVAL.
    node->cli("SCRIPT FLUSH");
    EXPECT_TRUE(ex->export_epoch({3, {{3, 1}}}));
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 3"), "12\n");
}

// u64 sums mod 2^64 whatever they cross: the values, sums over 2^63 and past 2^64
// between epochs, and random deltas (most near the bounds) on 64 keys over 40 epochs; every
// field read back equals the u64 sum.
TEST_F(OneNodeExport, U64SumsExactModTwoToThe64) {
    constexpr uint64_t kTop = uint64_t(1) << 63;
    const std::vector<std::vector<AggSlot>> epochs{
        {{1193043, kTop + 1}, {1, ~uint64_t(0)}, {2, kTop - 1}, {3, kTop}, {4, 5}},
        {{1, kTop + 1}, {2, 1}, {3, kTop}, {4, ~uint64_t(0) - 4}},  // INT64_MIN, 2^63, 0, 0
        {{2, kTop - 1}, {3, kTop + 7}, {4, kTop}},                  // 2: 2^64 - 1; 3: past 2^64
        {{2, 5}, {3, ~uint64_t(0)}, {4, kTop}},                     // 2: wraps to 4
    };
    std::map<uint64_t, uint64_t> want;
    uint64_t epoch = 0;
    for (const auto& sums : epochs) {
        EXPECT_TRUE(ex->export_epoch({++epoch, sums}));
        for (const AggSlot& s : sums) want[s.key] += s.value;
    }
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 1193043"), "-9223372036854775807\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p1}:sums' 1"), "-9223372036854775808\n");
    std::mt19937_64 rng(46);
    const uint64_t near[] = {0, 1, kTop - 1, kTop, kTop + 1, ~uint64_t(0)};
    for (int i = 0; i < 40; ++i) {
        std::vector<AggSlot> sums;
        for (uint64_t k = 100; k < 164; ++k)
            if (rng() % 4 != 0)
                sums.push_back({k, rng() % 3 ? near[rng() % 6] + rng() % 9 : rng()});
        EXPECT_TRUE(ex->export_epoch({++epoch, sums}));
        for (const AggSlot& s : sums) want[s.key] += s.value;
    }
    std::erase_if(want, [](const auto& kv) { return kv.second == 0; });
    std::map<uint64_t, uint64_t> got = sums_in_redis(*node);
    std::erase_if(got, [](const auto& kv) { return kv.second == 0; });  // fields that came to 0
    EXPECT_TRUE(got == want);
    EXPECT_EQ(c.errors.load(), 0u);
    EXPECT_EQ(c.held.load(), 0u);
}

// A field that is not an integer (another writer's): its delta is held apart, everything else
// of the batch applied and later epochs too; once the field is an integer again its held delta
// (a wrapping sum of several epochs) is added, exactly; one line each way.
TEST_F(OneNodeExport, ABadFieldIsHeldApart) {
    constexpr uint64_t kTop = uint64_t(1) << 63;
    node->cli("HSET 'kvagg:{p3}:sums' 35 oops");
    testing::internal::CaptureStderr();
    EXPECT_TRUE(ex->export_epoch({1, {{3, 10}, {19, 5}, {35, kTop + 1}}}));
    EXPECT_TRUE(ex->export_epoch({2, {{3, 1}, {35, kTop}, {4, 2}}}));
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 3"), "11\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 19"), "5\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p4}:sums' 4"), "2\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 35"), "oops\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:held' 35"), "1\n");  // 2^63 + 1 + 2^63 mod 2^64
    EXPECT_EQ(c.held.load(), 2u);
    EXPECT_EQ(c.held_fields.load(), 1u);
    EXPECT_EQ(c.errors.load(), 0u);
    node->cli("HSET 'kvagg:{p3}:sums' 35 -9223372036854775808");  // repaired: an integer
    EXPECT_TRUE(ex->holding());
    ex->release_held();
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 35"), "-9223372036854775807\n");
    EXPECT_EQ(node->cli("EXISTS 'kvagg:{p3}:held'"), "0\n");
    EXPECT_EQ(c.released.load(), 1u);
    EXPECT_EQ(c.held_fields.load(), 0u);
    EXPECT_FALSE(ex->holding());
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err,
              "kvagg: --export: field 35 of kvagg:{p3}:sums is not an integer: its delta is held "
              "in kvagg:{p3}:held and added once it is one (1 fields held there)\n"
              "kvagg: --export: the deltas held in kvagg:{p3}:held are applied\n");
}

// A held hash that is not kvagg's (a non-integer in it): an error reply before any write, so a
// retry adds nothing twice; the partitions done before it in the epoch are not sent again
// (already_applied counts only real repeats).
TEST_F(OneNodeExport, AnErrorReplyAppliesNothingAndARetrySendsOnlyWhatIsLeft) {
    node->cli("HSET 'kvagg:{p5}:held' 99 oops");
    const ExportEpoch e1{1, {{3, 10}, {5, 1}, {7, 2}}};
    EXPECT_THROW(ex->export_epoch(e1), RedisError);
    EXPECT_THROW(ex->export_epoch(e1), RedisError);
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 3"), "10\n");  // before partition 5
    EXPECT_EQ(node->cli("HGET 'kvagg:{p5}:sums' 5"), "\n");    // nil: nothing written
    EXPECT_EQ(c.applied.load(), 1u);
    node->cli("HDEL 'kvagg:{p5}:held' 99");
    EXPECT_TRUE(ex->export_epoch(e1));
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 3"), "10\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p5}:sums' 5"), "1\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p7}:sums' 7"), "2\n");
    EXPECT_EQ(c.applied.load(), 3u);
    EXPECT_EQ(c.already.load(), 0u);
}

TEST(RedisExport, NotClusterAndUnreachableToldApart) {
    if (!redis_installed()) GTEST_SKIP() << "redis-server or redis-cli not installed";
    RedisNode plain(RedisMode::plain);
    ASSERT_TRUE(plain.ready());
    RedisCluster standalone({{"127.0.0.1", plain.port()}}, std::chrono::milliseconds(500));
    EXPECT_THROW(standalone.refresh_slots(), RedisNotCluster);
    RedisCluster closed({{"127.0.0.1", free_port()}}, std::chrono::milliseconds(500));
    try {
        closed.refresh_slots();
        ADD_FAILURE() << "no throw";
    } catch (const RedisNotCluster&) {
        ADD_FAILURE() << "a closed port is not a standalone Redis";
    } catch (const RedisError& e) {
        EXPECT_NE(std::string(e.what()).find("no Redis Cluster node answered"), std::string::npos);
    }
}

TEST(RedisAuthFile, PasswordOrUserAndPasswordOnOneLine) {
    const RedisAuth p = parse_redis_auth("  s3cret\n", "F");
    EXPECT_EQ(p.user, "");
    EXPECT_EQ(p.password, "s3cret");
    const RedisAuth u = parse_redis_auth("kvagg \t pw!#x\r\n", "F");
    EXPECT_EQ(u.user, "kvagg");
    EXPECT_EQ(u.password, "pw!#x");
    for (const char* bad : {"", " \n", "a b c", "a\nb", "user pw\nmore"}) {
        try {
            parse_redis_auth(bad, "F");
            ADD_FAILURE() << "taken: '" << bad << "'";
        } catch (const std::invalid_argument& e) {
            EXPECT_EQ(std::string(e.what()),
                      "file F must hold one line: PASSWORD (requirepass) or USER "
                      "PASSWORD (an ACL user)");
        }
    }
}

TEST(RedisAuthFile, ReadOnlyWhenNeitherGroupNorOthersMay) {
    const std::string f = write_file_with_mode("auth", "kvagg pw\n", 0600);
    EXPECT_EQ(load_redis_auth(f).user, "kvagg");
    chmod(f.c_str(), 0640);
    try {
        load_redis_auth(f);
        ADD_FAILURE() << "a group-readable password was taken";
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), "file " + f +
                                             " is accessible by group or others (mode 0640): "
                                             "chmod 600 " +
                                             f);
    }
    EXPECT_THROW(load_redis_auth(scratch("no-such-file")), std::invalid_argument);
    EXPECT_THROW(load_redis_auth("/tmp"), std::invalid_argument);  // not a regular file
}

// A one-node cluster with `requirepass` and the least-privilege ACL user.
class PasswordNode : public testing::Test {
  protected:
    void SetUp() override {
        if (!redis_installed()) GTEST_SKIP() << "redis-server or redis-cli not installed";
        std::vector<std::string> extra{"--requirepass", "admin-pw"};
        const std::vector<std::string> user = kvagg_acl_user("kvagg-pw");
        ASSERT_FALSE(user.empty()) << "docs/scale-out.md gives no `user kvagg on >PASSWORD` line";
        extra.insert(extra.end(), user.begin(), user.end());
        node.emplace(RedisMode::one_node_cluster, extra, "admin-pw");
        ASSERT_TRUE(node->ready());
        ASSERT_EQ(node->cli("CLUSTER INFO").find("cluster_state:ok") != std::string::npos, true);
    }
    std::vector<RedisEndpoint> seeds() const { return {{"127.0.0.1", node->port()}}; }
    // What refresh_slots() says with `auth` (empty: no throw).
    std::string refusal_with(const RedisAuth& auth) const {
        RedisCluster cluster(seeds(), std::chrono::milliseconds(2000), auth);
        try {
            cluster.refresh_slots();
        } catch (const RedisAuthError& e) {
            return e.what();
        }
        return "";
    }
    std::optional<RedisNode> node;
};

TEST_F(PasswordNode, MissingOrWrongCredentialsRefusedInOneLine) {
    const std::string at = node->address();
    EXPECT_EQ(refusal_with({}), "Redis at " + at +
                                    " wants a password (give --export-auth FILE): NOAUTH "
                                    "Authentication required.");
    EXPECT_EQ(refusal_with({"", "wrong"}),
              "Redis at " + at +
                  " refused --export-auth: WRONGPASS invalid username-password pair or user is "
                  "disabled.");
    EXPECT_EQ(refusal_with({"kvagg", "admin-pw"}),
              "Redis at " + at +
                  " refused --export-auth: WRONGPASS invalid username-password pair or user is "
                  "disabled.");
    EXPECT_EQ(refusal_with({"", "admin-pw"}), "");
    EXPECT_EQ(refusal_with({"kvagg", "kvagg-pw"}), "");
}

// The ACL user of docs/scale-out.md may do everything the export does: the script loaded, run
// by SHA and (after SCRIPT FLUSH) by EVAL, the markers read; exact sums.
TEST_F(PasswordNode, TheLeastPrivilegeUserExports) {
    RedisCluster cluster(seeds(), std::chrono::milliseconds(2000), {"kvagg", "kvagg-pw"});
    ExportCounters c;
    RedisExporter ex(cluster, 0xabc, c, std::chrono::milliseconds(100));
    EXPECT_TRUE(ex.export_epoch({1, {{3, 10}, {19, 7}, {4, ~uint64_t(0)}}}));
    EXPECT_TRUE(ex.export_epoch({1, {{3, 10}, {19, 7}, {4, ~uint64_t(0)}}}));  // a retry
    node->cli("SCRIPT FLUSH");
    EXPECT_TRUE(ex.export_epoch({2, {{3, 5}}}));
    EXPECT_EQ(c.applied.load(), 3u);
    EXPECT_EQ(c.already.load(), 0u);  // the retry: nothing sent again
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 3"), "15\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 19"), "7\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p4}:sums' 4"), "-1\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:epochs' 0000000000000abc"), "2\n");
}

// The password changed on the server while kvagg runs (and its connection dropped, as a restart
// would): one line says Redis refuses --export-auth, the epoch waits in the backlog, retried;
// once the password is back, it is applied once: the sums exact.
TEST_F(PasswordNode, APasswordChangedWhileRunningKeepsTheBacklog) {
    ExportCounters c;
    ExportBacklog backlog(8, c);
    backlog.set_instance(0xdef);
    ExportThread exporter(backlog, seeds(), std::chrono::milliseconds(500), c, {"", "admin-pw"});
    EXPECT_EQ(exporter.connect_now(), 1u);
    exporter.start();
    const auto wait_until = [](auto done) {
        for (int i = 0; i < 300 && !done(); ++i) usleep(20'000);
        return done();
    };
    backlog.durable_through(backlog.add({{5, 10}}));
    ASSERT_TRUE(wait_until([&] { return c.epochs.load() == 1; }));
    testing::internal::CaptureStderr();
    node->cli("CONFIG SET requirepass changed-pw");
    node->set_cli_password("changed-pw");
    node->cli("CLIENT KILL TYPE normal");  // kvagg's connection: it connects again
    backlog.durable_through(backlog.add({{5, 7}}));
    const uint64_t errors = c.errors.load();
    EXPECT_TRUE(wait_until([&] { return c.errors.load() >= errors + 3; }));
    EXPECT_EQ(backlog.size(), 1u);
    EXPECT_EQ(node->cli("HGET 'kvagg:{p5}:sums' 5"), "10\n");
    node->cli("CONFIG SET requirepass admin-pw");
    node->set_cli_password("admin-pw");
    EXPECT_TRUE(wait_until([&] { return c.epochs.load() == 2; }));
    exporter.stop();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(backlog.size(), 0u);
    EXPECT_EQ(node->cli("HGET 'kvagg:{p5}:sums' 5"), "17\n");
    const std::string refused = "kvagg: --export: Redis at " + node->address() +
                                " refused --export-auth: WRONGPASS invalid username-password pair "
                                "or user is disabled.; retrying\n";
    size_t lines = 0;
    for (size_t at = err.find(refused); at != std::string::npos; at = err.find(refused, at + 1))
        ++lines;
    EXPECT_EQ(lines, 1u) << err;
    EXPECT_NE(err.find("kvagg: --export: Redis answers again\n"), std::string::npos) << err;
}

// --export-auth given to a Redis without any password: Redis refuses AUTH, a configuration
// error told at start.
TEST(RedisExport, AuthToARedisWithoutPasswordRefused) {
    if (!redis_installed()) GTEST_SKIP() << "redis-server or redis-cli not installed";
    RedisNode open(RedisMode::one_node_cluster);
    ASSERT_TRUE(open.ready());
    RedisCluster cluster({{"127.0.0.1", open.port()}}, std::chrono::milliseconds(2000), {"", "pw"});
    try {
        cluster.refresh_slots();
        ADD_FAILURE() << "no throw";
    } catch (const RedisAuthError& e) {
        EXPECT_NE(std::string(e.what()).find("refused --export-auth: ERR AUTH <password> called "
                                             "without any password configured"),
                  std::string::npos)
            << e.what();
    }
}
