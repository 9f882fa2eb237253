#pragma once
// Header layout constants and views for Ethernet (with up to two VLAN tags), IPv4 and UDP.
// Everything works on plain bytes so packet kernels can be tested without EAL.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pkt/bytes.hpp"

namespace linerate::pkt {

inline constexpr size_t kMacLen = 6;
inline constexpr size_t kEthHdrLen = 14;
inline constexpr size_t kVlanTagLen = 4;
inline constexpr size_t kIpv4MinHdrLen = 20;
inline constexpr size_t kUdpHdrLen = 8;
// Ethernet + IPv4 without options + UDP: where the app headers of docs/wire-formats.md start.
inline constexpr size_t kUdpPayloadOffset = kEthHdrLen + kIpv4MinHdrLen + kUdpHdrLen;
// Bytes a frame occupies on the wire beyond its data: preamble 8, FCS 4, inter-frame gap 12.
inline constexpr size_t kWireOverhead = 24;

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeQinQ = 0x88A8;
inline constexpr uint8_t kIpProtoTcp = 6;
inline constexpr uint8_t kIpProtoUdp = 17;

// Swaps destination and source MAC in place. The frame must hold at least 12 bytes.
inline void swap_macs(uint8_t* frame) {
    uint8_t dst[kMacLen];
    std::memcpy(dst, frame, kMacLen);
    std::memmove(frame, frame + kMacLen, kMacLen);
    std::memcpy(frame + kMacLen, dst, kMacLen);
}

// The same on a frame with at least 16 bytes: one 16-byte load, a byte shuffle and a store
// (pshufb on x86, tbl on Arm) instead of byte moves through a temporary; the hot path of every
// reflector. Bytes 12..15 are written back unchanged.
inline void swap_macs_wide(uint8_t* frame) {
    using Bytes16 = uint8_t __attribute__((vector_size(16)));
    Bytes16 v;
    std::memcpy(&v, frame, sizeof v);
    v = __builtin_shufflevector(v, v, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 12, 13, 14, 15);
    std::memcpy(frame, &v, sizeof v);
}

struct L2Header {
    uint16_t ethertype = 0;  // after the VLAN tags
    uint16_t length = 0;     // bytes of Ethernet header plus tags: where L3 starts
    uint8_t vlan_tags = 0;
    bool complete = false;  // false: the frame ends inside the Ethernet/VLAN header
};

// Parses the Ethernet header, skipping up to max_tags VLAN (0x8100) / QinQ (0x88A8) tags.
inline L2Header parse_l2(const uint8_t* frame, size_t len, unsigned max_tags = 2) {
    L2Header h;
    if (len < kEthHdrLen) return h;
    size_t off = 2 * kMacLen;
    uint16_t type = load_be16(frame + off);
    while ((type == kEtherTypeVlan || type == kEtherTypeQinQ) && h.vlan_tags < max_tags) {
        off += kVlanTagLen;
        if (off + 2 > len) return h;
        type = load_be16(frame + off);
        ++h.vlan_tags;
    }
    h.ethertype = type;
    h.length = uint16_t(off + 2);
    h.complete = true;
    return h;
}

// IPv4 field accessors on a header that starts at `ip`.
struct Ipv4View {
    const uint8_t* ip;
    uint8_t version() const { return ip[0] >> 4; }
    size_t header_len() const { return size_t(ip[0] & 0x0F) * 4; }
    uint16_t total_len() const { return load_be16(ip + 2); }
    uint8_t protocol() const { return ip[9]; }
    uint32_t src() const { return load_be32(ip + 12); }
    uint32_t dst() const { return load_be32(ip + 16); }
};

struct UdpView {
    const uint8_t* udp;
    uint16_t src_port() const { return load_be16(udp); }
    uint16_t dst_port() const { return load_be16(udp + 2); }
    uint16_t length() const { return load_be16(udp + 4); }
};

}  // namespace linerate::pkt
