// rte_dev_dma_map is the documented way to map external memory for devices (experimental in 22.11).
#define ALLOW_EXPERIMENTAL_API 1
#include "mem/region.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <rte_bus.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace linerate::mem {

namespace {

constexpr size_t k4K = 4096;
constexpr size_t k2M = 2u << 20;
constexpr long kHugetlbfsMagic = 0x958458f6;

size_t round_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

// The address a device uses for `p`: the virtual address itself with IOVA as VA, else the
// physical one (the page must be present, which the mappings here ensure).
rte_iova_t iova_of(const void* p) {
    return rte_eal_iova_mode() == RTE_IOVA_VA ? rte_iova_t(reinterpret_cast<uintptr_t>(p))
                                              : rte_mem_virt2phy(p);
}

}  // namespace

PageFacts page_facts(const void* addr, size_t len) {
    auto lo = reinterpret_cast<uintptr_t>(addr);
    uintptr_t hi = lo + len;
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool in_range = false;
    PageFacts facts;
    size_t hugetlb = 0;
    while (std::getline(smaps, line)) {
        uintptr_t start = 0, end = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2 && line.find(':') > 8) {
            in_range = start < hi && end > lo;
            continue;
        }
        size_t kb = 0;
        if (!in_range) continue;
        if (std::sscanf(line.c_str(), "KernelPageSize: %zu kB", &kb) == 1)
            facts.kernel_page_size = std::max(facts.kernel_page_size, kb * 1024);
        else if (std::sscanf(line.c_str(), "AnonHugePages: %zu kB", &kb) == 1 ||
                 std::sscanf(line.c_str(), "ShmemPmdMapped: %zu kB", &kb) == 1 ||
                 std::sscanf(line.c_str(), "FilePmdMapped: %zu kB", &kb) == 1)
            facts.thp_bytes += kb * 1024;
        else if (std::sscanf(line.c_str(), "Shared_Hugetlb: %zu kB", &kb) == 1 ||
                 std::sscanf(line.c_str(), "Private_Hugetlb: %zu kB", &kb) == 1)
            hugetlb += kb * 1024;
    }
    // smaps counts whole mappings: a buffer smaller than its mapping reads at most its size.
    facts.thp_bytes = std::min(facts.thp_bytes, len);
    facts.huge_bytes = std::min(facts.thp_bytes + hugetlb, len);
    // The node of the first page (get_mempolicy with MPOL_F_NODE | MPOL_F_ADDR); -1 if unknown.
    int node = -1;
    if (syscall(SYS_get_mempolicy, &node, nullptr, 0UL, addr, 3UL) == 0) facts.numa_node = node;
    return facts;
}

std::string format_bytes(double b) {
    if (b >= double(1ull << 30)) return fmt::format("{:.1f} GiB", b / double(1ull << 30));
    if (b >= double(1ull << 20)) return fmt::format("{:.1f} MiB", b / double(1ull << 20));
    if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024);
    return fmt::format("{:.0f} B", b);
}

Region::Region(const RegionSpec& spec, size_t bytes, const std::string& heap_name,
               int default_socket)
    : spec_(spec), heap_name_(heap_name) {
    switch (spec.kind) {
        case RegionKind::socket:
            socket_id_ = spec.socket < 0 ? default_socket : spec.socket;
            if (unsigned(socket_id_) >= rte_socket_count() && rte_socket_count() > 0) {
                bool found = false;
                for (unsigned i = 0; i < rte_socket_count(); ++i)
                    found |= rte_socket_id_by_idx(i) == socket_id_;
                if (!found)
                    throw RegionError(fmt::format("region '{}': NUMA node {} has no DPDK memory",
                                                  spec.text.empty() ? "socket" : spec.text,
                                                  socket_id_));
            }
            return;
        case RegionKind::pages_4k:
            map_anonymous(bytes, false);
            break;
        case RegionKind::pages_thp:
            map_anonymous(bytes, true);
            break;
        case RegionKind::file:
            map_file(bytes);
            break;
    }
    add_to_heap();
}

