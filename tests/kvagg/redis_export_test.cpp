// kvagg --export's parts (apps/kvagg/redis_cluster.hpp, redis_export.hpp): the cluster's key
// slots (CRC16 per the cluster specification), the seeds' syntax, the backlog's bound, and the
// apply script against a real one-node Redis Cluster on 127.0.0.1 (redis-server started here in
// a scratch directory; skips without redis-server): an epoch applied twice counts once, a later
// one adds, the sums read back with redis-cli. A Redis without cluster mode and a closed port are
// told apart.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kvagg/redis_export.hpp"
#include "support/process.hpp"

using namespace linerate::kvagg;
using namespace linerate::test;

namespace {

// A port free on 127.0.0.1 now (bound to 0, read back, closed).
uint16_t free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
}

// A free port for a cluster node: its bus listens on port + 10000, which must be a port too (an
// ephemeral port above 55535 made redis-server exit at start).
uint16_t free_node_port() {
    for (;;)
        if (const uint16_t p = free_port(); p <= 65535 - 10000) return p;
}

bool redis_installed() {
    return command_output(
               "command -v redis-server >/dev/null && command -v redis-cli >/dev/null && echo "
               "yes") == "yes\n";
}

// execv takes a path.
std::string redis_server() {
    std::string path = command_output("command -v redis-server");
    return path.substr(0, path.find('\n'));
}

// One redis-server on 127.0.0.1 in a scratch directory; with `cluster`, every slot its own.
class RedisNode {
  public:
    explicit RedisNode(bool cluster) : port_(free_node_port()) {
        const std::string dir = scratch("redis" + std::to_string(port_));
        std::filesystem::create_directories(dir);
        std::vector<std::string> argv{
            redis_server(), "--port", std::to_string(port_), "--bind", "127.0.0.1", "--dir", dir,
            "--save",       "",       "--appendonly",        "no"};
        if (cluster)
            argv.insert(argv.end(),
                        {"--cluster-enabled", "yes", "--cluster-config-file", dir + "/nodes.conf"});
        server_ = std::make_unique<BackgroundProcess>(argv);
        ready_ = server_->wait_for_output("Ready to accept connections", 10);
        if (ready_ && cluster) {
            cli("CLUSTER ADDSLOTSRANGE 0 16383");
            for (int i = 0;
                 i < 100 && cli("CLUSTER INFO").find("cluster_state:ok") == std::string::npos; ++i)
                usleep(50'000);
        }
    }
    bool ready() const { return ready_; }
    uint16_t port() const { return port_; }
    std::string cli(const std::string& args) const {
        return command_output("redis-cli -p " + std::to_string(port_) + " " + args + " 2>&1");
    }

  private:
    uint16_t port_;
    std::unique_ptr<BackgroundProcess> server_;
    bool ready_ = false;
};

}  // namespace

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
    const auto s = parse_redis_seeds("redis://127.0.0.1:7000,localhost:7001");
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].name(), "127.0.0.1:7000");
    EXPECT_EQ(s[1].name(), "localhost:7001");
    for (const char* bad : {"", "redis://", "h", "h:0", "h:65536", "h:12x", ":1", "h:1,"})
        EXPECT_THROW(parse_redis_seeds(bad), std::invalid_argument) << bad;
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
}

// An exporter (instance 0xabc) on a one-node cluster.
class OneNodeExport : public testing::Test {
  protected:
    void SetUp() override {
        if (!redis_installed()) GTEST_SKIP() << "redis-server or redis-cli not installed";
        node.emplace(true);
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
    EXPECT_TRUE(ex->export_epoch(e1));  // a retry after a lost answer, or a restart
    EXPECT_EQ(c.applied.load(), 2u);    // partitions 3 and 4
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

// A field the script cannot add to (not an integer, or a sum that would leave the signed 64
// bits): an error before any write, so the batch's other fields are not added on the retry twice.
TEST_F(OneNodeExport, AnErrorReplyAppliesNothingOfTheBatch) {
    node->cli("HSET 'kvagg:{p3}:sums' 35 oops");
    const ExportEpoch e1{1, {{3, 10}, {19, 5}, {35, 1}}};  // 35 last: 3 and 19 come first
    EXPECT_THROW(ex->export_epoch(e1), RedisError);
    EXPECT_THROW(ex->export_epoch(e1), RedisError);
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 3"), "\n");  // nil: nothing written
    node->cli("HSET 'kvagg:{p3}:sums' 35 9223372036854775000");
    EXPECT_THROW(ex->export_epoch(e1), RedisError);  // 35 would overflow
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 3"), "\n");
    node->cli("HDEL 'kvagg:{p3}:sums' 35");
    EXPECT_TRUE(ex->export_epoch(e1));
    EXPECT_TRUE(ex->export_epoch(e1));
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 3"), "10\n");
    EXPECT_EQ(node->cli("HGET 'kvagg:{p3}:sums' 35"), "1\n");
    EXPECT_EQ(c.applied.load(), 1u);
    EXPECT_EQ(c.already.load(), 1u);
}

TEST(RedisExport, NotClusterAndUnreachableToldApart) {
    if (!redis_installed()) GTEST_SKIP() << "redis-server or redis-cli not installed";
    RedisNode plain(false);
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
