#include "options.hpp"

#include "cli/command_line.hpp"
#include "kvagg/redis_cluster.hpp"
#include "mem/region_spec.hpp"
#include "pkt/address.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace linerate::kvagg {

namespace {

constexpr uint64_t kMaxKeys = uint64_t(1) << 32;
constexpr uint64_t kMaxWindow = uint64_t(1) << 24;
// Per worker: max_streams x window / 8 bytes of bitmap, allocated at start.
constexpr uint64_t kMaxDupBytes = uint64_t(1) << 30;

const CLI::Validator kWindow(
    [](std::string& text) {
        uint64_t w = 0;
        if (!CLI::detail::lexical_cast(text, w)) return std::string("not a number: " + text);
        if (w != 0 && (w < 64 || w > kMaxWindow || !std::has_single_bit(w)))
            return std::string("must be 0 (off) or a power of two in [64, 2^24]");
        return std::string();
    },
    "0|2^k", "DUP_WINDOW");

// Where kvagg's datagrams go: its UDP port and, when given, its addresses.
void add_address_options(CLI::App& app, Options& o) {
    cli::add_bounded(app, "--udp-port", o.udp_port, 1, 65535,
                     "UDP destination port of kvagg packets");
    app.add_option_function<std::vector<std::string>>(
           "--listen-ip",
           [&o](const std::vector<std::string>& texts) {
               o.listen_ip.clear();
               for (const std::string& t : texts) o.listen_ip.push_back(*pkt::parse_ipv4(t));
           },
           "Aggregate and answer only datagrams to this IPv4 address (repeat for up to " +
               std::to_string(ListenAddrs::kMax) +
               "); others to the kvagg port count as other_address. Default: every address")
        ->check(cli::ipv4_address());
}

// --export-auth FILE: read and checked while parsing, as --key is (one line, exit 2).
void add_export_auth_option(CLI::App& app, Options& o) {
    auto load = [&o](const std::string& path) {
        try {
            o.export_auth = load_redis_auth(path);
        } catch (const std::invalid_argument& e) {
            throw CLI::ValidationError("--export-auth", e.what());
        }
        o.export_auth_file = path;
    };
    app.add_option_function<std::string>(
           "--export-auth", load,
           "Send AUTH on every connection to Redis with the credentials in FILE (mode 0600), one "
           "line: PASSWORD (requirepass) or USER PASSWORD (an ACL user); in clear, hiredis has "
           "no TLS (docs/scale-out.md)")
        ->type_name("FILE")
        ->needs("--export");
}

void add_export_options(CLI::App& app, Options& o) {
    app.add_option("--export", o.export_to,
                   "Move the sums to a Redis Cluster every --export-ms, exactly once "
                   "(docs/scale-out.md): redis://HOST:PORT[,HOST:PORT...], seed nodes of the "
                   "cluster");
    cli::add_bounded(app, "--export-ms", o.export_ms, 1u, 3600u * 1000u,
                     "Milliseconds between two --export epochs (a flush with reset each)");
    cli::add_bounded(app, "--export-backlog", o.export_backlog, 1u, 1u << 20,
                     "Epochs Redis has not acknowledged, at most (in memory and in --state); "
                     "when full, the sums stay in the tables");
    cli::add_bounded(app, "--export-timeout-ms", o.export_timeout_ms, 1u, 60u * 1000u,
                     "Milliseconds to connect to a Redis node, for each of its replies, and for "
                     "WAIT's replica");
    add_export_auth_option(app, o);
}

// Who is served: the key and the sources, checked while parsing (one line, exit 2).
void add_access_options(CLI::App& app, Options& o) {
    cli::add_key_option(app, o.key,
                        "Shared secret (64 hex digits, mode 0600: umask 077; openssl rand -hex 32 "
                        "> FILE): every sum datagram and service request must carry its MAC "
                        "(docs/security.md); others count as bad_auth");
    cli::add_allow_option(app, o.allow,
                          "Sources served without --key (a.b.c.d/len or addresses, comma "
                          "separated, repeatable): their service ops are answered (no reply "
                          "larger than the request), sum datagrams of others count as "
                          "not_allowed. With --key, sources must also be in it");
}

}  // namespace

std::vector<std::string> exposure_lines(const Options& o) {
    std::vector<std::string> lines;
    if (!o.key && o.allow.empty()) {
        lines.push_back(
            "kvagg: service ops are refused until --key or --allow is given (docs/security.md)");
        lines.push_back(
            "kvagg: sum datagrams are taken from any source (no --key, no --allow: "
            "docs/security.md)");
    }
    return lines;
}

const char* index_name(IndexMode mode) {
    return mode == IndexMode::hash ? "hash" : "direct";
}

const char* agg_mode_name(AggMode mode) {
    return mode == AggMode::per_worker ? "per-worker" : "shared";
}

