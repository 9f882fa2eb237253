#pragma once
// kvagg --state's checkpointer: the image the workers copy their tables and windows into, the
// encoded file written atomically (kv_state.hpp), what status calls durable, and the counters.
// Control thread only (or after the stop); the counters are readable by anyone.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvagg/control_job.hpp"
#include "kvagg/dup_window.hpp"
#include "kvagg/export_backlog.hpp"
#include "kvagg/kv_state.hpp"

namespace linerate::kvagg {

// --state (per-worker tables only): a checkpoint every `period` on the control thread, one
// before answering a flush with reset, and one at the stop.
struct StateConfig {
    std::string path;
    std::chrono::milliseconds period{0};
    StateLayout layout;
    std::chrono::milliseconds pause{0};  // test hook: between the fsync and the rename
};

// --state's checkpoints (written by the control thread, read by anyone).
struct StateCounters {
    std::atomic<uint64_t> checkpoints{0};      // written by this run
    std::atomic<uint64_t> failures{0};         // not written (the file keeps the one before)
    std::atomic<uint64_t> last_checkpoint{0};  // its number, over every run on the file
    std::atomic<uint64_t> last_bytes{0};       // the file's size
    std::atomic<uint64_t> last_us{0};          // copy + encode + write + fsync + rename
    std::atomic<uint64_t> last_copy_us{0};     // the longest worker's copy: its pause in RX
    std::atomic<uint64_t> max_copy_us{0};      // the same, the longest of this run
    std::atomic<uint64_t> copy_total_us{0};    // every worker's copies summed: RX time given up
};

class Checkpointer {
  public:
    // Before any worker runs. The copies' slots are allocated and written here: sized and zeroed
    // by the worker's first copy, their page faults paused its RX 14-26 ms (32 MiB table, 4 KiB
    // pages) against about 2 ms for a copy into touched memory.
    Checkpointer(const StateConfig& cfg, size_t workers);

    const StateConfig& config() const { return cfg_; }
    // --export: every checkpoint holds the backlog's epochs, and tells it which are durable.
    void keep_exports(ExportBacklog& backlog) { backlog_ = &backlog; }
    // Before any worker runs: a loaded file's number, and its windows, what is durable until the
    // first checkpoint.
    void restore(const StateImage& loaded);
    // Where worker `w` copies its table and windows (ControlJob::snapshot).
    WorkerImage* image_of(size_t w) { return &image_.workers[w]; }
    // Writes the workers' copies (`copies`: done, started at `t0`) with the control part as the
    // next checkpoint; false when the write failed (the file keeps the last checkpoint; the line
    // is printed).
    bool write(std::span<const ControlJob> copies, const ControlImage& control,
               std::chrono::steady_clock::time_point t0);
    // The highest sequence number of the stream through which every number is in the file.
    uint64_t durable_through(uint32_t stream) const;
    const StateCounters& counters() const { return counters_; }

  private:
    void count_copies(std::span<const ControlJob> copies);
    void made_durable(std::chrono::steady_clock::time_point t0);

    StateConfig cfg_;
    StateImage image_;
    std::vector<uint8_t> file_;  // the encoded checkpoint, its capacity kept between checkpoints
    std::vector<DupFilter> durable_;  // the windows of the last checkpoint written
    uint64_t checkpoint_no_ = 0;      // its number
    StateCounters counters_;
    ExportBacklog* backlog_ = nullptr;  // --export
};

}  // namespace linerate::kvagg
