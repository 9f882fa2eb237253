#pragma once
// kvagg's service ops (read, status, flush; docs/kvagg.md "Service ops"), off the tuple path.
//
// A worker that receives a request (the kernel's verdict `request`) hands it to the control
// thread (control_thread.hpp) and goes on. KvControl answers it there: it asks every worker for
// its part (control_job.hpp, through the worker's request slot), merges the parts (sums added per
// key, stream states combined) and writes the response frames, which the control thread posts
// back to the receiving worker. Exactness: each tuple is added by exactly one worker, before or
// after that worker served the job, so a read returns, per worker, the sums at one instant, and
// a flush with reset takes every amount exactly once (what a worker added after serving the job
// stays in its table for the next epoch). A reset flush is remembered (flush_memory.hpp) and
// made durable (checkpointer.hpp, --state) before it is answered.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <type_traits>
#include <vector>

#include "kvagg/checkpointer.hpp"
#include "kvagg/control_job.hpp"
#include "kvagg/control_thread.hpp"
#include "kvagg/export_backlog.hpp"
#include "kvagg/flush_memory.hpp"
#include "kvagg/kv_wire.hpp"
#include "kvagg/worker_link.hpp"
#include "linerate/message_auth.hpp"

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
// An error reply to `r` (docs/wire-formats.md "Error replies"): op | 0x80, count = code, the
// last frame with LINERATE_KV_ERROR, no body, never MAC'd: no larger than any request.
std::vector<uint8_t> error_response(const uint8_t* request, const KvRequest& r, uint16_t code);
// Appends the trailer of `mac` to a response frame of `r` and fixes its lengths and checksum.
void sign_response(std::vector<uint8_t>& frame, const KvRequest& r, auth::MessageMac& mac);

// At most kRate error replies a second in all, in bursts of at most kBurst: a flood of refused
// requests draws little traffic. Any thread (the workers refuse who may not ask, the control
// thread requests too small for their answer), without a lock: a worker under a flood of
// strangers' requests pays a clock read and one atomic load for each refusal beyond the budget.
// The generic cell rate algorithm: `due_` is when the budget is whole again; a reply is allowed
// while that is less than a burst's time ahead, and moves it one reply's time on.
class ReplyBudget {
  public:
    static constexpr int64_t kRate = 10, kBurst = 10;
    bool take() {
        constexpr int64_t kEach = 1'000'000'000 / kRate, kLimit = kBurst * kEach;
        const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now().time_since_epoch())
                                .count();
        int64_t due = due_.load(std::memory_order_relaxed);
        for (;;) {
            const int64_t next = std::max(due, now) + kEach;
            if (next - now > kLimit) return false;
            if (due_.compare_exchange_weak(due, next, std::memory_order_relaxed)) return true;
        }
    }

  private:
    std::atomic<int64_t> due_{0};
};

// Counters of the control path (written by the control thread, read by anyone).
struct ControlCounters {
    std::atomic<uint64_t> reads{0}, statuses{0}, flushes{0};
    std::atomic<uint64_t> flushed_sum{0};    // wrapping sum of the amounts flush-reset took out
    std::atomic<uint64_t> flush_repeats{0};  // repeats of a reset flush answered from memory
    // Reset flushes below their stream's last one (replayed): never executed, not answered.
    std::atomic<uint64_t> flush_replayed{0};
    std::atomic<uint64_t> error_replies{0};          // sent (codes 1-3)
    std::atomic<uint64_t> error_replies_limited{0};  // not sent: ReplyBudget spent
};

template <class Table>
class KvControl {
  public:
    static constexpr bool kShared = std::is_same_v<Table, SharedAggTable>;
    using Frames = std::vector<std::vector<uint8_t>>;
    using StateConfig = kvagg::StateConfig;

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
          instance_(uint64_t(std::random_device{}()) << 32 | std::random_device{}()),
          thread_(slots(workers_), [this](const uint8_t* frame, size_t len, uint16_t port) {
              return answer(frame, len, port);
          }) {}
    ~KvControl() { stop(); }