void Options::add(CLI::App& app) {
    Options& o = *this;
    add_address_options(app, o);
    app.add_option("--keys", o.keys,
                   "Table capacity: distinct keys held (hash), or the key bound, key < N "
                   "(direct); tuples beyond it count as overflow. K, M, G suffixes are 2^10, "
                   "2^20, 2^30")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::Range(uint64_t(1), kMaxKeys))
        ->capture_default_str();
    cli::add_choice(app, "--index", o.index,
                    {{"hash", IndexMode::hash}, {"direct", IndexMode::direct}},
                    "hash: open addressing for any u64 key; direct: slot = key, for dense keys "
                    "(default hash)");
    cli::add_choice(app, "--agg", o.agg,
                    {{"per-worker", AggMode::per_worker}, {"shared", AggMode::shared}},
                    "per-worker: a table per worker, merged when read (no atomics); shared: one "
                    "key index, a column of sums per worker (default per-worker)");
    app.add_option("--dup-window", o.dup_window,
                   "Sequence numbers remembered per stream for duplicate detection (0 = off)")
        ->check(kWindow)
        ->capture_default_str();
    cli::add_bounded(app, "--max-streams", o.max_streams, 1u, 1u << 20,
                     "Streams tracked per worker");
    cli::add_bounded(app, "--probe-limit", o.probe_limit, 1u, 4096u,
                     "Hash mode: slots probed for a key before its tuple counts as overflow");
    cli::add_bounded(app, "--prefetch", o.prefetch, 0u, 256u,
                     "Tuples per look-ahead block: their table lines are prefetched a block "
                     "before the adds (0 = off)");
    cli::add_checksum_flags(app, o.verify_checksums, o.strict_checksums, "Aggregate frames");
    app.add_option(kAggbufFlag, o.aggbuf,
                   "Memory region of the aggregation table(s), as --netbuf: " +
                       mem::region_syntax() + " or an alias (default: the port's NUMA node)");
    app.add_option("--dump", o.dump,
                   "At exit write `key,value` lines (decimal u64, sorted by key, keys that "
                   "received a tuple) to FILE");
    app.add_option("--state", o.state,
                   "Keep the sums, the streams' duplicate windows and the flush counters in FILE "
                   "(a checkpoint every --checkpoint-ms, before answering a flush with reset, and "
                   "at exit) and resume from it at start; needs --agg per-worker");
    cli::add_bounded(app, "--checkpoint-ms", o.checkpoint_ms, 1u, 3600u * 1000u,
                     "Milliseconds between two --state checkpoints");
    add_export_options(app, o);
    add_access_options(app, o);
}

void Options::check() const {
    const Options& o = *this;
    if (!o.dump.empty()) cli::check_writable(o.dump, "--dump");
    if (!o.state.empty()) {
        if (o.agg == AggMode::shared)
            throw std::invalid_argument(
                "--state needs --agg per-worker (the shared table has "
                "no consistent copy while workers add)");
        cli::check_writable(o.state + ".tmp", "--state");  // written there, then renamed
    }
    if (o.listen_ip.size() > ListenAddrs::kMax)
        throw std::invalid_argument("--listen-ip: at most " + std::to_string(ListenAddrs::kMax) +
                                    " addresses");
    if (!o.export_to.empty()) parse_redis_seeds(o.export_to);  // its message if it is bad
    if (o.dup_window != 0 && uint64_t(o.max_streams) * (o.dup_window / 8) > kMaxDupBytes)
        throw std::invalid_argument(
            "--max-streams x --dup-window / 8 exceeds 1 GiB of duplicate bitmap per worker");
}

AggConfig agg_config(const Options& o) {
    return {.mode = o.index, .max_keys = o.keys, .probe_limit = o.probe_limit};
}

StateLayout state_layout(const Options& o, unsigned workers) {
    return {.keys = o.keys,
            .index = o.index,
            .probe_limit = o.probe_limit,
            .dup_window = o.dup_window,
            .max_streams = o.max_streams,
            .workers = workers,
            .slots = AggGeometry::slots_for(agg_config(o))};
}

KvKernelConfig kernel_config(const Options& o) {
    KvKernelConfig c{.udp_port = o.udp_port,
                     .dup_window = o.dup_window,
                     .max_streams = o.max_streams,
                     .prefetch_ahead = o.prefetch,
                     .verify_checksums = o.verify_checksums,
                     .strict_checksums = o.strict_checksums};
    c.key = o.key;
    c.allow = o.allow;
    c.listen.count = std::min(o.listen_ip.size(), ListenAddrs::kMax);  // Options::check: <= kMax
    std::copy_n(o.listen_ip.begin(), c.listen.count, c.listen.addrs.begin());
    return c;
}

nlohmann::json config_json(const Options& o) {
    nlohmann::json listen = nlohmann::json::array();
    for (uint32_t a : o.listen_ip) listen.push_back(pkt::format_ipv4(a));
    nlohmann::json allow = nlohmann::json::array();
    for (const pkt::Ipv4Net& n : o.allow.nets) allow.push_back(pkt::format_ipv4_net(n));
    return {{"udp_port", o.udp_port},
            {"listen_ip", listen},
            {"keys", o.keys},
            {"index", index_name(o.index)},
            {"agg", agg_mode_name(o.agg)},
            {"dup_window", o.dup_window},
            {"max_streams", o.max_streams},
            {"probe_limit", o.probe_limit},
            {"prefetch", o.prefetch},
            {"aggbuf", o.aggbuf},
            {"dump", o.dump},
            {"verify_checksums", o.verify_checksums},
            {"strict_checksums", o.strict_checksums},
            {"state", o.state},
            {"checkpoint_ms", o.checkpoint_ms},
            {"export", o.export_to},
            {"export_ms", o.export_ms},
            {"export_backlog", o.export_backlog},
            {"export_timeout_ms", o.export_timeout_ms},
            {"key", o.key.has_value()},  // whether one is used, never the key
            {"allow", allow},
            {"export_auth", o.export_auth_file}};
}

}  // namespace linerate::kvagg
