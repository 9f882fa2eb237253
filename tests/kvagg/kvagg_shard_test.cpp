// The sharded C++ client (include/linerate/kvagg_client.hpp, ShardedClient): the key -> endpoint
// mapping against reference values and the table python/linerate_kvagg.py computes the same
// (tests/kvagg/fixtures/shard_owners.txt; shard_test.py holds the Python client to it), the
// rendezvous properties (adding an endpoint moves keys only to it, removing one moves only its
// keys), endpoint parsing, and the client over closed ports (instances down: add() holds their
// share and throws nothing, read and flush time out). No kvagg, no EAL. Built as C++17 and C++20.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "closed_port.hpp"
#include "linerate/kvagg_client.hpp"

namespace kv = linerate::kvclient;
using std::chrono::milliseconds;

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> out;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, sep);) out.push_back(part);
    return out;
}

size_t owner_of(const std::vector<std::string>& names, uint64_t key) {
    std::vector<uint64_t> hashes;
    for (const std::string& n : names) hashes.push_back(kv::shard_name_hash(n));
    return kv::shard_owner(names, hashes, key);
}

// A UDP port on 127.0.0.1 nothing listens on (the kernel refuses what is sent there).
std::string closed_endpoint() {
    return "127.0.0.1:" + std::to_string(linerate::test::closed_port());
}

}  // namespace

// Published values of the two functions the hash is made of.
TEST(KvaggShard, HashFunctionsMatchTheirReferenceValues) {
    EXPECT_EQ(kv::shard_name_hash(""), 0xCBF29CE484222325ull);  // FNV-1a 64 offset basis
    EXPECT_EQ(kv::shard_name_hash("a"), 0xAF63DC4C8601EC8Cull);
    EXPECT_EQ(kv::shard_name_hash("foobar"), 0x85944171F73967E8ull);
    // splitmix64's first output for seed 0 is mix(0 + golden gamma).
    EXPECT_EQ(kv::shard_mix(0x9E3779B97F4A7C15ull), 0xE220A8397B1DCDAFull);
}

// The same table the Python client is held to: both clients send a key to the same instance.
TEST(KvaggShard, OwnersEqualTheTableBothClientsShare) {
    std::ifstream f(std::string(LINERATE_SOURCE_DIR) + "/tests/kvagg/fixtures/shard_owners.txt");
    ASSERT_TRUE(f) << "fixture missing";
    size_t hashes = 0, owners = 0;
    for (std::string line; std::getline(f, line);) {
        if (line.empty() || line[0] == '#') continue;
        const std::vector<std::string> w = split(line, ' ');
        if (w[0] == "name_hash") {
            ASSERT_EQ(w.size(), 3u) << line;
            EXPECT_EQ(kv::shard_name_hash(w[1]), std::stoull(w[2], nullptr, 16)) << line;
            ++hashes;
        } else {
            ASSERT_EQ(w.size(), 4u) << line;
            const std::vector<std::string> names = split(w[1], ',');
            EXPECT_EQ(names[owner_of(names, std::stoull(w[2]))], w[3]) << line;
            ++owners;
        }
    }
    EXPECT_EQ(hashes, 7u);
    EXPECT_EQ(owners, 4u * 60u);
}

// Rendezvous hashing: a third endpoint takes keys only for itself, and about a third of them;
// removing one moves only the keys it owned; the order endpoints are listed in does not matter.
TEST(KvaggShard, AddingOrRemovingAnEndpointMovesOnlyItsKeys) {
    const std::vector<std::string> two{"10.213.0.1:9000", "10.213.1.1:9000"};
    const std::vector<std::string> three{"10.213.0.1:9000", "10.213.1.1:9000", "10.213.2.1:9000"};
    const std::vector<std::string> reversed{three.rbegin(), three.rend()};
    std::map<std::string, unsigned> per;
    const unsigned n = 30000;
    for (uint64_t key = 0; key < n; ++key) {
        const std::string& with3 = three[owner_of(three, key)];
        const std::string& with2 = two[owner_of(two, key)];
        ++per[with3];
        if (with3 != three[2]) {
            EXPECT_EQ(with3, with2) << key;  // moved only if to the new one
        }
        EXPECT_EQ(reversed[owner_of(reversed, key)], with3) << key;
    }
    for (const auto& [name, count] : per) {
        EXPECT_GT(count, n / 3 - n / 30) << name;  // within 10 % of an even share
        EXPECT_LT(count, n / 3 + n / 30) << name;
    }
}

TEST(KvaggShard, EndpointsParseOrAreErrors) {
    EXPECT_EQ(kv::parse_endpoint("10.0.0.1").name(), "10.0.0.1:9000");
    EXPECT_EQ(kv::parse_endpoint("kv-a.example:9001").name(), "kv-a.example:9001");
    for (const char* bad : {"10.0.0.1:0", "10.0.0.1:65536", ":9000", "h:9x", "h:", "h:123456"})
        EXPECT_THROW(kv::parse_endpoint(bad), kv::Error) << bad;
    kv::Options o;
    EXPECT_THROW(kv::ShardedClient({}, o), kv::Error);
    EXPECT_THROW(kv::ShardedClient({"127.0.0.1:9000", "127.0.0.1"}, o), kv::Error);  // twice
}

// Two instances down (closed ports): add() throws nothing, holds every datagram; its own status
// of an instance gives up after status_patience (not the 10 attempts of 50 ms the options give
// every other request) and asks a down instance again only every down_retry, so 300 datagrams
// take a few such looks, not a status() each. read, flush and wait_durable time out; only
// kv::Timeout leaves.
TEST(KvaggShard, InstancesDownHoldTheirShareAndAddGoesOn) {
    kv::Options o;
    o.timeout = milliseconds(50);
    o.retries = 10;
    o.max_tuples = 1;  // a datagram per add()
    kv::ShardOptions so;
    so.status_every = 4;
    so.status_patience = milliseconds(100);
    so.down_retry = milliseconds(200);
    kv::ShardedClient c({closed_endpoint(), closed_endpoint()}, o, so);
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t k = 0; k < 300; ++k) c.add(k, k + 1);
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(took, std::chrono::seconds(2));  // 300 status() calls would be 300 s
    EXPECT_EQ(c.outages(), 2u);
    EXPECT_EQ(c.held(), 300u);
    EXPECT_GT(c.refused(), 0u);
    EXPECT_THROW(c.read({1, 2}), kv::Timeout);
    EXPECT_THROW(c.flush(true), kv::Timeout);
    EXPECT_THROW(c.status(), kv::Timeout);
    EXPECT_THROW(c.wait_durable(milliseconds(300)), kv::Timeout);
    EXPECT_THROW(c.remove_endpoint(c.endpoints()[0]), kv::Timeout);
    EXPECT_EQ(c.endpoints().size(), 2u);  // a remove that got no answer changes nothing
    EXPECT_THROW(c.remove_endpoint("127.0.0.1:1"), kv::Error);  // not an endpoint
}
