#include "kvagg/shared_agg_table.hpp"

#include <cstring>
#include <thread>

namespace linerate::kvagg {

SharedAggTable::SharedAggTable(std::span<AggSlot> slots, const AggConfig& cfg, unsigned writers)
    : AggTableOps(slots.data(), slots.size(), cfg), single_writer_(writers == 1) {
    clear();
}

void SharedAggTable::clear() {
    std::memset(static_cast<void*>(slots_), 0, bytes_for(capacity_));
    size_.store(0);
    pending_.store(0);
    zero_value_.store(0);
    zero_used_.store(0);
}

bool SharedAggTable::reserve() {
    pending_.fetch_add(1);
    uint64_t n = size_.load();
    while (n < max_keys_)
        if (size_.compare_exchange_weak(n, n + 1)) return true;
    pending_.fetch_sub(1);
    return false;
}

// A reservation ends: its place kept (the key went in) or given back (another worker's key took
// the slot first). The count changes before pending_ does, so a worker that sees no racer left
// sees the count as it settled.
void SharedAggTable::settle(bool keep) {
    if (!keep) size_.fetch_sub(1);
    pending_.fetch_sub(1);
}

void SharedAggTable::wait_for_racers() {
    // Yield, not spin: on a core shared with the racer, the racer needs it to settle.
    while (pending_.load() != 0) std::this_thread::yield();
}

uint64_t SharedAggTable::claim(std::atomic_ref<uint64_t> k, uint64_t key) {
    const bool placed = take_place(
        [&] {
            uint64_t empty = 0;
            return k.compare_exchange_strong(empty, key, std::memory_order_relaxed);
        },
        [&] { return k.load(std::memory_order_relaxed) != 0; });
    // Placed: the slot holds this key or the racer's that won it (their settle() published it).
    return placed ? k.load(std::memory_order_relaxed) : 0;
}

bool SharedAggTable::add_zero(uint64_t value) {
    if (zero_used_.load(std::memory_order_relaxed) == 0 &&
        !take_place(
            [&] {
                uint8_t unused = 0;
                return zero_used_.compare_exchange_strong(unused, 1, std::memory_order_relaxed);
            },
            [&] { return zero_used_.load(std::memory_order_relaxed) != 0; }))
        return false;
    add_to(zero_value_, value);
    return true;
}

AggView SharedAggTable::view() const {
    return {std::span<const AggSlot>(slots_, capacity_), mode_, probe_, zero_used_.load() != 0,
            zero_value_.load()};
}

std::optional<uint64_t> SharedAggTable::find(uint64_t key) const {
    return agg_find(view(), key);
}

uint64_t SharedAggTable::drain_live(uint64_t lo, uint64_t hi, bool reset,
                                    std::vector<AggSlot>& out) {
    uint64_t sum = 0;
    auto take = [&](uint64_t key, auto& value) {  // std::atomic or std::atomic_ref
        if (key < lo || key > hi || value.load(std::memory_order_relaxed) == 0) return;
        const uint64_t v = reset ? value.exchange(0, std::memory_order_relaxed)
                                 : value.load(std::memory_order_relaxed);
        if (v == 0) return;
        out.push_back({key, v});
        sum += v;
    };
    if (zero_used_.load(std::memory_order_relaxed)) take(0, zero_value_);
    for (size_t i = 0; i < capacity_; ++i) {
        const uint64_t k = std::atomic_ref<uint64_t>(slots_[i].key).load(std::memory_order_relaxed);
        if (k == 0) continue;
        std::atomic_ref<uint64_t> value(slots_[i].value);
        take(mode_ == IndexMode::direct ? uint64_t(i) : k, value);
    }
    return sum;
}

uint64_t* SharedAggTable::live_value(uint64_t key) const {
    auto load = [](const uint64_t& k) {
        return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(k)).load(std::memory_order_relaxed);
    };
    if (mode_ == IndexMode::direct)
        return key < max_keys_ && load(slots_[key].key) != 0 ? &slots_[key].value : nullptr;
    size_t i = agg_hash_index(key, bits_);
    for (unsigned n = 0; n < probe_; ++n, i = (i + 1) & mask_) {
        const uint64_t k = load(slots_[i].key);
        if (k == key) return &slots_[i].value;
        if (k == 0) break;
    }
    return nullptr;
}

std::optional<uint64_t> SharedAggTable::find_live(uint64_t key) const {
    if (key == 0 && mode_ == IndexMode::hash) {
        if (zero_used_.load(std::memory_order_relaxed) == 0) return std::nullopt;
        return zero_value_.load(std::memory_order_relaxed);
    }
    uint64_t* const v = live_value(key);
    if (v == nullptr) return std::nullopt;
    return std::atomic_ref<uint64_t>(*v).load(std::memory_order_relaxed);
}

uint64_t SharedAggTable::take_live(uint64_t key) {
    if (key == 0 && mode_ == IndexMode::hash) return zero_value_.exchange(0);
    uint64_t* const v = live_value(key);
    return v ? std::atomic_ref<uint64_t>(*v).exchange(0, std::memory_order_relaxed) : 0;
}

}  // namespace linerate::kvagg
