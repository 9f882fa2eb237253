#pragma once
// Header layout constants and views for Ethernet (with up to two VLAN tags), IPv4 and UDP, in
// C++ names for lib/pkt/frame_walk.h's (the one walk, which the XDP programs compile too), and
// the one MAC swap (lib/pkt/mac_swap.h's lr_swap_macs). Everything works on plain bytes so packet
// kernels can be tested without EAL.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pkt/bytes.hpp"
#include "pkt/frame_walk.h"
#include "pkt/mac_swap.h"

namespace linerate::pkt {

inline constexpr size_t kMacLen = LR_MAC_LEN;
inline constexpr size_t kEthHdrLen = LR_ETH_HLEN;
inline constexpr size_t kVlanTagLen = LR_VLAN_TAG_LEN;
inline constexpr size_t kIpv4MinHdrLen = LR_IPV4_MIN_HLEN;
inline constexpr size_t kUdpHdrLen = LR_UDP_HLEN;
// Ethernet + IPv4 without options + UDP: where the app headers of docs/wire-formats.md start.
inline constexpr size_t kUdpPayloadOffset = kEthHdrLen + kIpv4MinHdrLen + kUdpHdrLen;
// Bytes a frame occupies on the wire beyond its data: preamble 8, FCS 4, inter-frame gap 12.
inline constexpr size_t kWireOverhead = 24;

inline constexpr uint16_t kEtherTypeIpv4 = LR_ETHERTYPE_IPV4;
inline constexpr uint16_t kEtherTypeVlan = LR_ETHERTYPE_VLAN;
inline constexpr uint16_t kEtherTypeQinQ = LR_ETHERTYPE_QINQ;
inline constexpr uint8_t kIpProtoTcp = LR_IPPROTO_TCP;
inline constexpr uint8_t kIpProtoUdp = LR_IPPROTO_UDP;

struct L2Header {
    uint16_t ethertype = 0;  // after the VLAN tags
    uint16_t length = 0;     // bytes of Ethernet header plus tags: where L3 starts
    uint8_t vlan_tags = 0;
    bool complete = false;  // false: the frame ends inside the Ethernet/VLAN header
};

// Parses the Ethernet header, skipping up to max_tags VLAN (0x8100) / QinQ (0x88A8) tags
// (lib/pkt/frame_walk.h's lr_l3_offset).
inline L2Header parse_l2(const uint8_t* frame, size_t len, unsigned max_tags = LR_MAX_VLAN_TAGS) {
    L2Header h;
    uint16_t type = 0;
    const uint32_t l3 = lr_l3_offset(frame, frame + len, max_tags, &type);
    if (l3 == 0) return h;
    h.ethertype = type;
    h.length = uint16_t(l3);
    h.vlan_tags = uint8_t((l3 - kEthHdrLen) / kVlanTagLen);
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
