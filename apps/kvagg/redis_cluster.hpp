#pragma once
// A small Redis Cluster client on hiredis (synchronous, one thread): it learns the slot map with
// CLUSTER SLOTS, sends a command (or a pipeline of them) to the primary that serves a key's hash
// slot, follows MOVED (the map changed: relearned) and ASK (a slot in migration: ASKING then the
// commands at the target), and drops a connection that failed (reconnected on the next call).
// With credentials (--export-auth), every connection it opens, to a seed or to a node it learned
// of, sends AUTH before any other command.
// Redis Cluster specification: https://redis.io/docs/reference/cluster-spec/
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;
struct redisReply;

namespace linerate::kvagg {

inline constexpr unsigned kClusterSlots = 16384;

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), the checksum of the cluster's key slots.
uint16_t crc16_xmodem(std::string_view bytes);
// The hash slot of a key: CRC16 of the key, or of its hash tag (the bytes between the first '{'
// and the next '}' when there are any), modulo 16384.
uint16_t cluster_slot(std::string_view key);

struct RedisEndpoint {
    std::string host;
    uint16_t port = 0;
    std::string name() const { return host + ":" + std::to_string(port); }
};

// "redis://HOST:PORT[,HOST:PORT...]" (the scheme required; a later seed may repeat it; HOST
// without '/', '@' or white space); throws std::invalid_argument with the message for the user.
std::vector<RedisEndpoint> parse_redis_seeds(const std::string& spec);

// --export-auth's credentials: the password of Redis's `requirepass` (user empty: AUTH
// PASSWORD, the default user) or an ACL user's (AUTH USER PASSWORD).
struct RedisAuth {
    std::string user;
    std::string password;
};

// The file's one line, white space at either end trimmed: `PASSWORD` or `USER PASSWORD`
// (spaces or tabs between them; neither may hold white space). Throws std::invalid_argument with
// the message for the user, naming `path`.
RedisAuth parse_redis_auth(std::string_view text, const std::string& path);
// Reads FILE as a secret file (lib/auth/secret_file.hpp: mode 0600 or stricter) and parses it.
// Throws std::invalid_argument (the message for the user).
RedisAuth load_redis_auth(const std::string& path);

// A node that cannot be reached, an error reply where none may come, a node without cluster
// support: what() is the one line for the user.
struct RedisError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// Redis answered, and what it answered is a configuration error rather than a failure to wait
// out: refused at start (one line, exit 2); while running, told and retried.
struct RedisRefused : RedisError {
    using RedisError::RedisError;
};
// Every seed answered, but as a Redis without cluster mode.
struct RedisNotCluster : RedisRefused {
    using RedisRefused::RedisRefused;
};
// A node refused the credentials (WRONGPASS), wanted some (NOAUTH) or refused a command to the
// ACL user (NOPERM).
struct RedisAuthError : RedisRefused {
    using RedisRefused::RedisRefused;
};

struct ReplyFree {
    void operator()(redisReply* r) const;
};
using RedisReply = std::unique_ptr<redisReply, ReplyFree>;

// Counters of the client (written by its one thread, read by anyone).
struct ClusterCounters {
    std::atomic<uint64_t> moved{0}, ask{0};  // redirections followed
    std::atomic<uint64_t> connects{0};       // connections made (the first ones included)
    std::atomic<uint64_t> slot_maps{0};      // CLUSTER SLOTS learned
};

class RedisCluster {
  public:
    // `timeout`: to connect and for each reply. `auth`: sent on every connection (empty
    // password: none).
    RedisCluster(std::vector<RedisEndpoint> seeds, std::chrono::milliseconds timeout,
                 RedisAuth auth = {});
    ~RedisCluster();
    RedisCluster(const RedisCluster&) = delete;
    RedisCluster& operator=(const RedisCluster&) = delete;

    // Learns the slot map from the first node that answers (the last map's nodes, then the
    // seeds). Throws RedisNotCluster when a node answers without cluster support,
    // RedisAuthError when one refuses the credentials (or wants some), RedisError when none
    // answers or the map does not cover every slot.
    void refresh_slots();

    // Sends `commands` in one pipeline to the primary serving `slot` and returns their replies
    // (error replies included). Follows MOVED and ASK (at most a few hops); throws RedisError
    // when the node cannot be reached (the map is relearned on the next call), RedisAuthError
    // when it refuses the credentials or a command to the user.
    std::vector<RedisReply> pipeline(uint16_t slot,
                                     const std::vector<std::vector<std::string>>& commands);

    // The replicas the map lists for the slot's primary (failed ones are not listed).
    unsigned replicas(uint16_t slot);
    // Distinct primaries in the map.
    size_t primaries() const;
    const ClusterCounters& counters() const { return counters_; }

  private:
    struct SlotRange {
        uint16_t first, last;
        RedisEndpoint primary;
        unsigned replicas;
    };
    redisContext* connect(const std::string& name, const RedisEndpoint& at);
    void authenticate(redisContext* c, const std::string& name);
    void drop(const std::string& name);
    bool learn_from(const RedisEndpoint& node);
    const SlotRange& range_of(uint16_t slot);
    std::vector<RedisReply> send(const RedisEndpoint& at, bool asking,
                                 const std::vector<std::vector<std::string>>& commands);

    std::vector<RedisEndpoint> seeds_;
    std::chrono::milliseconds timeout_;
    RedisAuth auth_;
    std::vector<SlotRange> ranges_;  // ascending, covering 0..16383 once learned
    bool stale_ = true;
    std::map<std::string, redisContext*> links_;  // by "host:port"
    ClusterCounters counters_;
};

// A reply's text ("" for none), for error lines and redirections.
std::string reply_text(const redisReply* r);
bool is_error(const redisReply* r);

}  // namespace linerate::kvagg
