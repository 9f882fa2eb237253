#pragma once
// kvagg's own command-line options (beside the common ones of lib/cli), their checks, and the
// table and kernel configs made of them. No EAL: unit tests use it.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "linerate/message_auth.hpp"
#include "pkt/address.hpp"

#include "kvagg/agg_table.hpp"
#include "kvagg/kv_kernel.hpp"
#include "kvagg/kv_state.hpp"
#include "kvagg/redis_cluster.hpp"

namespace linerate::kvagg {

// The option of the aggregation table's region, resolved by the runtime's plan (AppInfo::regions).
inline constexpr const char* kAggbufFlag = "--aggbuf";

// per_worker: one AggTable per worker, merged when read; shared: one SharedAggTable (atomics).
enum class AggMode : uint8_t { per_worker, shared };

struct Options {
    static constexpr uint64_t kDefaultKeys = uint64_t(1) << 20;
    uint16_t udp_port = kKvDefaultPort;
    // --listen-ip (repeatable): the IPv4 destinations served, host order; none: every one.
    std::vector<uint32_t> listen_ip;
    uint64_t keys = kDefaultKeys;  // --keys: capacity (hash) or key bound (direct)
    IndexMode index = IndexMode::hash;
    AggMode agg = AggMode::per_worker;
    uint64_t dup_window = DupFilter::kDefaultWindow;
    uint32_t max_streams = DupFilter::kDefaultMaxStreams;
    unsigned probe_limit = AggConfig::kDefaultProbeLimit;
    unsigned prefetch = KvKernelConfig{}.prefetch_ahead;
    std::string aggbuf;             // region spec or alias; empty: the port's NUMA node
    std::string dump;               // --dump FILE
    bool verify_checksums = true;   // off: --no-verify-checksums
    bool strict_checksums = false;  // --strict-checksums
    std::string state;              // --state FILE: checkpoints kept across restarts
    unsigned checkpoint_ms = kDefaultCheckpointMs;
    static constexpr unsigned kDefaultCheckpointMs = 250;
    std::string export_to;  // --export redis://HOST:PORT[,...]: a Redis Cluster's seed nodes
    unsigned export_ms = 1000;
    unsigned export_backlog = 64;  // epochs not acknowledged yet, at most
    unsigned export_timeout_ms = 1000;
    // Who is served (docs/kvagg.md "Who is served"): --key FILE (every datagram MAC'd) and
    // --allow CIDR[,...] (sources served without a key). Neither: data from anyone, no service.
    std::optional<auth::Key> key;
    pkt::Ipv4AllowList allow;
    std::string export_auth_file;  // --export-auth FILE
    RedisAuth export_auth;         // its credentials, read while parsing (empty password: none)

    // The option group (cli::OptionGroup). add: a bad value fails the parse itself (one line,
    // exit 2). check: what single-option checks cannot see (the duplicate filter's memory:
    // streams x window); throws std::invalid_argument with the message for the user.
    void add(CLI::App& app);
    void check() const;
};

AggConfig agg_config(const Options& options);
// The layout a --state file must have for these options on `workers` workers.
StateLayout state_layout(const Options& options, unsigned workers);
KvKernelConfig kernel_config(const Options& options);

// The start-up lines about who is served when that is not closed (none with --key or --allow
// given for both).
std::vector<std::string> exposure_lines(const Options& options);

const char* index_name(IndexMode mode);
const char* agg_mode_name(AggMode mode);

// The effective configuration, for the JSON's "kvagg" object and the start-up line.
nlohmann::json config_json(const Options& options);

}  // namespace linerate::kvagg
