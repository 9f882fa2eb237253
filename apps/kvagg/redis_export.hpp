#pragma once
// kvagg --export: epochs of sums (what a flush with reset took out of the tables) moved to a
// Redis Cluster exactly once (docs/scale-out.md "Export to Redis Cluster").
//
// Layout in Redis: key k's sum is field "k" (decimal) of the hash "kvagg:{pP}:sums", P = k % 16,
// as the signed 64-bit two's complement of the u64 sum (what HINCRBY adds to); the hash
// "kvagg:{pP}:epochs" holds, per kvagg instance (field: its 16-hex-digit id), the last epoch
// applied to that partition; "kvagg:{pP}:held" holds the deltas of fields of the sums that were
// not integers (another writer's), until they are again. The keys of a partition share the hash
// tag {pP}: one slot, so one Lua script (kApplyScript) adds an epoch's deltas and moves the
// marker atomically, and only when the epoch is above the marker: applying an epoch again
// changes nothing. Epochs of an instance are applied in order (the backlog exports its oldest
// first and an epoch's partitions all before the next epoch), so the marker is a high-water mark
// and stays one field per instance. The 16 tags land on slots spread over the primaries.
#include <array>
#include <atomic>
#include <bitset>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "kvagg/agg_table.hpp"
#include "kvagg/export_backlog.hpp"
#include "kvagg/redis_cluster.hpp"

namespace linerate::kvagg {

inline constexpr unsigned kExportPartitions = 16;
inline unsigned export_partition(uint64_t key) {
    return unsigned(key % kExportPartitions);
}
std::string export_sums_key(unsigned partition);      // "kvagg:{p7}:sums"
std::string export_marker_key(unsigned partition);    // "kvagg:{p7}:epochs"
std::string export_held_key(unsigned partition);      // "kvagg:{p7}:held"
std::string export_instance_name(uint64_t instance);  // 16 hex digits

// KEYS[1] sums, KEYS[2] marker, KEYS[3] held; ARGV[1] instance, ARGV[2] epoch (0: only the held
// deltas), then key, delta pairs (the delta as a signed decimal). Returns {applied (1, or 0 when
// the marker says it was already), fields held now, deltas held by this call, held deltas this
// call applied, the first key it held or ""}.
extern const char* const kApplyScript;

// One partition's answer to kApplyScript.
struct ApplyReply {
    bool applied = false;
    uint64_t held_now = 0, newly_held = 0, released = 0;
    std::string first_held;
};

// Applies epochs on a cluster (one thread).
class RedisExporter {
  public:
    RedisExporter(RedisCluster& cluster, uint64_t instance, ExportCounters& counters,
                  std::chrono::milliseconds wait_timeout);
    // True once every partition of `e` is applied (now or before) and, where the partition's
    // primary has replicas, WAIT saw one of them take it. Throws RedisError (unreachable, an
    // error reply): nothing is applied twice when it is called again.
    // A partition's batch whose WAIT or connection failed is sent again on the next call with
    // the same epoch; the others are not (already_applied counts only real repeats).
    bool export_epoch(const ExportEpoch& e);
    // Whether a partition may hold deltas in its held hash (unknown ones count: after a start).
    bool holding() const;
    // Applies the held deltas whose fields are integers again (no epoch): where no epoch comes.
    void release_held();

  private:
    bool apply_partition(unsigned p, uint64_t epoch, std::span<const AggSlot> sums);
    ApplyReply run_script(unsigned p, uint64_t epoch, std::span<const AggSlot> sums, bool wait,
                          bool& replicated);
    void note_held(unsigned p, const ApplyReply& r);
    void load_script();
    std::vector<std::string> script_args(const char* verb, const std::string& script, unsigned p,
                                         uint64_t epoch, std::span<const AggSlot> sums) const;

    RedisCluster& cluster_;
    std::string instance_;
    ExportCounters& counters_;
    std::chrono::milliseconds wait_timeout_;
    std::string sha_;  // SHA1 of kApplyScript
    // What each partition's held hash held at the last look (-1: not looked at yet).
    std::array<int64_t, kExportPartitions> held_;
    uint64_t progress_epoch_ = 0;          // the epoch of done_
    std::bitset<kExportPartitions> done_;  // its partitions applied and replicated
};

// The exporter's thread: takes the backlog's oldest durable epoch, exports it, retries after
// 100 ms while Redis fails (one line when it starts failing, one when the failure turns from
// unreachable to refused credentials or back, and one when it is back); the epoch stays in the
// backlog meanwhile. Idle, it applies held deltas once a second (RedisExporter::release_held).
class ExportThread {
  public:
    ExportThread(ExportBacklog& backlog, std::vector<RedisEndpoint> seeds,
                 std::chrono::milliseconds timeout, ExportCounters& counters, RedisAuth auth = {});
    ~ExportThread() { stop(); }
    // The slot map learned now (before start()): throws RedisRefused (not a cluster, the
    // credentials refused), RedisError (unreachable).
    size_t connect_now();
    void start();  // after the backlog's restore() or set_instance()
    // Keeps exporting up to `drain` while epochs are left, then stops the thread.
    void stop(std::chrono::milliseconds drain = std::chrono::milliseconds(0));
    const ClusterCounters& cluster_counters() const { return cluster_.counters(); }

  private:
    void loop();
    bool try_once(const EpochPtr& e);
    void release_held_now_and_then();

    ExportBacklog& backlog_;
    RedisCluster cluster_;
    ExportCounters& counters_;
    std::chrono::milliseconds timeout_;
    std::unique_ptr<RedisExporter> exporter_;  // made at start(): the backlog knows the instance
    std::atomic<bool> stopping_{false};
    std::atomic<int64_t> drain_until_ns_{0};
    enum class Failing : uint8_t { no, unreachable, refused };
    Failing failing_ = Failing::no;
    std::chrono::steady_clock::time_point last_release_{};
    std::thread thread_;
};

}  // namespace linerate::kvagg
