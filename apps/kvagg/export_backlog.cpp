#include "kvagg/export_backlog.hpp"

#include "kvagg/agg_merge.hpp"

#include <algorithm>

namespace linerate::kvagg {

ExportBacklog::ExportBacklog(size_t bound, ExportCounters& counters)
    : bound_(bound), counters_(counters) {}

void ExportBacklog::restore(const ExportImage& image) {
    std::lock_guard lock(mutex_);
    instance_ = image.instance;
    next_epoch_ = image.next_epoch;
    epochs_.assign(image.epochs.begin(), image.epochs.end());
    durable_ = next_epoch_ - 1;
    counters_.backlog.store(epochs_.size(), std::memory_order_relaxed);
}

bool ExportBacklog::full() const {
    std::lock_guard lock(mutex_);
    return epochs_.size() >= bound_;
}

size_t ExportBacklog::size() const {
    std::lock_guard lock(mutex_);
    return epochs_.size();
}

uint64_t ExportBacklog::add(std::vector<AggSlot> sums) {
    std::lock_guard lock(mutex_);
    const uint64_t epoch = next_epoch_++;
    epochs_.push_back(std::make_shared<const ExportEpoch>(ExportEpoch{epoch, std::move(sums)}));
    counters_.backlog.store(epochs_.size(), std::memory_order_relaxed);
    return epoch;
}

void ExportBacklog::durable_through(uint64_t epoch) {
    {
        std::lock_guard lock(mutex_);
        durable_ = std::max(durable_, epoch);
    }
    ready_.notify_all();
}

std::vector<AggSlot> ExportBacklog::sums_left() const {
    std::vector<AggSlot> all;
    {
        std::lock_guard lock(mutex_);
        for (const EpochPtr& e : epochs_) all.insert(all.end(), e->sums.begin(), e->sums.end());
    }
    return sum_per_key(std::move(all));
}

ExportImage ExportBacklog::image() const {
    std::lock_guard lock(mutex_);
    return {instance_, next_epoch_, std::vector<EpochPtr>(epochs_.begin(), epochs_.end())};
}

EpochPtr ExportBacklog::oldest_durable(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    auto ready = [&] {
        return stopping_ || (!epochs_.empty() && epochs_.front()->epoch <= durable_);
    };
    ready_.wait_for(lock, wait, ready);
    if (epochs_.empty() || epochs_.front()->epoch > durable_) return nullptr;
    return epochs_.front();
}

void ExportBacklog::acknowledged(uint64_t epoch) {
    std::lock_guard lock(mutex_);
    if (!epochs_.empty() && epochs_.front()->epoch == epoch) epochs_.pop_front();
    counters_.backlog.store(epochs_.size(), std::memory_order_relaxed);
}

void ExportBacklog::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    ready_.notify_all();
}

}  // namespace linerate::kvagg
