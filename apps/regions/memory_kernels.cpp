#include "regions/memory_kernels.hpp"

#include "mem/pointer_chain.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <vector>

namespace linerate::regions {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// What the kernels return goes here, so the compiler cannot drop their loads (an atomic: the
// workers store to it at once).
std::atomic<uint64_t> g_sink;

}  // namespace

void* build_chain(void* buf, size_t bytes, size_t stride, uint64_t seed) {
    if (stride < sizeof(void*) || stride % sizeof(void*) != 0 || bytes < stride)
        throw std::invalid_argument("build_chain: stride must be a multiple of 8 within bytes");
    const size_t count = bytes / stride;
    if (count > UINT32_MAX) throw std::invalid_argument("build_chain: more than 2^32 elements");
    std::vector<uint64_t> next(count);
    mem::make_cyclic_chain(next, seed);  // one cycle of length count
    auto* base = static_cast<char*>(buf);
    for (size_t i = 0; i < count; ++i)
        *reinterpret_cast<void**>(base + i * stride) = base + size_t(next[i]) * stride;
    return buf;
}

void* chase(void* start, uint64_t steps) {
    void* p = start;
    for (uint64_t i = 0; i < steps; ++i) p = *static_cast<void**>(p);
    return p;
}

size_t cycle_length(void* start, size_t limit) {
    void* p = start;
    for (size_t n = 1; n <= limit; ++n) {
        p = *static_cast<void**>(p);
        if (p == start) return n;
    }
    return limit + 1;
}

uint64_t read_random_lines(const void* buf, size_t bytes, uint64_t lines, uint64_t seed) {
    const auto* base = static_cast<const uint64_t*>(buf);
    const uint64_t count = bytes / kLineBytes;
    constexpr size_t kWords = kLineBytes / sizeof(uint64_t);
    uint64_t state = seed | 1, sum = 0;
    for (uint64_t i = 0; i < lines; ++i) {
        const uint64_t* line = base + mem::random_index(state, count) * kWords;
        for (size_t w = 0; w < kWords; ++w) sum += line[w];
    }
    return sum;
}

uint64_t read_sequential(const void* buf, size_t bytes) {
    const auto* w = static_cast<const uint64_t*>(buf);
    const size_t n = bytes / sizeof(uint64_t);
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // four sums: the adds need not wait on each other
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += w[i];
        s1 += w[i + 1];
        s2 += w[i + 2];
        s3 += w[i + 3];
    }
    for (; i < n; ++i) s0 += w[i];
    return s0 + s1 + s2 + s3;
}

void write_sequential(void* buf, size_t bytes, uint64_t value) {
    auto* w = static_cast<uint64_t*>(buf);
    const size_t n = bytes / sizeof(uint64_t);
    for (size_t i = 0; i < n; ++i) w[i] = value;
}

double chase_ns(void* start, size_t elements, double seconds) {
    void* p = chase(start, std::min<size_t>(elements, size_t(16) << 20));
    // The least of three rounds: a round the core spent partly elsewhere (an interrupt, a
    // neighbour on a shared machine) only ever reads slower.
    constexpr uint64_t kChunk = 1 << 16;
    double best = 0;
    for (int round = 0; round < 3; ++round) {
        uint64_t steps = 0;
        const auto t0 = Clock::now();
        double elapsed = 0;
        do {
            p = chase(p, kChunk);
            steps += kChunk;
        } while ((elapsed = since(t0)) < seconds / 3);
        const double ns = elapsed * 1e9 / double(steps);
        best = round == 0 ? ns : std::min(best, ns);
    }
    g_sink.store(reinterpret_cast<uintptr_t>(p), std::memory_order_relaxed);
    return best;
}

double random_read_bytes_per_s(const void* buf, size_t bytes, double seconds, uint64_t seed) {
    constexpr uint64_t kChunk = 1 << 14;
    uint64_t lines = 0, sum = 0;
    const auto t0 = Clock::now();
    double elapsed = 0;
    do {
        sum += read_random_lines(buf, bytes, kChunk, seed + lines);
        lines += kChunk;
    } while ((elapsed = since(t0)) < seconds);
    g_sink.store(sum, std::memory_order_relaxed);
    return double(lines * kLineBytes) / elapsed;
}

double sequential_read_bytes_per_s(const void* buf, size_t bytes, double seconds) {
    uint64_t passes = 0, sum = 0;
    const auto t0 = Clock::now();
    double elapsed = 0;
    do {
        sum += read_sequential(buf, bytes);
        ++passes;
    } while ((elapsed = since(t0)) < seconds);
    g_sink.store(sum, std::memory_order_relaxed);
    return double(passes * bytes) / elapsed;
}

double sequential_write_bytes_per_s(void* buf, size_t bytes, double seconds) {
    uint64_t passes = 0;
    const auto t0 = Clock::now();
    double elapsed = 0;
    do {
        write_sequential(buf, bytes, passes);
        ++passes;
    } while ((elapsed = since(t0)) < seconds);
    return double(passes * bytes) / elapsed;
}

}  // namespace linerate::regions
