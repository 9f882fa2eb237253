#pragma once
// One buffer alone in a memory region of its own (a region spec, as --netbuf's): the region is
// made for it, and it is one rte_malloc on the region's heap, starting on a page of the region
// (so a THP or hugepage region backs it with huge pages). Needs the EAL.
#include <cstddef>
#include <memory>
#include <string>

#include "mem/region.hpp"

namespace linerate::mem {

class PlacedBuffer {
  public:
    // `bytes` zeroed bytes. default_socket stands for socket:-1. Throws RegionError (bad region
    // or file) or std::runtime_error (no memory there), naming `what`.
    PlacedBuffer(const RegionSpec& spec, size_t bytes, const std::string& heap_name,
                 int default_socket, const std::string& what);
    ~PlacedBuffer();
    PlacedBuffer(const PlacedBuffer&) = delete;
    PlacedBuffer& operator=(const PlacedBuffer&) = delete;

    void* data() const { return data_; }
    size_t bytes() const { return bytes_; }
    const Region& region() const { return *region_; }
    // "region pages:thp: external heap (socket id 256), 2.0 MiB pages, 8.0 MiB on transparent
    // huge pages": where it really lives (describe_placement).
    std::string placement() const;

  private:
    std::unique_ptr<Region> region_;
    void* data_ = nullptr;
    size_t bytes_;
};

}  // namespace linerate::mem
