#include "mem/placed_buffer.hpp"

#include <fmt/core.h>
#include <rte_malloc.h>

#include <stdexcept>

namespace linerate::mem {

PlacedBuffer::PlacedBuffer(const RegionSpec& spec, size_t bytes, unsigned count,
                           const std::string& heap_name, int default_socket, Naming naming)
    : bytes_(bytes) {
    // Room for each buffer's page alignment and rte_malloc's element header, and the heap's own.
    const size_t region_bytes = count * (bytes + 2 * spec.page_size()) + (size_t(1) << 20);
    region_ = std::make_unique<Region>(spec, region_bytes, heap_name, default_socket);
    for (unsigned i = 0; i < count; ++i) {
        void* p = rte_zmalloc_socket(heap_name.c_str(), bytes, unsigned(spec.page_size()),
                                     region_->socket_id());
        if (p == nullptr) {
            const std::string line =
                fmt::format("cannot allocate {} in region {} (socket id {}): out of memory there{}",
                            naming.what(i), region_->name(), region_->socket_id(), naming.hint);
            free_buffers();  // before the region goes
            throw std::runtime_error(line);
        }
        data_.push_back(p);
    }
}

PlacedBuffer::PlacedBuffer(const RegionSpec& spec, size_t bytes, const std::string& heap_name,
                           int default_socket, const std::string& what)
    : PlacedBuffer(
          spec, bytes, 1, heap_name, default_socket,
          {[&](unsigned) { return fmt::format("the {} ({})", what, format_bytes(double(bytes))); },
           ""}) {}

PlacedBuffer::~PlacedBuffer() {
    free_buffers();
}

void PlacedBuffer::free_buffers() {
    // Before the region goes: its heap can only be removed empty.
    for (void* p : data_) rte_free(p);
    data_.clear();
}

std::string PlacedBuffer::placement() const {
    const std::string where = data_.empty() ? "none" : describe_placement(data_[0], bytes_);
    return fmt::format("region {}: {}", region_->name(), where);
}

}  // namespace linerate::mem
