#include "kvagg/control_job.hpp"

#include <chrono>

namespace linerate::kvagg {

namespace {

// The listed keys' sums taken out (take(key): the sum, now 0), those not 0 kept in the job.
template <class Take>
void take_listed(ControlJob& job, Take take) {
    for (const uint64_t key : *job.take)
        if (const uint64_t v = take(key)) {
            job.sums.push_back({key, v});
            job.flushed += v;
        }
}

}  // namespace

void run_job(ControlJob& job, AggTable& table, const DupFilter& dup) {
    if (job.snapshot) {
        const auto t0 = std::chrono::steady_clock::now();
        table.copy_to(job.snapshot->table);
        job.snapshot->dup = dup;  // same sizes: copies into the buffers it has
        job.copy_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - t0)
                                   .count());
        return;
    }
    const KvRequest& r = *job.request;
    switch (r.op) {
        case kKvOpRead:
            job.values.resize(r.count);
            for (size_t i = 0; i < r.count; ++i) job.values[i] = table.find(r.key(i)).value_or(0);
            break;
        case kKvOpFlush: {
            if (job.take) {
                take_listed(job, [&table](uint64_t key) { return table.take(key); });
                break;
            }
            const uint64_t sum = table.drain(r.range_lo(), r.range_hi(), r.reset(), job.sums);
            if (r.reset()) job.flushed = sum;
            break;
        }
        default:
            job.state = dup.state(r.stream, job.max_missing);
    }
}

void run_shared_table_job(ControlJob& job, SharedAggTable& table) {
    const KvRequest& r = *job.request;
    if (r.op == kKvOpRead) {
        job.values.resize(r.count);
        for (size_t i = 0; i < r.count; ++i) job.values[i] = table.find_live(r.key(i)).value_or(0);
    } else if (r.op == kKvOpFlush && job.take) {
        take_listed(job, [&](uint64_t key) { return table.take_live(key, job.writer); });
    } else if (r.op == kKvOpFlush) {
        const uint64_t sum =
            table.drain_live(r.range_lo(), r.range_hi(), r.reset(), job.sums, job.writer);
        if (r.reset()) job.flushed = sum;
    }
}

}  // namespace linerate::kvagg
