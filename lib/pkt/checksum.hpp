#pragma once
// Internet checksum (RFC 1071).
#include <cstddef>
#include <cstdint>

namespace linerate::pkt {

// One's-complement sum of 16-bit big-endian words, folded to 16 bits (not inverted).
inline uint16_t ones_complement_sum(const uint8_t* data, size_t len, uint32_t seed = 0) {
    uint64_t sum = seed;
    size_t i = 0;
    for (; i + 1 < len; i += 2) sum += uint32_t(data[i] << 8 | data[i + 1]);
    if (i < len) sum += uint32_t(data[i] << 8);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return uint16_t(sum);
}

// The value to store in a checksum field that was zero while summing.
inline uint16_t internet_checksum(const uint8_t* data, size_t len, uint32_t seed = 0) {
    return uint16_t(~ones_complement_sum(data, len, seed));
}

// True when a header including its stored checksum sums to 0xFFFF (i.e. verifies).
inline bool checksum_ok(const uint8_t* data, size_t len) {
    return ones_complement_sum(data, len) == 0xFFFF;
}

}  // namespace linerate::pkt
