#pragma once
// The job protocol between kvagg's control thread and its workers: one worker's part of a
// service request (read, flush, status) or of a checkpoint, posted through the worker's request
// slot (request_slot.hpp) and done by that worker between two bursts, or by the control thread
// once the worker stopped. A per-worker table and duplicate window have one writer, their worker,
// so only that worker reads them while it runs. The shared table (--agg shared) is read by the
// control thread itself with atomic loads; a reset of it is each worker's, of its own column of
// sums (shared_agg_table.hpp), as a per-worker table's is.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "kvagg/agg_table.hpp"
#include "kvagg/dup_window.hpp"
#include "kvagg/kv_state.hpp"
#include "kvagg/kv_wire.hpp"
#include "kvagg/request_slot.hpp"
#include "kvagg/shared_agg_table.hpp"

namespace linerate::kvagg {

// One worker's part of a request, filled by that worker (or by the control thread once the
// worker stopped).
struct ControlJob {
    const KvRequest* request = nullptr;
    WorkerImage* snapshot = nullptr;  // a checkpoint: copy the table and windows here instead
    uint64_t copy_ns = 0;             // a checkpoint: how long the worker spent copying
    size_t max_missing = 0;
    // An unkeyed paged flush with reset: take out these keys' sums only (ascending), not the
    // request's range.
    const std::vector<uint64_t>* take = nullptr;
    // The shared table: the writer whose column this job reads or resets (its worker's), or
    // every one (kAllWriters: a read by the control thread).
    unsigned writer = SharedAggTable::kAllWriters;
    std::vector<uint64_t> values;      // read: one per key (0 when absent)
    std::vector<AggSlot> sums;         // flush
    uint64_t flushed = 0;              // flush with reset: wrapping sum taken out
    std::optional<StreamState> state;  // status
};

// Does `job` on a per-worker table and window (the owner's thread, or after it stopped).
void run_job(ControlJob& job, AggTable& table, const DupFilter& dup);
// The shared table's part of a read or flush: job.writer's column (a reset: on that writer's
// thread, or any once it stopped) or every column (atomic loads, any thread).
void run_shared_table_job(ControlJob& job, SharedAggTable& table);
// A worker's part beside the shared table: its window (status), or its column's part of a flush
// with reset.
inline void run_job(ControlJob& job, SharedAggTable& table, const DupFilter& dup) {
    if (job.request->op == kKvOpStatus)
        job.state = dup.state(job.request->stream, job.max_missing);
    else
        run_shared_table_job(job, table);
}

// Worker side: does the posted job, if any, and clears the slot.
template <class Table>
inline void serve_job(RequestSlot& slot, Table& table, const DupFilter& dup) {
    ControlJob* job = slot.job.load(std::memory_order_acquire);
    if (job == nullptr) return;
    run_job(*job, table, dup);
    slot.job.store(nullptr, std::memory_order_release);
}

// Worker side, when its slot has something pending (RequestSlot::has_pending): answers the
// query, does the job; true when response frames wait (take_frames).
template <class Table>
inline bool serve_requests(RequestSlot& slot, Table& table, const DupFilter& dup) {
    const uint32_t bits = slot.take_pending();
    if (bits & RequestSlot::kQuery) serve_query(slot, table);
    if (bits & RequestSlot::kJob) serve_job(slot, table, dup);
    return (bits & RequestSlot::kFrames) != 0;
}

}  // namespace linerate::kvagg
