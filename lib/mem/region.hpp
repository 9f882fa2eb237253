#pragma once
// Backing of a memory region: a DPDK hugepage heap (socket:N) or memory we map ourselves
// (4 KiB pages, transparent huge pages, a file) added to DPDK as an external heap, so an
// ordinary rte_pktmbuf_pool_create or rte_malloc_socket on socket_id() lands in it.
#include <rte_dev.h>

#include <cstddef>
#include <string>
#include <vector>

#include "mem/region_spec.hpp"

namespace linerate::mem {

class Region {
  public:
    // Makes `bytes` of allocations possible in the region. For socket regions nothing is mapped;
    // default_socket stands for socket:-1. Throws RegionError (bad spec/file) or runtime_error.
    Region(const RegionSpec& spec, size_t bytes, const std::string& heap_name, int default_socket);
    ~Region();
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;

    int socket_id() const { return socket_id_; }
    bool external() const { return base_ != nullptr; }
    size_t page_size() const { return page_size_; }
    size_t bytes() const { return len_; }
    const RegionSpec& spec() const { return spec_; }
    std::string name() const;  // "pages:thp" or "dpa (file:/dev/shm/x)"

    // Maps the external memory for DMA by a physical device (no-op for virtual devices).
    void dma_map(rte_device* device);

  private:
    void map_anonymous(size_t bytes, bool thp);
    void map_file(size_t bytes);
    void add_to_heap();

    RegionSpec spec_;
    std::string heap_name_;
    int socket_id_ = 0;
    void* base_ = nullptr;     // external regions only
    void* mapping_ = nullptr;  // what munmap gets (may start before base_ for alignment)
    size_t mapping_len_ = 0;
    size_t len_ = 0;
    size_t page_size_ = 0;
    int fd_ = -1;
    bool heap_created_ = false;
    bool memory_added_ = false;
    std::vector<rte_device*> dma_mapped_;
};

// Where memory really lives, read from DPDK's memseg lists and /proc/self/smaps:
// e.g. "socket 0, 2 MiB pages" or "external heap (socket id 256), 4 KiB pages, 14.0 MiB on
// transparent huge pages".
std::string describe_placement(const void* addr, size_t len);

// What the kernel backs [addr, addr+len) with, from /proc/self/smaps and get_mempolicy: the
// largest page size of its mappings, the bytes on transparent huge pages (anonymous, shmem or
// file) and on any huge page (THP or hugetlbfs), each at most len, and the first page's NUMA node.
struct PageFacts {
    size_t kernel_page_size = 0;
    size_t thp_bytes = 0;
    size_t huge_bytes = 0;
    int numa_node = -1;
};
PageFacts page_facts(const void* addr, size_t len);

std::string format_bytes(double bytes);

}  // namespace linerate::mem
