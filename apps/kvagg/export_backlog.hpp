#pragma once
// kvagg --export's epochs on kvagg's side (no Redis here: the control thread, the --state file
// and the unit tests use it without hiredis): an epoch is the sums one flush with reset took out
// of the tables; the backlog holds the epochs Redis has not acknowledged yet, up to a bound.
// The exporter (redis_export.hpp) takes them off once Redis acknowledged them.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "kvagg/agg_table.hpp"

namespace linerate::kvagg {

// One epoch: the sums a flush with reset took out, ascending keys, zeros left out.
struct ExportEpoch {
    uint64_t epoch = 0;
    std::vector<AggSlot> sums;
};
using EpochPtr = std::shared_ptr<const ExportEpoch>;

// Counters of the export (atomics: the exporter's and the control thread write, anyone reads).
struct ExportCounters {
    std::atomic<uint64_t> epochs{0};          // epochs acknowledged by Redis
    std::atomic<uint64_t> keys{0};            // their (key, delta) pairs
    std::atomic<uint64_t> applied{0};         // partition batches the script applied
    std::atomic<uint64_t> already{0};         // batches it found applied before (not twice)
    std::atomic<uint64_t> errors{0};          // failed tries (unreachable, error reply): retried
    std::atomic<uint64_t> wait_short{0};      // WAIT saw no replica in time: retried
    std::atomic<uint64_t> backlog{0};         // epochs not yet acknowledged (now)
    std::atomic<uint64_t> taken_sum{0};       // wrapping sum of the values put in epochs
    std::atomic<uint64_t> backlog_full{0};    // export periods skipped: the backlog was full
    std::atomic<uint64_t> last_export_us{0};  // the last acknowledged epoch's export time
    std::atomic<uint64_t> held{0};            // deltas held apart (their field not an integer)
    std::atomic<uint64_t> released{0};        // held deltas applied since (their field repaired)
    std::atomic<uint64_t> held_fields{0};     // fields in the held hashes at the last look (now)
    std::atomic<uint64_t> unexported_sum{0};  // wrapping sum of the epochs left at the stop
};

// What --state keeps of the export: the instance's id (the markers' field), the next epoch's
// number and the epochs not acknowledged yet.
struct ExportImage {
    uint64_t instance = 0;  // 0: no export part
    uint64_t next_epoch = 1;
    std::vector<EpochPtr> epochs;
};

// The epochs between the control thread (adds them) and the exporter thread (takes them off
// once acknowledged). An epoch is exported only once it is durable (in a --state checkpoint):
// a crash before cannot make the restarted kvagg give the same epoch number other sums.
class ExportBacklog {
  public:
    ExportBacklog(size_t bound, ExportCounters& counters);
    void restore(const ExportImage& image);  // before use: those epochs are durable
    bool full() const;
    // The sums as the next epoch (not yet durable); its number.
    uint64_t add(std::vector<AggSlot> sums);
    void durable_through(uint64_t epoch);
    ExportImage image() const;
    uint64_t instance() const { return instance_; }
    void set_instance(uint64_t id) { instance_ = id; }
    size_t size() const;
    // Every epoch not acknowledged, as one sum per key (wrapping), ascending keys.
    std::vector<AggSlot> sums_left() const;

    // Exporter side: the oldest durable epoch, waiting up to `wait` for one (nullptr: none).
    EpochPtr oldest_durable(std::chrono::milliseconds wait);
    void acknowledged(uint64_t epoch);
    void stop();  // wakes the waiting exporter

  private:
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<EpochPtr> epochs_;
    size_t bound_;
    uint64_t instance_ = 0;
    uint64_t next_epoch_ = 1;
    uint64_t durable_ = 0;  // epochs up to it are in a checkpoint
    bool stopping_ = false;
    ExportCounters& counters_;
};

}  // namespace linerate::kvagg