    // --state (per-worker tables only), before start(). The workers' tables and windows are
    // the caller's to restore; restore() takes the control part of a loaded file.
    void enable_state(const StateConfig& cfg) { checkpointer_.emplace(cfg, workers_.size()); }
    void restore(const StateImage& loaded) {
        counters_.flushes.store(loaded.control.flushes);
        counters_.flushed_sum.store(loaded.control.flushed_sum);
        memory_.restore(loaded.control.last_reset);
        if (checkpointer_) checkpointer_->restore(loaded);
    }
    // Copies every worker's part (between two of its bursts) and writes them to the state file;
    // false without --state or when the write failed (the file keeps the last checkpoint).
    bool checkpoint_now() {
        if constexpr (kShared) {
            return false;  // --state is refused with the shared table: nothing copies it
        } else {
            if (!checkpointer_) return false;
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<ControlJob> copies(workers_.size());
            for (size_t w = 0; w < copies.size(); ++w)
                copies[w].snapshot = checkpointer_->image_of(w);
            gather(copies);
            return checkpointer_->write(
                copies, {counters_.flushes.load(), counters_.flushed_sum.load(), memory_.saved()},
                t0);
        }
    }
    uint64_t instance() const { return instance_; }
    // --key, before start(): every response frame is MAC'd (here, on the control thread) and
    // the unkeyed limits do not apply (the workers verified the requests).
    void enable_key(const auth::Key& key) { signer_.emplace(key); }

    // An error reply to a refused request, counted; nullopt when the budget is spent (counted
    // too). Any thread.
    std::optional<std::vector<uint8_t>> refuse(const uint8_t* frame, const KvRequest& r,
                                               uint16_t code) {
        if (!error_budget_.take()) {
            counters_.error_replies_limited.fetch_add(1, std::memory_order_relaxed);
            return std::nullopt;
        }
        counters_.error_replies.fetch_add(1, std::memory_order_relaxed);
        return error_response(frame, r, code);
    }

    // --export, after enable_state() and before start(): every `period` the control thread
    // takes the tables' sums out (a flush with reset) as the backlog's next epoch, makes it
    // durable (a checkpoint, with --state) and so hands it to the exporter. A full backlog leaves
    // the sums in the tables: the next epoch takes them (one line when it fills, one when it has
    // room again).
    void enable_export(ExportBacklog& backlog, ExportCounters& counters,
                       std::chrono::milliseconds period) {
        backlog_ = &backlog;
        export_counters_ = &counters;
        export_period_ = period;
        if (checkpointer_) checkpointer_->keep_exports(backlog);
    }
    // One epoch now (the control thread's timer, or the caller's after stop()); false when
    // nothing was taken (no sums, or the backlog full).
    bool export_epoch_now() {
        if (backlog_ == nullptr || backlog_full()) return false;
        const KvRequest r{.verdict = KvVerdict::request, .op = kKvOpFlush, .flags = kKvFlushReset};
        std::vector<ControlJob> parts = table_parts(r);
        std::vector<AggSlot> sums = merge_sums(parts);
        if (sums.empty()) return false;
        uint64_t taken = 0;
        for (const AggSlot& s : sums) taken += s.value;
        export_counters_->taken_sum.fetch_add(taken, std::memory_order_relaxed);
        const uint64_t epoch = backlog_->add(std::move(sums));
        if (!checkpointer_)
            backlog_->durable_through(epoch);  // nothing to crash into: exported from memory
        else
            checkpoint_now();  // durable (and so exported) once a checkpoint holds it
        return true;
    }

