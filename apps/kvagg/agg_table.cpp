#include "kvagg/agg_table.hpp"

#include <utility>

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace linerate::kvagg {

// ---- geometry ----

size_t AggGeometry::slots_for(const AggConfig& cfg) {
    if (cfg.mode == IndexMode::direct) return size_t(cfg.max_keys);
    const uint64_t want = std::max<uint64_t>(16, 2 * cfg.max_keys);
    return size_t(std::bit_ceil(want));
}

AggGeometry::AggGeometry(AggSlot* slots, size_t capacity, const AggConfig& cfg)
    : slots_(slots),
      capacity_(capacity),
      mask_(capacity - 1),
      max_keys_(cfg.max_keys),
      bits_(unsigned(std::countr_zero(capacity))),
      probe_(unsigned(std::min<size_t>(cfg.probe_limit, capacity))),
      mode_(cfg.mode) {
    if (mode_ == IndexMode::hash) {
        if (capacity < kAggLineSlots || !std::has_single_bit(capacity))
            throw std::invalid_argument(
                "aggregation table: capacity must be a power of two >= 4 (a cache line)");
        if (probe_ == 0) throw std::invalid_argument("aggregation table: probe limit 0");
    } else if (capacity < max_keys_) {
        throw std::invalid_argument("aggregation table: direct mode needs max_keys slots");
    }
}

// ---- per-worker table ----

AggTable::AggTable(std::span<AggSlot> slots, const AggConfig& cfg)
    : AggTableOps(slots.data(), slots.size(), cfg) {
    if (mode_ == IndexMode::hash) used_lines_.resize(agg_line_words(capacity_));
    clear();
}

void AggTable::clear() {
    std::memset(static_cast<void*>(slots_), 0, bytes_for(capacity_));
    std::fill(used_lines_.begin(), used_lines_.end(), 0);
    used_line_count_ = 0;
    size_ = 0;
    zero_value_ = 0;
    zero_used_ = false;
}

bool AggTable::add_probe(size_t hint, uint64_t key, uint64_t value) {
    size_t i = hint;
    for (unsigned n = 0; n < probe_; ++n, i = (i + 1) & mask_) {
        AggSlot& s = slots_[i];
        if (s.key == key) {
            s.value += value;
            return true;
        }
        if (s.key == 0) {
            if (size_ >= max_keys_) return false;
            s.key = key;
            s.value = value;
            ++size_;
            mark_line(i);
            return true;
        }
    }
    return false;
}

uint64_t AggTable::drain(uint64_t lo, uint64_t hi, bool reset, std::vector<AggSlot>& out) {
    uint64_t sum = 0;
    auto take = [&](uint64_t key, uint64_t& value) {
        if (key < lo || key > hi || value == 0) return;
        out.push_back({key, value});
        sum += value;
        if (reset) value = 0;
    };
    if (zero_used_) take(0, zero_value_);
    for (size_t i = 0; i < capacity_; ++i) {
        AggSlot& s = slots_[i];
        if (s.key == 0) continue;
        take(mode_ == IndexMode::direct ? uint64_t(i) : s.key, s.value);
    }
    if (reset && lo == 0 && hi == ~uint64_t(0)) clear();
    return sum;
}

uint64_t AggTable::take(uint64_t key) {
    if (mode_ == IndexMode::direct)
        return key < capacity_ && slots_[key].key != 0 ? std::exchange(slots_[key].value, 0) : 0;
    if (key == 0) return std::exchange(zero_value_, 0);
    size_t i = agg_hash_index(key, bits_);
    for (unsigned n = 0; n < probe_; ++n, i = (i + 1) & mask_) {
        if (slots_[i].key == key) return std::exchange(slots_[i].value, 0);
        if (slots_[i].key == 0) break;
    }
    return 0;
}

void AggTable::copy_to(AggTableCopy& c) const {
    const bool sparse = used_line_count_ * kSparseLines < capacity_ / kAggLineSlots;
    if (c.slots.size() != capacity_ || c.lines.size() != used_lines_.size() ||
        used_lines_.empty() || !sparse) {
        c.slots.resize(capacity_);
        std::memcpy(static_cast<void*>(c.slots.data()), slots_, bytes_for(capacity_));
    } else {
        for (size_t w = 0; w < used_lines_.size(); ++w)
            for_each_line_in_word(w, used_lines_[w] | c.lines[w], [&](size_t first) {
                std::memcpy(static_cast<void*>(&c.slots[first]), slots_ + first, 64);
            });
    }
    c.lines = used_lines_;
    c.size = size_;
    c.zero_value = zero_value_;
    c.zero_used = zero_used_;
}

void AggTable::restore(const AggTableCopy& c) {
    if (c.slots.size() != capacity_)
        throw std::invalid_argument("aggregation table: restored copy of another capacity");
    std::memcpy(static_cast<void*>(slots_), c.slots.data(), bytes_for(capacity_));
    size_ = c.size;
    zero_value_ = c.zero_value;
    zero_used_ = c.zero_used;
    mark_used_lines();
}

void AggTable::mark_used_lines() {
    std::fill(used_lines_.begin(), used_lines_.end(), 0);
    used_line_count_ = 0;
    if (used_lines_.empty()) return;
    for (size_t i = 0; i < capacity_; ++i)
        if (slots_[i].key != 0) mark_line(i);
}

AggView AggTable::view() const {
    return {std::span<const AggSlot>(slots_, capacity_), mode_, probe_, zero_used_, zero_value_};
}

std::optional<uint64_t> AggTable::find(uint64_t key) const {
    return agg_find(view(), key);
}

// ---- lookup ----

std::optional<uint64_t> agg_find(const AggView& t, uint64_t key) {
    if (t.mode == IndexMode::direct) {
        if (key < t.slots.size() && t.slots[key].key != 0) return t.slots[key].value;
        return std::nullopt;
    }
    if (key == 0) return t.zero_used ? std::optional<uint64_t>(t.zero_value) : std::nullopt;
    const size_t mask = t.slots.size() - 1;
    size_t i = agg_hash_index(key, unsigned(std::countr_zero(t.slots.size())));
    for (unsigned n = 0; n < t.probe_limit; ++n, i = (i + 1) & mask) {
        if (t.slots[i].key == key) return t.slots[i].value;
        if (t.slots[i].key == 0) break;
    }
    return std::nullopt;
}

}  // namespace linerate::kvagg