void Region::map_anonymous(size_t bytes, bool thp) {
    // Page size DPDK is told: objects never straddle it. THP is only 2 MiB where the kernel
    // managed to back it, which is fine for IOVA-as-VA; with physical addresses stay at 4 KiB.
    page_size_ = thp && rte_eal_iova_mode() == RTE_IOVA_VA ? k2M : k4K;
    const size_t unit = spec_.page_size();
    len_ = round_up(bytes, unit);
    mapping_len_ = len_ + (thp ? unit : 0);
    mapping_ =
        mmap(nullptr, mapping_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping_ == MAP_FAILED) {
        mapping_ = nullptr;
        throw std::runtime_error(fmt::format("region {}: mmap of {} failed: {}", spec_.text,
                                             format_bytes(double(mapping_len_)), strerror(errno)));
    }
    base_ = reinterpret_cast<void*>(round_up(reinterpret_cast<uintptr_t>(mapping_), unit));
    madvise(base_, len_, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    // Fault every page in now: the first packets must not pay for it, and physical addresses
    // exist only for present pages.
    std::memset(base_, 0, len_);
    mlock(base_, len_);  // best effort: keeps physical addresses stable for DMA
}

void Region::map_file(size_t bytes) {
    fd_ = open(spec_.path.c_str(), O_RDWR | (spec_.create ? O_CREAT : 0), 0600);
    if (fd_ < 0)
        throw RegionError(
            fmt::format("region {}: cannot open {}: {}", spec_.text, spec_.path, strerror(errno)));
    struct stat st {};
    fstat(fd_, &st);
    struct statfs fs {};
    fstatfs(fd_, &fs);
    bool hugetlbfs = fs.f_type == kHugetlbfsMagic;
    page_size_ = hugetlbfs ? size_t(fs.f_bsize) : k4K;
    size_t want = spec_.size ? spec_.size : std::max<size_t>(size_t(st.st_size), bytes);
    want = round_up(want, page_size_);
    if (want < bytes)
        throw RegionError(fmt::format("region {}: {} is smaller than the {} needed", spec_.text,
                                      format_bytes(double(want)), format_bytes(double(bytes))));
    if (S_ISREG(st.st_mode) && size_t(st.st_size) < want && ftruncate(fd_, off_t(want)) != 0)
        throw RegionError(fmt::format("region {}: cannot size {} to {}: {}", spec_.text, spec_.path,
                                      format_bytes(double(want)), strerror(errno)));
    len_ = want;
    mapping_len_ = len_;
    mapping_ = mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, 0);
    if (mapping_ == MAP_FAILED) {
        mapping_ = nullptr;
        throw RegionError(fmt::format("region {}: mmap of {} failed: {}", spec_.text,
                                      format_bytes(double(len_)), strerror(errno)));
    }
    base_ = mapping_;
    mlock(base_, len_);
}

void Region::add_to_heap() {
    if (rte_malloc_heap_create(heap_name_.c_str()) != 0)
        throw std::runtime_error(fmt::format("region {}: heap create '{}' failed: {}", spec_.text,
                                             heap_name_, rte_strerror(rte_errno)));
    heap_created_ = true;
    size_t pages = len_ / page_size_;
    std::vector<rte_iova_t> iova(pages);
    for (size_t i = 0; i < pages; ++i) {
        auto* p = static_cast<char*>(base_) + i * page_size_;
        iova[i] = iova_of(p);
    }
    if (rte_malloc_heap_memory_add(heap_name_.c_str(), base_, len_, iova.data(), unsigned(pages),
                                   page_size_) != 0)
        throw std::runtime_error(fmt::format("region {}: adding memory to heap failed: {}",
                                             spec_.text, rte_strerror(rte_errno)));
    memory_added_ = true;
    socket_id_ = rte_malloc_heap_get_socket(heap_name_.c_str());
}

void Region::dma_map(rte_device* device) {
    if (!external() || device == nullptr) return;
    // Only devices on a physical bus DMA; vdevs (net_null, net_pcap, memif...) read memory
    // through the CPU.
    std::string bus = rte_bus_name(rte_dev_bus(device));
    if (bus == "vdev") return;
    if (rte_dev_dma_map(device, base_, iova_of(base_), len_) != 0 && rte_errno != ENOTSUP)
        throw std::runtime_error(fmt::format("region {}: DMA map for {} failed: {}", spec_.text,
                                             rte_dev_name(device), rte_strerror(rte_errno)));
    dma_mapped_.push_back(device);
}

Region::~Region() {
    for (rte_device* d : dma_mapped_) rte_dev_dma_unmap(d, base_, iova_of(base_), len_);
    if (memory_added_) rte_malloc_heap_memory_remove(heap_name_.c_str(), base_, len_);
    if (heap_created_) rte_malloc_heap_destroy(heap_name_.c_str());
    if (mapping_) munmap(mapping_, mapping_len_);
    if (fd_ >= 0) close(fd_);
}

std::string Region::name() const {
    std::string kind = spec_.text.empty() ? "socket:" + std::to_string(socket_id_) : spec_.text;
    return spec_.alias.empty() ? kind : spec_.alias + " (" + kind + ")";
}

std::string describe_placement(const void* addr, size_t len) {
    const rte_memseg_list* msl = rte_mem_virt2memseg_list(addr);
    if (msl == nullptr) return "not DPDK memory";
    std::string where = msl->external ? fmt::format("external heap (socket id {})", msl->socket_id)
                                      : fmt::format("socket {}", msl->socket_id);
    where += fmt::format(", {} pages", format_bytes(double(msl->page_sz)));
    if (msl->external || msl->page_sz == k4K) {
        size_t thp = page_facts(addr, len).thp_bytes;
        if (thp) where += fmt::format(", {} on transparent huge pages", format_bytes(double(thp)));
    }
    return where;
}

}  // namespace linerate::mem
