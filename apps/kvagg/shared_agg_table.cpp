#include "kvagg/shared_agg_table.hpp"

#include <algorithm>
#include <cstring>

namespace linerate::kvagg {

SharedAggTable::SharedAggTable(std::span<AggSlot> slots, const AggConfig& cfg)
    : AggGeometry(slots.data(), slots.size(), cfg) {
    clear();
}

void SharedAggTable::clear() {
    std::memset(static_cast<void*>(slots_), 0, bytes_for(capacity_));
    size_.store(0);
    zero_value_.store(0);
    zero_used_.store(0);
}

bool SharedAggTable::add_zero(uint64_t value) {
    if (zero_used_.load(std::memory_order_relaxed) == 0) {
        if (reserve()) {
            uint8_t expected = 0;
            if (!zero_used_.compare_exchange_strong(expected, 1, std::memory_order_relaxed))
                size_.fetch_sub(1, std::memory_order_relaxed);
        } else if (zero_used_.load(std::memory_order_relaxed) == 0) {
            return false;
        }
    }
    zero_value_.fetch_add(value, std::memory_order_relaxed);
    return true;
}

AggView SharedAggTable::view() const {
    return {std::span<const AggSlot>(slots_, capacity_), mode_, probe_, zero_used_.load() != 0,
            zero_value_.load()};
}

std::optional<uint64_t> SharedAggTable::find(uint64_t key) const {
    return agg_find(view(), key);
}

uint64_t SharedAggTable::size() const {
    if (mode_ == IndexMode::hash) return size_.load();
    return uint64_t(
        std::count_if(slots_, slots_ + capacity_, [](const AggSlot& s) { return s.key != 0; }));
}

}  // namespace linerate::kvagg
