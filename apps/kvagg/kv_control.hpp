#pragma once
// kvagg's service ops (read, status, flush; docs/kvagg.md "Service ops"), off the tuple path.
//
// A worker that receives a request (the kernel's verdict `request`) copies it into the control
// inbox and goes on. The control thread takes it, asks every worker for its part through the
// worker's job slot (WorkerLink::job): a per-worker table and duplicate window have one writer,
// their worker, so only that worker reads them, between two bursts; a stopped worker's part is
// read directly. The parts are merged (sums added per key, stream states combined), the response
// frames written here, and handed back to the receiving worker's outbox, which transmits them
// on the port and queue the request came in on. Exactness: each tuple is added by exactly one
// worker, before or after that worker served the job, so a read returns, per worker, the sums
// at one instant, and a flush with reset takes every amount exactly once (what a worker added
// after serving the job stays in its table for the next epoch). The shared table (--agg shared)
// is read and reset by the control thread itself with atomic loads and exchanges.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "kvagg/agg_table.hpp"
#include "kvagg/dup_window.hpp"
#include "kvagg/export_backlog.hpp"
#include "kvagg/kv_state.hpp"
#include "kvagg/kv_wire.hpp"
#include "kvagg/shared_agg_table.hpp"
#include "kvagg/worker_link.hpp"

namespace linerate::kvagg {

// The status response body after the app header (8-byte big-endian fields), then `count`
// missing sequence numbers (8 bytes each); the flags' bits (include/linerate/kvagg_wire.h).
inline constexpr size_t kKvStatusBodyLen = LINERATE_KV_STATUS_BODY_LEN;
inline constexpr uint64_t kKvStatusKnown = LINERATE_KV_STATUS_KNOWN;  // some worker saw it
inline constexpr uint64_t kKvStatusSplit = LINERATE_KV_STATUS_SPLIT;  // more than one (no RSS)
inline constexpr uint64_t kKvStatusNoWindow = LINERATE_KV_STATUS_NO_WINDOW;  // --dup-window 0
inline constexpr uint64_t kKvStatusDurable =
    LINERATE_KV_STATUS_DURABLE;                                          // --state: durable_through
inline constexpr size_t kKvStatusTailLen = LINERATE_KV_STATUS_TAIL_LEN;  // after the missing list

// One worker's part of a request, filled by that worker (or by the control thread once the
// worker stopped).
struct ControlJob {
    const KvRequest* request = nullptr;
    WorkerImage* snapshot = nullptr;  // a checkpoint: copy the table and windows here instead
    uint64_t copy_ns = 0;             // a checkpoint: how long the worker spent copying
    bool table_part = true;           // per-worker tables: read or flush this worker's table
    size_t max_missing = 0;
    std::vector<uint64_t> values;      // read: one per key (0 when absent)
    std::vector<AggSlot> sums;         // flush
    uint64_t flushed = 0;              // flush with reset: wrapping sum taken out
    std::optional<StreamState> state;  // status
};

// Does `job` on a per-worker table and window (the owner's thread, or after it stopped).
void run_job(ControlJob& job, AggTable& table, const DupFilter& dup);
// The shared table's part (any thread: atomic reads and exchanges).
void run_shared_table_job(ControlJob& job, SharedAggTable& table);

// Merged status of the workers' parts.
struct StatusReply {
    uint64_t flags = 0;
    StreamState state;
    uint64_t durable_through = 0;  // with kKvStatusDurable: every seq up to it is in --state
    uint64_t instance = 0;         // random at each start: a restart changes it
};
StatusReply merge_status(std::span<const ControlJob> parts, bool window_on, size_t max_missing);
// Sums per key over the parts' flush output, ascending keys, zeros left out.
std::vector<AggSlot> merge_sums(std::span<ControlJob> parts);

// Response frames of at most max_frame bytes: tuples (read, flush) as many frames as needed
// (at least one, which may be empty), or the status frame.
std::vector<std::vector<uint8_t>> tuple_responses(const uint8_t* request, const KvRequest& r,
                                                  std::span<const AggSlot> tuples,
                                                  size_t max_frame);
std::vector<uint8_t> status_response(const uint8_t* request, const KvRequest& r,
                                     const StatusReply& s);
// Missing sequence numbers a status frame of at most max_frame bytes can list.
size_t status_capacity(const KvRequest& r, size_t max_frame);

// Counters of the control path (written by the control thread, read by anyone).
struct ControlCounters {
    std::atomic<uint64_t> reads{0}, statuses{0}, flushes{0};
    std::atomic<uint64_t> flushed_sum{0};    // wrapping sum of the amounts flush-reset took out
    std::atomic<uint64_t> flush_repeats{0};  // repeats of a reset flush answered from memory
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

template <class Table>
class KvControl {
  public:
    static constexpr bool kShared = std::is_same_v<Table, SharedAggTable>;
    static constexpr size_t kInboxLimit = 256;  // queued requests; more are refused (busy)

