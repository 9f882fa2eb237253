#pragma once
// The measurement kernels of linerate-regions (docs/regions.md): a random pointer chain and its
// chase (the study's Fig. 5), random line reads (Fig. 6), sequential reads and writes (Fig. 7, 8).
// Plain functions on a buffer: no EAL, unit tests call them on ordinary memory.
#include <cstddef>
#include <cstdint>

namespace linerate::regions {

inline constexpr size_t kLineBytes = 64;

// Links the elements at offsets 0, stride, 2*stride ... of the first `bytes` of `buf` into ONE
// random cycle through all bytes/stride of them (Sattolo's algorithm: no shorter cycle, so a
// chase visits every element and no prefetcher can guess the next). Each element holds the
// address of the next. Returns the first element. stride >= sizeof(void*), a multiple of it.
void* build_chain(void* buf, size_t bytes, size_t stride, uint64_t seed);

// Follows `steps` links from `start`; returns where it ended (the loads are dependent).
void* chase(void* start, uint64_t steps);

// Links from `start` until it comes back: the cycle's length, or limit + 1 if it did not come
// back within `limit` steps.
size_t cycle_length(void* start, size_t limit);

// Reads `lines` random 64-byte lines of the first `bytes` of `buf` (independent loads: the core
// may have many in flight); returns the sum of what it read.
uint64_t read_random_lines(const void* buf, size_t bytes, uint64_t lines, uint64_t seed);

// Reads every 8-byte word of `buf` in order; returns their sum.
uint64_t read_sequential(const void* buf, size_t bytes);

// Writes `value` into every 8-byte word of `buf` in order.
void write_sequential(void* buf, size_t bytes, uint64_t value);

// Timed forms: each repeats its kernel until at least `seconds` have passed (one pass at least).
// Nanoseconds per dependent load of the chain from `start` of `elements` elements (one walk of
// the cycle first, up to 16 Mi steps, loads caches and TLBs; the least of three rounds).
double chase_ns(void* start, size_t elements, double seconds);
// Bytes per second read as random lines / read in order / written in order.
double random_read_bytes_per_s(const void* buf, size_t bytes, double seconds, uint64_t seed);
double sequential_read_bytes_per_s(const void* buf, size_t bytes, double seconds);
double sequential_write_bytes_per_s(void* buf, size_t bytes, double seconds);

}  // namespace linerate::regions
