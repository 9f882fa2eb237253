#pragma once
// Big-endian (network order) loads and stores on unaligned bytes. Wire formats are big-endian.
// The loads are lib/pkt/frame_walk.h's, the ones the XDP programs compile.
#include <bit>
#include <cstdint>
#include <cstring>

#include "pkt/frame_walk.h"

namespace linerate::pkt {

inline uint16_t load_be16(const uint8_t* p) {
    return lr_load_be16(p);
}
inline uint32_t load_be32(const uint8_t* p) {
    return lr_load_be32(p);
}
inline uint64_t load_be64(const uint8_t* p) {
    return lr_load_be64(p);
}
// How a big-endian field holding `be` lies in memory: what a native load of its bytes
// (lr_load16/32/64) reads, so frames can be compared with constants without a byte swap.
constexpr uint16_t in_memory_order(uint16_t be) {
    return std::endian::native == std::endian::little ? __builtin_bswap16(be) : be;
}
constexpr uint32_t in_memory_order(uint32_t be) {
    return std::endian::native == std::endian::little ? __builtin_bswap32(be) : be;
}
constexpr uint64_t in_memory_order(uint64_t be) {
    return std::endian::native == std::endian::little ? __builtin_bswap64(be) : be;
}

inline void store_be16(uint8_t* p, uint16_t v) {
    p[0] = uint8_t(v >> 8);
    p[1] = uint8_t(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
    v = __builtin_bswap32(v);
    std::memcpy(p, &v, 4);
}
inline void store_be64(uint8_t* p, uint64_t v) {
    lr_store_be64(p, v);
}

}  // namespace linerate::pkt
