#include "mem/placed_buffer.hpp"

#include <fmt/core.h>
#include <rte_malloc.h>

#include <stdexcept>

namespace linerate::mem {

PlacedBuffer::PlacedBuffer(const RegionSpec& spec, size_t bytes, const std::string& heap_name,
                           int default_socket, const std::string& what)
    : bytes_(bytes) {
    // Room for the page alignment, rte_malloc's element header and the heap's own.
    const size_t region_bytes = bytes + 2 * spec.page_size() + (size_t(1) << 20);
    region_ = std::make_unique<Region>(spec, region_bytes, heap_name, default_socket);
    data_ = rte_zmalloc_socket(heap_name.c_str(), bytes, unsigned(spec.page_size()),
                               region_->socket_id());
    if (data_ == nullptr)
        throw std::runtime_error(
            fmt::format("cannot allocate the {} ({}) in region {} (socket id "
                        "{}): out of memory there",
                        what, format_bytes(double(bytes)), region_->name(), region_->socket_id()));
}

PlacedBuffer::~PlacedBuffer() {
    // Before the region goes: its heap can only be removed empty.
    rte_free(data_);
}

std::string PlacedBuffer::placement() const {
    return fmt::format("region {}: {}", region_->name(), describe_placement(data_, bytes_));
}

}  // namespace linerate::mem
