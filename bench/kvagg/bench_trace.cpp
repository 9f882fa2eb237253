#include "bench_trace.hpp"

#include <sys/mman.h>

#include <algorithm>

namespace linerate::kvagg::bench {

void advise_huge_pages(void* p, size_t bytes) {
    madvise(p, bytes, MADV_HUGEPAGE);  // without THP: 4 KiB pages, as before
}

namespace {

uint64_t splitmix(uint64_t& s) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace

Trace::Trace(const TraceConfig& cfg) {
    const size_t per = cfg.tuples_per_frame;
    const size_t n = std::max<size_t>(1, std::min(cfg.tuples / per, cfg.max_frames));
    frame_len_ = kv_frame_len(per);
    const size_t stride = (frame_len_ + 63) / 64 * 64;
    buf_.resize(n * stride + 64);
    // 64-byte aligned frames, as mbuf data is.
    const size_t base = (64 - reinterpret_cast<uintptr_t>(buf_.data()) % 64) % 64;
    tuples_.resize(n * per);
    uint64_t rng = cfg.seed;
    std::vector<uint64_t> seq(cfg.streams);
    pkt::UdpFrameSpec spec;
    spec.dst_port = kKvDefaultPort;
    for (size_t f = 0; f < n; ++f) {
        const std::span<KvTuple> tuples(tuples_.data() + f * per, per);
        for (KvTuple& t : tuples) {
            t.key = splitmix(rng) % cfg.keys;
            t.value = splitmix(rng) % 1000;
            value_sum_ += t.value;
        }
        const uint32_t stream = uint32_t(f % cfg.streams);
        spec.src_port = uint16_t(1024 + stream);
        offsets_.push_back(base + f * stride);
        write_kv_frame(buf_.data() + offsets_.back(), spec, stream, seq[stream]++, tuples);
    }
}

}  // namespace linerate::kvagg::bench