    struct Worker {
        Table* table;          // its own table, or the shared one
        const DupFilter* dup;  // its duplicate window
        WorkerLink* link;
    };
    // max_frame(port, l3_offset): the largest response frame that port may carry.
    KvControl(std::vector<Worker> workers, std::function<size_t(uint16_t, size_t)> max_frame,
              uint16_t udp_port)
        : workers_(std::move(workers)),
          max_frame_(std::move(max_frame)),
          udp_port_(udp_port),
          instance_(uint64_t(std::random_device{}()) << 32 | std::random_device{}()) {}
    ~KvControl() { stop(); }

    // --state (per-worker tables only): a checkpoint every `period` on the control thread,
    // one before answering a flush with reset, and checkpoint_now() at the stop.
    struct StateConfig {
        std::string path;
        std::chrono::milliseconds period{0};
        StateLayout layout;
        std::chrono::milliseconds pause{0};  // test hook: between the fsync and the rename
    };
    // Before start(). The workers' tables and windows are the caller's to restore (restore()).
    // The copies' slots are allocated and written here, before any worker runs: sized and
    // zeroed by the worker's first copy, their page faults paused its RX 14-26 ms (32 MiB
    // table, 4 KiB pages) against about 2 ms for a copy into touched memory.
    void enable_state(const StateConfig& cfg) {
        state_ = cfg;
        for (size_t w = 0; w < workers_.size(); ++w) {
            image_.workers.push_back(
                {{}, DupFilter(cfg.layout.dup_window, cfg.layout.max_streams)});
            AggTableCopy& copy = image_.workers.back().table;
            copy.slots.assign(cfg.layout.slots, AggSlot{0, 0});
            if (cfg.layout.index == IndexMode::hash)
                copy.lines.assign(agg_line_words(cfg.layout.slots), 0);  // no key in it yet
            durable_.emplace_back(cfg.layout.dup_window, cfg.layout.max_streams);
        }
    }
    // Before start(), after enable_state(): the control part of a loaded file; its windows are
    // what is durable until the first checkpoint.
    void restore(const StateImage& loaded) {
        counters_.flushes.store(loaded.control.flushes);
        counters_.flushed_sum.store(loaded.control.flushed_sum);
        last_reset_ = loaded.control.last_reset;
        checkpoint_no_ = loaded.checkpoint;
        for (size_t w = 0; w < durable_.size(); ++w) durable_[w] = loaded.workers[w].dup;
    }
    // Copies every worker's part (between two of its bursts) and writes them to the state file;
    // false when the write failed (the file keeps the last checkpoint; the line is printed).
    bool checkpoint_now() {
        if constexpr (kShared) {
            return false;
        } else {
            if (state_.path.empty()) return false;
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<ControlJob> parts(workers_.size());
            for (size_t w = 0; w < parts.size(); ++w) parts[w].snapshot = &image_.workers[w];
            gather(parts);
            uint64_t copy_ns = 0, copy_sum_ns = 0;
            for (const ControlJob& p : parts) {
                copy_ns = std::max(copy_ns, p.copy_ns);
                copy_sum_ns += p.copy_ns;
            }
            state_counters_.copy_total_us.fetch_add(copy_sum_ns / 1000, std::memory_order_relaxed);
            state_counters_.last_copy_us.store(copy_ns / 1000, std::memory_order_relaxed);
            if (copy_ns / 1000 > state_counters_.max_copy_us.load(std::memory_order_relaxed))
                state_counters_.max_copy_us.store(copy_ns / 1000, std::memory_order_relaxed);
            image_.checkpoint = checkpoint_no_ + 1;
            image_.control = {counters_.flushes.load(), counters_.flushed_sum.load(), last_reset_};
            if (backlog_) image_.exports = backlog_->image();
            return write_checkpoint(t0);
        }
    }
    uint64_t instance() const { return instance_; }

