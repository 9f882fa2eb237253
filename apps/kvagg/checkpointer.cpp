#include "kvagg/checkpointer.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>

namespace linerate::kvagg {

Checkpointer::Checkpointer(const StateConfig& cfg, size_t workers) : cfg_(cfg) {
    for (size_t w = 0; w < workers; ++w) {
        image_.workers.push_back({{}, DupFilter(cfg.layout.dup_window, cfg.layout.max_streams)});
        AggTableCopy& copy = image_.workers.back().table;
        copy.slots.assign(cfg.layout.slots, AggSlot{0, 0});
        if (cfg.layout.index == IndexMode::hash)
            copy.lines.assign(agg_line_words(cfg.layout.slots), 0);  // no key in it yet
        durable_.emplace_back(cfg.layout.dup_window, cfg.layout.max_streams);
    }
}

void Checkpointer::restore(const StateImage& loaded) {
    checkpoint_no_ = loaded.checkpoint;
    for (size_t w = 0; w < durable_.size(); ++w) durable_[w] = loaded.workers[w].dup;
}

bool Checkpointer::write(std::span<const ControlJob> copies, const ControlImage& control,
                         std::chrono::steady_clock::time_point t0) {
    count_copies(copies);
    image_.checkpoint = checkpoint_no_ + 1;
    image_.control = control;
    if (backlog_) image_.exports = backlog_->image();
    encode_state(cfg_.layout, image_, file_);
    try {
        write_state_file(cfg_.path, file_, cfg_.pause);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvagg: checkpoint %llu not written: %s\n",
                     (unsigned long long)image_.checkpoint, e.what());
        counters_.failures.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    made_durable(t0);
    return true;
}

uint64_t Checkpointer::durable_through(uint32_t stream) const {
    uint64_t through = 0;
    for (const DupFilter& d : durable_)
        through = std::max(through, kvagg::durable_through(d, stream));
    return through;
}

void Checkpointer::count_copies(std::span<const ControlJob> copies) {
    uint64_t copy_ns = 0, copy_sum_ns = 0;
    for (const ControlJob& c : copies) {
        copy_ns = std::max(copy_ns, c.copy_ns);
        copy_sum_ns += c.copy_ns;
    }
    counters_.copy_total_us.fetch_add(copy_sum_ns / 1000, std::memory_order_relaxed);
    counters_.last_copy_us.store(copy_ns / 1000, std::memory_order_relaxed);
    if (copy_ns / 1000 > counters_.max_copy_us.load(std::memory_order_relaxed))
        counters_.max_copy_us.store(copy_ns / 1000, std::memory_order_relaxed);
}

// The one place a checkpoint becomes durable (the file renamed, its directory fsynced): number
// checkpoint_no_, its tables in image_.workers[w].table and control part in image_.control until
// the next write(), its windows in durable_ (swapped in here).
void Checkpointer::made_durable(std::chrono::steady_clock::time_point t0) {
    checkpoint_no_ = image_.checkpoint;
    if (backlog_) backlog_->durable_through(image_.exports.next_epoch - 1);
    image_.exports.epochs.clear();  // their sums not held between checkpoints
    for (size_t w = 0; w < durable_.size(); ++w) std::swap(durable_[w], image_.workers[w].dup);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - t0);
    counters_.checkpoints.fetch_add(1, std::memory_order_relaxed);
    counters_.last_checkpoint.store(checkpoint_no_, std::memory_order_relaxed);
    counters_.last_bytes.store(file_.size(), std::memory_order_relaxed);
    counters_.last_us.store(uint64_t(us.count()), std::memory_order_relaxed);
}

}  // namespace linerate::kvagg