    // on_thread: run first on the control thread (the app sets its CPU affinity there).
    void start(std::function<void()> on_thread = {}) {
        const auto now = Clock::now();
        next_checkpoint_ = now + checkpoint_period();
        next_export_ = now + export_period_;
        thread_.start(std::move(on_thread), [this] { return run_timers(); });
    }
    void stop() { thread_.stop(); }
    // Worker side: see ControlThread::submit.
    bool submit(unsigned worker, uint16_t port, const uint8_t* frame, size_t len) {
        return thread_.submit(worker, port, frame, len);
    }

    // The response frames to one request (synchronously, on the caller's thread), which the
    // worker let through (KvKernel::request_gate). A flush with reset is answered at most once:
    // a repeat of a stream's last one gets the same frames again without flushing anything
    // (flush_memory.hpp), an older one nothing. With --key every frame is MAC'd; without, the
    // answer is one frame no longer than the request (answer_unkeyed).
    Frames answer(const uint8_t* frame, size_t len, uint16_t port) {
        const KvRequest r = parse_kv_request(frame, len, udp_port_);
        if (r.verdict != KvVerdict::request) return {};  // the worker checked it already
        if (r.op == kKvOpFlush && r.reset() && memory_.older_than_last(r.stream, r.seq)) {
            counters_.flush_replayed.fetch_add(1, std::memory_order_relaxed);
            return {};
        }
        const size_t max_frame = max_frame_(port, r.l3_offset);
        if (!signer_) return answer_unkeyed(frame, r, max_frame);
        Frames out = answer_keyed(frame, r, max_frame - auth::kTrailerLen);
        for (std::vector<uint8_t>& f : out) sign_response(f, r, *signer_);
        return out;
    }

    const ControlCounters& counters() const { return counters_; }
    const StateCounters& state_counters() const {
        static const StateCounters none;
        return checkpointer_ ? checkpointer_->counters() : none;
    }

  private:
    using Clock = std::chrono::steady_clock;