    // --export, before start(): every `period` the control thread takes the tables' sums out
    // (a flush with reset) as the backlog's next epoch, makes it durable (a checkpoint, with
    // --state) and so hands it to the exporter. A full backlog leaves the sums in the tables:
    // the next epoch takes them (one line when it fills, one when it has room again).
    void enable_export(ExportBacklog& backlog, ExportCounters& counters,
                       std::chrono::milliseconds period) {
        backlog_ = &backlog;
        export_counters_ = &counters;
        export_period_ = period;
    }
    // One epoch now (the control thread's timer, or the caller's after stop()); false when
    // nothing was taken (no sums, or the backlog full).
    bool export_epoch_now() {
        if (backlog_ == nullptr || backlog_full()) return false;
        const KvRequest r{.verdict = KvVerdict::request, .op = kKvOpFlush, .flags = kKvFlushReset};
        std::vector<ControlJob> parts(workers_.size());
        for (ControlJob& p : parts) p.request = &r;
        if constexpr (kShared) {
            parts.resize(1);
            run_shared_table_job(parts.front(), *workers_.front().table);
        } else {
            gather(parts);
        }
        std::vector<AggSlot> sums = merge_sums(parts);
        if (sums.empty()) return false;
        uint64_t taken = 0;
        for (const AggSlot& s : sums) taken += s.value;
        export_counters_->taken_sum.fetch_add(taken, std::memory_order_relaxed);
        const uint64_t epoch = backlog_->add(std::move(sums));
        if (state_.path.empty())
            backlog_->durable_through(epoch);  // nothing to crash into: exported from memory
        else
            checkpoint_now();  // durable (and so exported) once a checkpoint holds it
        return true;
    }

    // on_thread: run first on the control thread (the app sets its CPU affinity there).
    void start(std::function<void()> on_thread = {}) {
        thread_ = std::thread([this, on_thread] {
            if (on_thread) on_thread();
            loop();
        });
    }
    void stop() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        if (thread_.joinable()) thread_.join();
    }

    // Worker side: queue a copy of a request frame received on `port`; false when the inbox is
    // full (the worker counts the request as control_busy).
    bool submit(unsigned worker, uint16_t port, const uint8_t* frame, size_t len) {
        {
            std::lock_guard lock(mutex_);
            if (inbox_.size() >= kInboxLimit || stopping_) return false;
            inbox_.push_back({worker, port, std::vector<uint8_t>(frame, frame + len)});
        }
        wake_.notify_one();
        return true;
    }

    // The response frames to one request (synchronously, on the caller's thread).
    // A flush with reset is answered at most once: a repeat of a stream's last one (same stream
    // and sequence number: the client resending after a lost answer) gets the same frames
    // again without flushing anything.
    std::vector<std::vector<uint8_t>> answer(const uint8_t* frame, size_t len, uint16_t port) {
        const KvRequest r = parse_kv_request(frame, len, udp_port_);
        if (r.verdict != KvVerdict::request) return {};  // the worker checked it already
        const bool reset = r.op == kKvOpFlush && r.reset();
        if (reset) {
            auto it = last_reset_.find(r.stream);
            if (it != last_reset_.end() && it->second.first == r.seq) {
                counters_.flush_repeats.fetch_add(1, std::memory_order_relaxed);
                return it->second.second;
            }
        }
        std::vector<std::vector<uint8_t>> frames = answer_now(frame, r, port);
        if (reset) {
            if (last_reset_.size() >= kResetMemory) last_reset_.erase(last_reset_.begin());
            last_reset_[r.stream] = {r.seq, frames};
            // Durable before it is answered: a restart can neither give these amounts again
            // nor lose the answer (a repeat finds it in the file).
            checkpoint_now();
        }
        return frames;
    }

    const ControlCounters& counters() const { return counters_; }
    const StateCounters& state_counters() const { return state_counters_; }

