#include "kvagg/redis_cluster.hpp"

#include <hiredis/hiredis.h>

#include <fmt/core.h>

#include <algorithm>
#include <charconv>

#include "linerate/message_auth.hpp"

namespace linerate::kvagg {

uint16_t crc16_xmodem(std::string_view bytes) {
    uint16_t crc = 0;
    for (unsigned char b : bytes) {
        crc ^= uint16_t(b << 8);
        for (int i = 0; i < 8; ++i) crc = (crc & 0x8000) ? uint16_t(crc << 1 ^ 0x1021) : crc << 1;
    }
    return crc;
}

uint16_t cluster_slot(std::string_view key) {
    const size_t open = key.find('{');
    if (open != std::string_view::npos) {
        const size_t close = key.find('}', open + 1);
        // An empty tag ("{}") hashes the whole key, as the specification says.
        if (close != std::string_view::npos && close > open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    return crc16_xmodem(key) % kClusterSlots;
}

namespace {

RedisEndpoint parse_endpoint(std::string_view text, const std::string& spec) {
    const size_t colon = text.rfind(':');
    unsigned port = 0;
    if (colon == std::string_view::npos || colon == 0 ||
        text.substr(0, colon).find_first_of("/@ \t") != std::string_view::npos ||
        std::from_chars(text.data() + colon + 1, text.data() + text.size(), port).ec !=
            std::errc() ||
        port == 0 || port > 65535 ||
        text.data() + colon + 1 + std::to_string(port).size() != text.data() + text.size())
        throw std::invalid_argument(
            fmt::format("--export {}: '{}' is not HOST:PORT (port 1-65535)", spec, text));
    return {std::string(text.substr(0, colon)), uint16_t(port)};
}

}  // namespace

std::vector<RedisEndpoint> parse_redis_seeds(const std::string& spec) {
    constexpr std::string_view kScheme = "redis://";
    std::string_view rest = spec;
    if (!rest.starts_with(kScheme))
        throw std::invalid_argument(fmt::format(
            "--export {}: not redis://HOST:PORT[,HOST:PORT...] (the scheme redis:// first)", spec));
    rest.remove_prefix(kScheme.size());
    std::vector<RedisEndpoint> seeds;
    while (!rest.empty() || seeds.empty()) {
        const size_t comma = rest.find(',');
        std::string_view seed = rest.substr(0, comma);
        if (!seeds.empty() && seed.starts_with(kScheme)) seed.remove_prefix(kScheme.size());
        seeds.push_back(parse_endpoint(seed, spec));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
        if (rest.empty()) throw std::invalid_argument("--export " + spec + ": trailing ','");
    }
    return seeds;
}

RedisAuth parse_redis_auth(std::string_view text, const std::string& path) {
    const std::string_view line = auth::trim_space(text);
    const size_t gap = line.find_first_of(" \t");
    RedisAuth a;
    if (gap == std::string_view::npos) {
        a.password = line;
    } else {
        a.user = line.substr(0, gap);
        a.password = auth::trim_space(line.substr(gap));
    }
    if (a.password.empty() || line.find_first_of("\r\n") != std::string_view::npos ||
        a.password.find_first_of(" \t") != std::string::npos)
        throw std::invalid_argument(
            fmt::format("file {} must hold one line: PASSWORD (requirepass) or USER PASSWORD "
                        "(an ACL user)",
                        path));
    return a;
}

RedisAuth load_redis_auth(const std::string& path) {
    try {
        return parse_redis_auth(auth::read_secret_file(path, "file"), path);
    } catch (const auth::SecretFileError& e) {
        throw std::invalid_argument(e.what());
    }
}

void ReplyFree::operator()(redisReply* r) const {
    if (r) freeReplyObject(r);
}

std::string reply_text(const redisReply* r) {
    if (!r) return "";
    if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
    return r->str ? std::string(r->str, r->len) : "";
}

bool is_error(const redisReply* r) {
    return r == nullptr || r->type == REDIS_REPLY_ERROR;
}

RedisCluster::RedisCluster(std::vector<RedisEndpoint> seeds, std::chrono::milliseconds timeout,
                           RedisAuth auth)
    : seeds_(std::move(seeds)), timeout_(timeout), auth_(std::move(auth)) {}

RedisCluster::~RedisCluster() {
    for (auto& [name, c] : links_) redisFree(c);
}

redisContext* RedisCluster::connect(const std::string& name, const RedisEndpoint& at) {
    auto it = links_.find(name);
    if (it != links_.end()) return it->second;
    const timeval tv{long(timeout_.count() / 1000), long(timeout_.count() % 1000 * 1000)};
    redisContext* c = redisConnectWithTimeout(at.host.c_str(), at.port, tv);
    if (c == nullptr || c->err) {
        const std::string why = c ? c->errstr : "out of memory";
        if (c) redisFree(c);
        throw RedisError(fmt::format("Redis {}: {}", name, why));
    }
    redisSetTimeout(c, tv);
    if (!auth_.password.empty()) authenticate(c, name);
    counters_.connects.fetch_add(1, std::memory_order_relaxed);
    links_[name] = c;
    return c;
}

// AUTH [USER] PASSWORD, before anything else on the connection; the connection is freed when it
// fails.
void RedisCluster::authenticate(redisContext* c, const std::string& name) {
    std::vector<const char*> argv{"AUTH"};
    std::vector<size_t> lens{4};
    if (!auth_.user.empty()) {
        argv.push_back(auth_.user.data());
        lens.push_back(auth_.user.size());
    }
    argv.push_back(auth_.password.data());
    lens.push_back(auth_.password.size());
    const RedisReply r(
        static_cast<redisReply*>(redisCommandArgv(c, int(argv.size()), argv.data(), lens.data())));
    if (r && !is_error(r.get())) return;
    const std::string why = r ? reply_text(r.get()) : std::string(c->errstr);
    redisFree(c);
    if (!r) throw RedisError(fmt::format("Redis {}: {}", name, why));
    throw RedisAuthError(fmt::format("Redis at {} refused --export-auth: {}", name, why));
}

void RedisCluster::drop(const std::string& name) {
    auto it = links_.find(name);
    if (it == links_.end()) return;
    redisFree(it->second);
    links_.erase(it);
    stale_ = true;
}

namespace {

std::vector<RedisReply> run_pipeline(redisContext* c,
                                     const std::vector<std::vector<std::string>>& commands) {
    for (const auto& cmd : commands) {
        std::vector<const char*> argv;
        std::vector<size_t> lens;
        for (const std::string& a : cmd) {
            argv.push_back(a.data());
            lens.push_back(a.size());
        }
        redisAppendCommandArgv(c, int(argv.size()), argv.data(), lens.data());
    }
    std::vector<RedisReply> replies;
    for (size_t i = 0; i < commands.size(); ++i) {
        void* r = nullptr;
        if (redisGetReply(c, &r) != REDIS_OK) return {};
        replies.emplace_back(static_cast<redisReply*>(r));
    }
    return replies;
}

// The line for an error reply about the credentials or the user's rights ("" for any other).
std::string refusal(const redisReply* r, const std::string& name, bool authenticated) {
    const std::string text = is_error(r) ? reply_text(r) : std::string();
    if (text.starts_with("NOAUTH") && !authenticated)
        return fmt::format("Redis at {} wants a password (give --export-auth FILE): {}", name,
                           text);
    if (text.starts_with("NOAUTH") || text.starts_with("WRONGPASS"))
        return fmt::format("Redis at {} refused --export-auth: {}", name, text);
    if (text.starts_with("NOPERM"))
        return fmt::format(
            "Redis at {} refused a command to --export-auth's user (docs/scale-out.md gives the "
            "ACL the export needs): {}",
            name, text);
    return "";
}

// "MOVED 3999 127.0.0.1:6381" or "ASK ...": the target node.
RedisEndpoint redirect_target(const std::string& error) {
    const size_t space = error.rfind(' ');
    return parse_endpoint(std::string_view(error).substr(space + 1), error);
}

}  // namespace

std::vector<RedisReply> RedisCluster::send(const RedisEndpoint& at, bool asking,
                                           const std::vector<std::vector<std::string>>& commands) {
    const std::string name = at.name();
    redisContext* c = connect(name, at);
    std::vector<std::vector<std::string>> all;
    if (asking) all.push_back({"ASKING"});
    all.insert(all.end(), commands.begin(), commands.end());
    std::vector<RedisReply> replies = run_pipeline(c, all);
    if (replies.empty()) {
        const std::string why = c->errstr;
        drop(name);
        throw RedisError(fmt::format("Redis {}: {}", name, why));
    }
    for (const RedisReply& r : replies)
        if (std::string why = refusal(r.get(), name, !auth_.password.empty()); !why.empty()) {
            drop(name);  // the next try connects (and authenticates) again
            throw RedisAuthError(why);
        }
    if (asking) replies.erase(replies.begin());
    return replies;
}

std::vector<RedisReply> RedisCluster::pipeline(
    uint16_t slot, const std::vector<std::vector<std::string>>& commands) {
    RedisEndpoint at = range_of(slot).primary;
    bool asking = false;
    for (int hop = 0; hop < 5; ++hop) {
        std::vector<RedisReply> replies = send(at, asking, commands);
        const std::string first =
            is_error(replies.front().get()) ? reply_text(replies[0].get()) : std::string();
        if (first.starts_with("MOVED ")) {
            counters_.moved.fetch_add(1, std::memory_order_relaxed);
            stale_ = true;  // relearned on the next call; this one goes where it was told
            at = redirect_target(first);
            asking = false;
        } else if (first.starts_with("ASK ")) {
            counters_.ask.fetch_add(1, std::memory_order_relaxed);
            at = redirect_target(first);
            asking = true;
        } else {
            return replies;
        }
    }
    throw RedisError(fmt::format("slot {}: redirected more than 5 times", slot));
}

bool RedisCluster::learn_from(const RedisEndpoint& node) {
    std::vector<RedisReply> r;
    try {
        r = send(node, false, {{"CLUSTER", "SLOTS"}});
    } catch (const RedisRefused&) {
        throw;  // the next node has the same password and ACL
    } catch (const RedisError&) {
        return false;
    }
    const redisReply* map = r.front().get();
    if (is_error(map)) {
        const std::string text = reply_text(map);
        if (text.find("cluster support disabled") != std::string::npos)
            throw RedisNotCluster(
                fmt::format("Redis {} is not in cluster mode ({})", node.name(), text));
        return false;  // a node that is still loading, say: try the next
    }
    std::vector<SlotRange> ranges;
    for (size_t i = 0; i < map->elements; ++i) {
        const redisReply* e = map->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3) return false;
        const redisReply* p = e->element[2];
        if (p->type != REDIS_REPLY_ARRAY || p->elements < 2) return false;
        std::string host = reply_text(p->element[0]);
        if (host.empty()) host = node.host;  // a node that does not know its own address
        ranges.push_back({uint16_t(e->element[0]->integer),
                          uint16_t(e->element[1]->integer),
                          {host, uint16_t(p->element[1]->integer)},
                          unsigned(e->elements - 3)});
    }
    std::sort(ranges.begin(), ranges.end(),
              [](const SlotRange& a, const SlotRange& b) { return a.first < b.first; });
    unsigned next = 0;
    for (const SlotRange& s : ranges) {
        if (s.first != next || s.last < s.first) return false;
        next = s.last + 1u;
    }
    if (next != kClusterSlots) return false;  // not every slot served (yet)
    ranges_ = std::move(ranges);
    stale_ = false;
    counters_.slot_maps.fetch_add(1, std::memory_order_relaxed);
    return true;
}

void RedisCluster::refresh_slots() {
    std::vector<RedisEndpoint> nodes;
    for (const SlotRange& s : ranges_) nodes.push_back(s.primary);
    nodes.insert(nodes.end(), seeds_.begin(), seeds_.end());
    for (const RedisEndpoint& n : nodes)
        if (learn_from(n)) return;
    std::string names;
    for (const RedisEndpoint& s : seeds_) {
        if (!names.empty()) names += ',';
        names += s.name();  // appended, not "," + name: GCC 12 warns (-Wrestrict) on the latter
    }
    throw RedisError(
        fmt::format("no Redis Cluster node answered with a full slot map (seeds {})", names));
}

const RedisCluster::SlotRange& RedisCluster::range_of(uint16_t slot) {
    if (stale_) refresh_slots();
    for (const SlotRange& s : ranges_)
        if (slot >= s.first && slot <= s.last) return s;
    throw RedisError(fmt::format("slot {} not in the map", slot));  // learn_from checked
}

unsigned RedisCluster::replicas(uint16_t slot) {
    return range_of(slot).replicas;
}

size_t RedisCluster::primaries() const {
    std::map<std::string, int> names;
    for (const SlotRange& s : ranges_) names[s.primary.name()] = 1;
    return names.size();
}

}  // namespace linerate::kvagg
