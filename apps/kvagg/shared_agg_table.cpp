#include "kvagg/shared_agg_table.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace linerate::kvagg {

namespace {
constexpr size_t kLineWords = 64 / sizeof(uint64_t);
size_t round_to_line(size_t words) {
    return (words + kLineWords - 1) / kLineWords * kLineWords;
}
}  // namespace

size_t SharedAggTable::column_words(size_t capacity, unsigned writers) {
    return writers > 1 ? writers * round_to_line(capacity) + kLineWords : 0;
}

SharedAggTable::SharedAggTable(std::span<AggSlot> slots, const AggConfig& cfg, unsigned writers,
                               std::span<uint64_t> columns)
    : AggTableOps(slots.data(), slots.size(), cfg),
      zero_sums_(new ZeroSum[std::max(writers, 1u)]),
      writers_(std::max(writers, 1u)) {
    if (writers_.size() == 1) {
        writers_[0].base_ = kSlotSumBase;
    } else {
        const size_t need = column_words(capacity_, writers);
        if (columns.empty()) {
            own_columns_.resize(need);
            columns = own_columns_;
        }
        if (columns.size() < need)
            throw std::invalid_argument("shared table: columns too small for its writers");
        uint64_t* col = columns.data();
        col += (kLineWords - reinterpret_cast<uintptr_t>(col) / sizeof(uint64_t) % kLineWords) %
               kLineWords;  // cache-line aligned: no two writers share a line
        for (unsigned w = 0; w < writers; ++w, col += round_to_line(capacity_))
            writers_[w].base_ =
                reinterpret_cast<uintptr_t>(col) - (reinterpret_cast<uintptr_t>(slots_) >> 1);
    }
    for (unsigned w = 0; w < writers_.size(); ++w) {
        writers_[w].shift_ = writers_.size() == 1 ? 0 : 1;
        writers_[w].index_ = w;
    }
    clear();
}

void SharedAggTable::clear() {
    std::memset(static_cast<void*>(slots_), 0, bytes_for(capacity_));
    if (writers() > 1)
        for (const Writer& w : writers_)
            std::memset(w.sum_of(slots_), 0, capacity_ * sizeof(uint64_t));
    for (unsigned w = 0; w < writers(); ++w) zero_sums_[w].value = 0;
    size_.store(0);
    pending_.store(0);
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

bool SharedAggTable::add_zero(uint64_t value, const Writer& w) {
    if (zero_used_.load(std::memory_order_relaxed) == 0 &&
        !take_place(
            [&] {
                uint8_t unused = 0;
                return zero_used_.compare_exchange_strong(unused, 1, std::memory_order_relaxed);
            },
            [&] { return zero_used_.load(std::memory_order_relaxed) != 0; }))
        return false;
    add_to(&zero_sums_[w.index()].value, value);
    return true;
}

uint64_t SharedAggTable::sum_at(size_t i, unsigned first, unsigned n) const {
    uint64_t sum = 0;
    for (unsigned w = first; w < first + n; ++w)
        sum += std::atomic_ref<uint64_t>(*writers_[w].sum_of(slots_ + i))
                   .load(std::memory_order_relaxed);
    return sum;
}

uint64_t SharedAggTable::zero_sum() const {
    uint64_t sum = 0;
    for (unsigned w = 0; w < writers(); ++w)
        sum += std::atomic_ref<uint64_t>(zero_sums_[w].value).load(std::memory_order_relaxed);
    return sum;
}

AggView SharedAggTable::view() {
    if (writers() > 1)  // the columns' sums into the slots' value words, which view() shows
        for (size_t i = 0; i < capacity_; ++i) slots_[i].value = sum_at(i, 0, writers());
    return {std::span<const AggSlot>(slots_, capacity_), mode_, probe_, zero_used_.load() != 0,
            zero_sum()};
}

uint64_t SharedAggTable::drain_live(uint64_t lo, uint64_t hi, bool reset, std::vector<AggSlot>& out,
                                    unsigned w) {
    // Plain locals: clang 14 (the fuzz build) cannot capture structured bindings in a lambda.
    const auto [first_column, columns] = columns_of(w);
    const unsigned first = first_column, n = columns;
    uint64_t sum = 0;
    // Key `key`'s sum over the columns, each word read (or, with reset, exchanged for 0)
    // atomically; word(c): its word in column c.
    auto take = [&](uint64_t key, auto word) {
        if (key < lo || key > hi) return;
        uint64_t v = 0;
        for (unsigned c = first; c < first + n; ++c) {
            std::atomic_ref<uint64_t> value(*word(c));
            if (value.load(std::memory_order_relaxed) == 0) continue;
            v += reset ? value.exchange(0, std::memory_order_relaxed)
                       : value.load(std::memory_order_relaxed);
        }
        if (v == 0) return;
        out.push_back({key, v});
        sum += v;
    };
    if (zero_used_.load(std::memory_order_relaxed))
        take(0, [&](unsigned c) { return &zero_sums_[c].value; });
    for (size_t i = 0; i < capacity_; ++i) {
        const uint64_t k = std::atomic_ref<uint64_t>(slots_[i].key).load(std::memory_order_relaxed);
        if (k == 0) continue;
        take(mode_ == IndexMode::direct ? uint64_t(i) : k,
             [&](unsigned c) { return writers_[c].sum_of(slots_ + i); });
    }
    return sum;
}

const AggSlot* SharedAggTable::live_slot(uint64_t key) const {
    auto load = [](const uint64_t& k) {
        return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(k)).load(std::memory_order_relaxed);
    };
    if (mode_ == IndexMode::direct)
        return key < max_keys_ && load(slots_[key].key) != 0 ? &slots_[key] : nullptr;
    size_t i = agg_hash_index(key, bits_);
    for (unsigned n = 0; n < probe_; ++n, i = (i + 1) & mask_) {
        const uint64_t k = load(slots_[i].key);
        if (k == key) return &slots_[i];
        if (k == 0) break;
    }
    return nullptr;
}

std::optional<uint64_t> SharedAggTable::find_live(uint64_t key) const {
    if (key == 0 && mode_ == IndexMode::hash) {
        if (zero_used_.load(std::memory_order_relaxed) == 0) return std::nullopt;
        return zero_sum();
    }
    const AggSlot* const s = live_slot(key);
    if (s == nullptr) return std::nullopt;
    return sum_at(size_t(s - slots_), 0, writers());
}

uint64_t SharedAggTable::take_live(uint64_t key, unsigned w) {
    const auto [first, n] = columns_of(w);
    const bool zero = key == 0 && mode_ == IndexMode::hash;
    const AggSlot* const s = zero ? nullptr : live_slot(key);
    if (!zero && s == nullptr) return 0;
    uint64_t sum = 0;
    for (unsigned c = first; c < first + n; ++c)
        sum += std::atomic_ref<uint64_t>(zero ? zero_sums_[c].value : *writers_[c].sum_of(s))
                   .exchange(0, std::memory_order_relaxed);
    return sum;
}

}  // namespace linerate::kvagg