  private:
    bool write_checkpoint(std::chrono::steady_clock::time_point t0) {
        encode_state(state_.layout, image_, file_);
        try {
            write_state_file(state_.path, file_, state_.pause);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "kvagg: checkpoint %llu not written: %s\n",
                         (unsigned long long)image_.checkpoint, e.what());
            state_counters_.failures.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        checkpoint_no_ = image_.checkpoint;
        if (backlog_) backlog_->durable_through(image_.exports.next_epoch - 1);
        image_.exports.epochs.clear();  // their sums not held between checkpoints
        for (size_t w = 0; w < durable_.size(); ++w) std::swap(durable_[w], image_.workers[w].dup);
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - t0);
        state_counters_.checkpoints.fetch_add(1, std::memory_order_relaxed);
        state_counters_.last_checkpoint.store(checkpoint_no_, std::memory_order_relaxed);
        state_counters_.last_bytes.store(file_.size(), std::memory_order_relaxed);
        state_counters_.last_us.store(uint64_t(us.count()), std::memory_order_relaxed);
        return true;
    }

    static constexpr size_t kResetMemory = 256;  // streams whose last reset flush is kept

    std::vector<std::vector<uint8_t>> answer_now(const uint8_t* frame, const KvRequest& r,
                                                 uint16_t port) {
        const size_t max_frame = max_frame_(port, r.l3_offset);
        std::vector<ControlJob> parts(workers_.size());
        for (ControlJob& p : parts) {
            p.request = &r;
            p.table_part = !kShared;
            p.max_missing = status_capacity(r, max_frame);
        }
        const bool table_jobs = r.op != kKvOpStatus;
        if constexpr (kShared) {
            ControlJob shared{.request = &r};
            if (table_jobs) run_shared_table_job(shared, *workers_.front().table);
            if (r.op == kKvOpStatus) gather(parts);
            return finish(frame, r, max_frame,
                          table_jobs ? std::span<ControlJob>(&shared, 1) : std::span(parts));
        } else {
            gather(parts);
            return finish(frame, r, max_frame, parts);
        }
    }

    struct Request {
        unsigned worker;
        uint16_t port;
        std::vector<uint8_t> frame;
    };

    using Clock = std::chrono::steady_clock;
    // The periodic checkpoint and export when due; the time of the next one (max: none).
    Clock::time_point run_timers(Clock::time_point& next_checkpoint,
                                 Clock::time_point& next_export) {
        const bool checkpoints = !state_.path.empty() && state_.period.count() > 0;
        const bool exports = backlog_ != nullptr && export_period_.count() > 0;
        if (exports && Clock::now() >= next_export) {
            next_export = Clock::now() + export_period_;
            if (export_epoch_now()) next_checkpoint = Clock::now() + state_.period;  // just done
        }
        if (checkpoints && Clock::now() >= next_checkpoint) {
            checkpoint_now();
            next_checkpoint = Clock::now() + state_.period;
        }
        return std::min(checkpoints ? next_checkpoint : Clock::time_point::max(),
                        exports ? next_export : Clock::time_point::max());
    }

    bool backlog_full() {
        const bool full = backlog_->full();
        if (full != backlog_was_full_)
            std::fprintf(stderr,
                         full ? "kvagg: --export: backlog full (%zu epochs not acknowledged by "
                                "Redis): the sums stay in the tables until it has room\n"
                              : "kvagg: --export: backlog has room again (%zu epochs)\n",
                         backlog_->size());
        backlog_was_full_ = full;
        if (full) export_counters_->backlog_full.fetch_add(1, std::memory_order_relaxed);
        return full;
    }

    void loop() {
        auto next_checkpoint = Clock::now() + state_.period;
        auto next_export = Clock::now() + export_period_;
        for (;;) {
            const Clock::time_point next = run_timers(next_checkpoint, next_export);
            Request req;
            {
                std::unique_lock lock(mutex_);
                auto ready = [&] { return stopping_ || !inbox_.empty(); };
                if (next != Clock::time_point::max())
                    wake_.wait_until(lock, next, ready);
                else
                    wake_.wait(lock, ready);
                if (stopping_) return;
                if (inbox_.empty()) continue;  // a timer's time
                req = std::move(inbox_.front());
                inbox_.pop_front();
            }
            std::vector<std::vector<uint8_t>> frames =
                answer(req.frame.data(), req.frame.size(), req.port);
            WorkerLink& link = *workers_[req.worker].link;
            std::lock_guard lock(link.outbox_mutex);
            for (auto& f : frames) link.outbox.push_back({req.port, std::move(f)});
            link.outbox_size.store(uint32_t(link.outbox.size()), std::memory_order_release);
        }
    }