    std::chrono::milliseconds checkpoint_period() const {
        return checkpointer_ ? checkpointer_->config().period : std::chrono::milliseconds(0);
    }
    // The control thread's timed tasks: the periodic checkpoint and the export's epoch, when
    // due; returns when the next one is (nullopt: none).
    std::optional<Clock::time_point> run_timers() {
        const bool checkpoints = checkpoint_period().count() > 0;
        const bool exports = backlog_ != nullptr && export_period_.count() > 0;
        if (exports && Clock::now() >= next_export_) {
            next_export_ = Clock::now() + export_period_;
            if (export_epoch_now()) next_checkpoint_ = Clock::now() + checkpoint_period();
        }
        if (checkpoints && Clock::now() >= next_checkpoint_) {
            checkpoint_now();
            next_checkpoint_ = Clock::now() + checkpoint_period();
        }
        if (!checkpoints && !exports) return std::nullopt;
        return std::min(checkpoints ? next_checkpoint_ : Clock::time_point::max(),
                        exports ? next_export_ : Clock::time_point::max());
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

    static std::vector<RequestSlot*> slots(const std::vector<Worker>& workers) {
        std::vector<RequestSlot*> s;
        for (const Worker& w : workers) s.push_back(w.link);
        return s;
    }

    // A MAC'd request: answered as large as it takes (frames of at most max_frame bytes).
    Frames answer_keyed(const uint8_t* frame, const KvRequest& r, size_t max_frame) {
        if (r.op == kKvOpRead) return read_frames(frame, r, max_frame);
        if (r.op != kKvOpFlush) return {status_frame(frame, r, max_frame)};
        if (!r.reset()) return tuple_responses(frame, r, flush(r), max_frame);
        if (const Frames* again = repeat(r)) return *again;
        return end_epoch(frame, r, max_frame);
    }

    // No MAC (a source in --allow): one frame whose UDP payload is no longer than the
    // request's (the client pads it to ask for room), or error 3 when even the least answer
    // does not fit: a read's every key, a status without missing numbers, one flushed tuple.
    Frames answer_unkeyed(const uint8_t* frame, const KvRequest& r, size_t max_frame) {
        const size_t room = std::min(r.app_len, max_frame - r.app_offset);
        size_t least = kKvHeaderLen + kKvTupleLen;  // a flush: one tuple
        if (r.op == kKvOpRead) least = kKvHeaderLen + r.count * kKvTupleLen;
        if (r.op == kKvOpStatus) least = kKvHeaderLen + kKvStatusBodyLen + kKvStatusTailLen;
        if (r.op == kKvOpFlush && r.count)
            least += 2 * LINERATE_KV_KEY_LEN;  // the range's own bytes
        if (room < least) {
            std::optional<std::vector<uint8_t>> e = refuse(frame, r, kKvErrTooSmall);
            return e ? Frames{std::move(*e)} : Frames{};
        }
        const size_t limit = r.app_offset + room;
        if (r.op == kKvOpRead) return read_frames(frame, r, limit);
        if (r.op == kKvOpStatus) return {status_frame(frame, r, limit)};
        return paged_flush(frame, r, limit);
    }

    // An unkeyed flush: one frame listing the range's keys from its low end, as many as fit in
    // frames of `limit` bytes; the last frame flag only when the listing reached the range's
    // end (the client asks again from the next key). With reset only the listed keys are taken
    // out, with the sums listed (what was added meanwhile to them comes with the next flush).
    Frames paged_flush(const uint8_t* frame, const KvRequest& r, size_t limit) {
        if (const Frames* again = r.reset() ? repeat(r) : nullptr) return *again;
        const size_t per_frame = (limit - r.app_offset - kKvHeaderLen) / kKvTupleLen;
        KvRequest look = r;
        look.flags = 0;  // the range's sums, nothing reset
        std::vector<ControlJob> listing = table_parts(look);
        std::vector<AggSlot> sums = merge_sums(listing);
        const bool to_the_end = sums.size() <= per_frame;
        if (!to_the_end) sums.resize(per_frame);
        if (r.reset()) {
            std::vector<uint64_t> keys;
            for (const AggSlot& s : sums) keys.push_back(s.key);
            sums = count_flush(table_parts(r, &keys));
        } else {
            counters_.flushes.fetch_add(1, std::memory_order_relaxed);
        }
        Frames out = tuple_responses(frame, r, sums, limit);  // one frame: they fit
        if (!to_the_end) mark_not_last(out.front(), r);
        if (r.reset()) {
            memory_.remember(r.stream, r.seq, out);
            checkpoint_now();
        }
        return out;
    }

    static void mark_not_last(std::vector<uint8_t>& f, const KvRequest& r) {
        uint8_t* const reserved = f.data() + r.app_offset + kKvReservedOff;
        pkt::store_be32(reserved, pkt::load_be32(reserved) & ~kKvLastFrame);
        finish_kv_response(f.data(), r, f.size());
    }

    // The remembered answer when `r` repeats its stream's last reset flush (counted).
    const Frames* repeat(const KvRequest& r) {
        const Frames* again = memory_.repeat_of(r.stream, r.seq);
        if (again) counters_.flush_repeats.fetch_add(1, std::memory_order_relaxed);
        return again;
    }

    // A flush with reset, not a repeat: the one place an epoch ends. Its sums are taken out of
    // every table (flush()), the answer remembered and made durable (--state) before it is
    // given: a restart can neither give these amounts again nor lose the answer (a repeat finds
    // it in the file).
    Frames end_epoch(const uint8_t* frame, const KvRequest& r, size_t max_frame) {
        const std::vector<AggSlot> epoch = flush(r);
        Frames frames = tuple_responses(frame, r, epoch, max_frame);
        memory_.remember(r.stream, r.seq, frames);
        checkpoint_now();
        return frames;
    }

    // Every table's sums in the request's key range, taken out with reset; counted.
    std::vector<AggSlot> flush(const KvRequest& r) { return count_flush(table_parts(r)); }
    // A flush's parts merged, counted.
    std::vector<AggSlot> count_flush(std::vector<ControlJob> parts) {
        counters_.flushes.fetch_add(1, std::memory_order_relaxed);
        uint64_t flushed = 0;
        for (const ControlJob& p : parts) flushed += p.flushed;
        counters_.flushed_sum.fetch_add(flushed, std::memory_order_relaxed);
        return merge_sums(parts);
    }

    Frames read_frames(const uint8_t* frame, const KvRequest& r, size_t max_frame) {
        const std::vector<ControlJob> parts = table_parts(r);
        counters_.reads.fetch_add(1, std::memory_order_relaxed);
        std::vector<AggSlot> sums(r.count);
        for (size_t i = 0; i < r.count; ++i) {
            sums[i] = {r.key(i), 0};
            for (const ControlJob& p : parts) sums[i].value += p.values[i];
        }
        return tuple_responses(frame, r, sums, max_frame);
    }

    std::vector<uint8_t> status_frame(const uint8_t* frame, const KvRequest& r, size_t max_frame) {
        std::vector<ControlJob> parts(workers_.size());
        for (ControlJob& p : parts)
            p = {.request = &r, .max_missing = status_capacity(r, max_frame)};
        gather(parts);
        counters_.statuses.fetch_add(1, std::memory_order_relaxed);
        const bool window_on = workers_.front().dup->window() != 0;
        StatusReply s = merge_status(parts, window_on, status_capacity(r, max_frame));
        s.instance = instance_;
        if (checkpointer_) {
            s.flags |= kKvStatusDurable;
            s.durable_through = checkpointer_->durable_through(r.stream);
        }
        return status_response(frame, r, s);
    }

    // The parts of a read or flush: every worker's own table (each read by its worker), or the
    // shared table: read here (atomic loads of every column), reset by every worker (each its
    // own column: its adds are not atomic read-modify-writes, shared_agg_table.hpp).
    // take: a paged flush's listed keys (ControlJob::take).
    std::vector<ControlJob> table_parts(const KvRequest& r,
                                        const std::vector<uint64_t>* take = nullptr) {
        if constexpr (kShared) {
            if (r.op != kKvOpFlush || !r.reset()) {
                std::vector<ControlJob> shared(1);
                shared[0] = {.request = &r, .take = take};
                run_shared_table_job(shared[0], *workers_.front().table);
                return shared;
            }
        }
        std::vector<ControlJob> parts(workers_.size());
        for (unsigned w = 0; w < parts.size(); ++w)
            parts[w] = {.request = &r, .take = take, .writer = w};
        gather(parts);
        return parts;
    }

    // Every worker's part: posted to running workers, done here for stopped ones.
    void gather(std::span<ControlJob> parts) {
        for (size_t w = 0; w < workers_.size(); ++w) post_job(*workers_[w].link, &parts[w]);
        for (size_t w = 0; w < workers_.size(); ++w)
            wait_job(*workers_[w].link,
                     [&] { run_job(parts[w], *workers_[w].table, *workers_[w].dup); });
    }

    std::vector<Worker> workers_;
    std::function<size_t(uint16_t, size_t)> max_frame_;
    uint16_t udp_port_;
    uint64_t instance_;
    ControlCounters counters_;
    ReplyBudget error_budget_;
    std::optional<auth::MessageMac> signer_;  // --key: the control thread's
    FlushMemory memory_;
    std::optional<Checkpointer> checkpointer_;  // with --state
    // --export: the backlog the exporter takes epochs from, its counters, the period.
    ExportBacklog* backlog_ = nullptr;
    ExportCounters* export_counters_ = nullptr;
    std::chrono::milliseconds export_period_{0};
    bool backlog_was_full_ = false;
    Clock::time_point next_checkpoint_, next_export_;  // the control thread's timers
    ControlThread thread_;                             // last: stopped first, it uses the rest
};

}  // namespace linerate::kvagg
