#pragma once
// The in-memory trace every variant of kvagg_bench runs on: kvagg frames laid out like packet
// buffers (each at a 64-byte aligned address), and the same tuples decoded to host order for
// the baselines that skip packet parsing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "kvagg/kv_wire.hpp"

namespace linerate::kvagg::bench {

// Memory of the trace in transparent huge pages (madvise, before the first touch), as packet
// buffers sit in hugepages in a DPDK app: with 4 KiB pages the frames of 1 tuple (1 Mi of them,
// 128 MiB) paid a TLB miss and a restart of the hardware prefetcher every 32 frames.
void advise_huge_pages(void* p, size_t bytes);  // madvise(MADV_HUGEPAGE), best effort

template <class T>
struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() = default;
    template <class U>
    HugePageAllocator(const HugePageAllocator<U>&) {}
    T* allocate(size_t n);
    void deallocate(T* p, size_t) { std::free(p); }
    template <class U>
    bool operator==(const HugePageAllocator<U>&) const {
        return true;
    }
};

template <class T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

struct TraceConfig {
    unsigned tuples_per_frame = 32;
    uint64_t keys = 1 << 20;          // uniform over 0 .. keys-1
    size_t tuples = size_t(1) << 22;  // in all (fewer when max_frames caps the frame count)
    size_t max_frames = size_t(1) << 20;
    uint32_t streams = 16;  // round robin, sequence numbers 0, 1, ... per stream
    uint64_t seed = 1;
};

class Trace {
  public:
    explicit Trace(const TraceConfig& cfg);

    size_t frames() const { return offsets_.size(); }
    const uint8_t* frame(size_t i) const { return buf_.data() + offsets_[i]; }
    size_t frame_len() const { return frame_len_; }
    // Host-order tuples in frame order (what a parser would hand over).
    const HugeVector<KvTuple>& tuples() const { return tuples_; }
    uint64_t value_sum() const { return value_sum_; }
    size_t frame_bytes() const { return buf_.size(); }

  private:
    HugeVector<uint8_t> buf_;
    std::vector<size_t> offsets_;
    HugeVector<KvTuple> tuples_;
    size_t frame_len_ = 0;
    uint64_t value_sum_ = 0;
};

template <class T>
T* HugePageAllocator<T>::allocate(size_t n) {
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t bytes = (n * sizeof(T) + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, bytes);
    if (p == nullptr) throw std::bad_alloc();
    advise_huge_pages(p, bytes);
    return static_cast<T*>(p);
}

}  // namespace linerate::kvagg::bench