    // Every worker's part: posted to running workers, done directly for stopped ones.
    void gather(std::span<ControlJob> parts) {
        for (size_t w = 0; w < workers_.size(); ++w)
            workers_[w].link->job.store(&parts[w], std::memory_order_release);
        for (size_t w = 0; w < workers_.size(); ++w) {
            WorkerLink& link = *workers_[w].link;
            for (unsigned spins = 0; link.job.load(std::memory_order_acquire) != nullptr; ++spins) {
                // A stopped worker never takes its job again: whoever clears the slot does it.
                if (link.stopped.load(std::memory_order_acquire)) {
                    if (link.job.exchange(nullptr, std::memory_order_acq_rel) != nullptr)
                        run_part(parts[w], w);
                    break;
                }
                if (spins < 64)
                    std::this_thread::yield();
                else
                    std::this_thread::sleep_for(std::chrono::microseconds(10));
            }
        }
    }

    void run_part(ControlJob& job, size_t w) {
        if constexpr (kShared) {
            job.table_part = false;
            run_job_status(job, *workers_[w].dup);
        } else {
            run_job(job, *workers_[w].table, *workers_[w].dup);
        }
    }
    static void run_job_status(ControlJob& job, const DupFilter& dup) {
        job.state = dup.state(job.request->stream, job.max_missing);
    }

    std::vector<std::vector<uint8_t>> finish(const uint8_t* frame, const KvRequest& r,
                                             size_t max_frame, std::span<ControlJob> parts) {
        switch (r.op) {
            case kKvOpRead: {
                counters_.reads.fetch_add(1, std::memory_order_relaxed);
                std::vector<AggSlot> sums(r.count);
                for (size_t i = 0; i < r.count; ++i) {
                    sums[i] = {r.key(i), 0};
                    for (const ControlJob& p : parts) sums[i].value += p.values[i];
                }
                return tuple_responses(frame, r, sums, max_frame);
            }
            case kKvOpFlush: {
                counters_.flushes.fetch_add(1, std::memory_order_relaxed);
                uint64_t flushed = 0;
                for (const ControlJob& p : parts) flushed += p.flushed;
                counters_.flushed_sum.fetch_add(flushed, std::memory_order_relaxed);
                return tuple_responses(frame, r, merge_sums(parts), max_frame);
            }
            default: {
                counters_.statuses.fetch_add(1, std::memory_order_relaxed);
                const bool window_on = workers_.front().dup->window() != 0;
                StatusReply s = merge_status(parts, window_on, status_capacity(r, max_frame));
                s.instance = instance_;
                if (!state_.path.empty()) {
                    s.flags |= kKvStatusDurable;
                    for (const DupFilter& d : durable_)
                        s.durable_through =
                            std::max(s.durable_through, durable_through(d, r.stream));
                }
                return {status_response(frame, r, s)};
            }
        }
    }

    std::vector<Worker> workers_;
    std::function<size_t(uint16_t, size_t)> max_frame_;
    uint16_t udp_port_;
    ControlCounters counters_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Request> inbox_;
    // stream -> (sequence number, response frames) of its last flush with reset.
    std::map<uint32_t, std::pair<uint64_t, std::vector<std::vector<uint8_t>>>> last_reset_;
    bool stopping_ = false;
    std::thread thread_;
    uint64_t instance_;
    // --state: the config, the image the workers copy into, the windows of the last checkpoint
    // written (what status calls durable), its number. Control thread only (or after the stop).
    StateConfig state_;
    StateImage image_;
    std::vector<uint8_t> file_;  // the encoded checkpoint, its capacity kept between checkpoints
    std::vector<DupFilter> durable_;
    uint64_t checkpoint_no_ = 0;
    StateCounters state_counters_;
    // --export: the backlog the exporter takes epochs from, its counters, the period.
    ExportBacklog* backlog_ = nullptr;
    ExportCounters* export_counters_ = nullptr;
    std::chrono::milliseconds export_period_{0};
    bool backlog_was_full_ = false;
};

// Worker side, once per loop iteration: does a posted job. The common case is one relaxed load.
template <class Table>
inline void serve_job(WorkerLink& link, Table& table, const DupFilter& dup) {
    ControlJob* job = link.job.load(std::memory_order_acquire);
    if (job == nullptr) [[likely]]
        return;
    if constexpr (std::is_same_v<Table, SharedAggTable>)
        job->state = dup.state(job->request->stream, job->max_missing);
    else
        run_job(*job, table, dup);
    link.job.store(nullptr, std::memory_order_release);
}

}  // namespace linerate::kvagg
