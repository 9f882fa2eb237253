#include "kvagg/agg_buffer.hpp"

#include <fmt/core.h>
#include <rte_malloc.h>

#include <algorithm>
#include <stdexcept>

namespace linerate::kvagg {

namespace {

// Region bytes for `count` tables: each may lose an alignment unit plus rte_malloc's element
// header, and the heap keeps some room of its own. Tables start on a page of the region, so a
// THP region backs whole tables with huge pages.
size_t region_bytes(const mem::RegionSpec& spec, size_t table_bytes, unsigned count) {
    return count * (table_bytes + 2 * spec.page_size()) + (size_t(1) << 20);
}

}  // namespace

AggBuffer::AggBuffer(const mem::RegionSpec& spec, size_t slots, unsigned count, int default_socket,
                     const std::string& heap_name)
    : slots_(slots) {
    const size_t bytes = table_bytes();
    region_ = std::make_unique<mem::Region>(spec, region_bytes(spec, bytes, count), heap_name,
                                            default_socket);
    for (unsigned i = 0; i < count; ++i) {
        void* p = rte_zmalloc_socket("kvagg_table", bytes, unsigned(spec.page_size()),
                                     region_->socket_id());
        if (p == nullptr)
            throw std::runtime_error(fmt::format(
                "cannot allocate aggregation table {} of {} in region {} (socket id {}): out of "
                "memory there (more -m, hugepages, fewer --keys, or another --aggbuf)",
                i, mem::format_bytes(double(bytes)), region_->name(), region_->socket_id()));
        tables_.push_back(static_cast<AggSlot*>(p));
    }
}

AggBuffer::~AggBuffer() {
    // Before the region goes: its heap can only be removed empty.
    for (AggSlot* t : tables_) rte_free(t);
}

std::string AggBuffer::placement() const {
    const size_t bytes = table_bytes();
    std::string where = tables_.empty() ? "none" : mem::describe_placement(tables_[0], bytes);
    return fmt::format("region {}: {}", region_->name(), where);
}

std::string AggBuffer::describe() const {
    return fmt::format("{} table{} x {} ({} slots), {}", tables_.size(),
                       tables_.size() == 1 ? "" : "s", mem::format_bytes(double(table_bytes())),
                       slots_, placement());
}

}  // namespace linerate::kvagg
