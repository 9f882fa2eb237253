#pragma once
// Buffers alone in a memory region of their own (a region spec, as --netbuf's): the region is
// made for them, and each is one rte_malloc on the region's heap, starting on a page of the
// region (so a THP or hugepage region backs it with huge pages). Needs the EAL.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mem/region.hpp"

namespace linerate::mem {

class PlacedBuffer {
  public:
    // The out-of-memory line for buffer `index`: "cannot allocate " + what(index) + " in region
    // NAME (socket id N): out of memory there" + hint.
    struct Naming {
        std::function<std::string(unsigned index)> what;
        std::string hint;
    };

    // `count` buffers of `bytes` zeroed bytes each. default_socket stands for socket:-1. Throws
    // RegionError (bad region or file) or std::runtime_error (no memory there, the line
    // `naming` makes).
    PlacedBuffer(const RegionSpec& spec, size_t bytes, unsigned count, const std::string& heap_name,
                 int default_socket, Naming naming);
    // One buffer, "the `what` (its size)" in the out-of-memory line.
    PlacedBuffer(const RegionSpec& spec, size_t bytes, const std::string& heap_name,
                 int default_socket, const std::string& what);
    ~PlacedBuffer();
    PlacedBuffer(const PlacedBuffer&) = delete;
    PlacedBuffer& operator=(const PlacedBuffer&) = delete;

    void* data(unsigned index = 0) const { return data_[index]; }
    unsigned count() const { return unsigned(data_.size()); }
    size_t bytes() const { return bytes_; }  // of each
    const Region& region() const { return *region_; }
    // "region pages:thp: external heap (socket id 256), 2.0 MiB pages, 8.0 MiB on transparent
    // huge pages": where the first buffer really lives (describe_placement; "none" for none).
    std::string placement() const;

  private:
    void free_buffers();

    std::unique_ptr<Region> region_;
    std::vector<void*> data_;
    size_t bytes_;
};

}  // namespace linerate::mem
