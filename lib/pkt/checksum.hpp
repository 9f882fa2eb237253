#pragma once
// Internet checksum (RFC 1071): computing it for frames we build, verifying it on frames we
// receive, and what a port's RX checksum offload already told about a frame.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pkt/bytes.hpp"
#include "pkt/headers.hpp"
#include "pkt/ipv4_checksum.h"

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

// Verification on received frames, fast enough for every frame of a payload: 32-bit words are
// added as they lie in memory into a 64-bit sum (the compiler vectorises the loop). Why that
// is enough: a 32-bit word hi:lo is hi * 65536 + lo = hi + lo mod 0xFFFF, and a 16-bit word
// read in the other byte order is 256 times the value mod 0xFFFF (256 is invertible), so the
// data verifies iff this sum is 0 mod 0xFFFF, in any byte order. Zero bytes appended to the
// data change nothing (RFC 1071 pads an odd length with one).
inline uint64_t word_sum(const uint8_t* data, size_t len) {
    uint64_t sum = 0;
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        uint32_t w;
        std::memcpy(&w, data + i, 4);
        sum += w;
    }
    if (i < len) {
        uint8_t tail[4] = {};
        std::memcpy(tail, data + i, len - i);
        uint32_t w;
        std::memcpy(&w, tail, 4);
        sum += w;
    }
    return sum;
}

// A sum of data that contains non-zero bytes, checked: its folded value is 0xFFFF, i.e. the
// sum is 0 mod 0xFFFF, by lib/pkt/ipv4_checksum.h's test (the one the XDP programs compile).
inline bool word_sum_verifies(uint64_t sum) {
    return lr_word_sum_verifies(sum) != 0;
}

// The IPv4 header at `ip` (ihl_bytes >= 20, all readable) carries a valid header checksum.
inline bool ipv4_header_checksum_ok(const uint8_t* ip, size_t ihl_bytes) {
    return word_sum_verifies(word_sum(ip, ihl_bytes));  // version 4 makes it non-zero
}

// The UDP pseudo header (RFC 768): source, destination, zero, protocol, UDP length (the field,
// as it lies in the datagram).
inline void udp_pseudo_header(const uint8_t* ip, const uint8_t* udp, uint8_t (&out)[12]) {
    std::memcpy(out, ip + 12, 8);
    out[8] = 0;
    out[9] = kIpProtoUdp;
    std::memcpy(out + 10, udp + 4, 2);
}

// The UDP datagram at `udp` (udp_len bytes as its length field says, all readable) inside the
// IPv4 header at `ip` carries a valid checksum, or none: a zero field means the sender computed
// none (RFC 768). A computed checksum of 0 is sent as 0xFFFF, which this accepts too.
inline bool udp_checksum_ok(const uint8_t* ip, const uint8_t* udp, size_t udp_len) {
    if (load_be16(udp + 6) == 0) return true;
    uint8_t pseudo[12];
    udp_pseudo_header(ip, udp, pseudo);
    return word_sum_verifies(word_sum(pseudo, sizeof pseudo) + word_sum(udp, udp_len));
}

// The UDP checksum field holds exactly the pseudo-header sum (folded, not inverted): what a
// Linux sender leaves for the NIC to complete when TX checksum offload is on (CHECKSUM_PARTIAL).
// Such a datagram never crossed a wire that way (a NIC would have completed it); it reaches us
// unfinished from a veth, a tap or a local socket, which is no corruption. Both sides are
// compared mod 0xFFFF (0 and 0xFFFF are the same one's-complement value).
inline bool udp_checksum_offloaded(const uint8_t* ip, const uint8_t* udp) {
    uint8_t pseudo[12];
    udp_pseudo_header(ip, udp, pseudo);
    const uint16_t field = uint16_t(udp[6] << 8 | udp[7]);
    return field != 0 && ones_complement_sum(pseudo, sizeof pseudo) % 0xFFFF == field % 0xFFFF;
}

// What the port's RX checksum offload said about a frame (the EAL side maps the mbuf flags).
enum class RxCheck : uint8_t {
    unknown,  // not checked by the port: verify in software
    good,     // checked by the port and valid (or "none": integrity verified by the port)
    bad,      // checked by the port and wrong
};
struct RxChecksums {
    RxCheck ip = RxCheck::unknown;
    RxCheck l4 = RxCheck::unknown;
};

// The IPv4 header and UDP checks with the port's word first.
inline bool ipv4_header_valid(const uint8_t* ip, size_t ihl_bytes, RxCheck port) {
    if (port != RxCheck::unknown) return port == RxCheck::good;
    return ipv4_header_checksum_ok(ip, ihl_bytes);
}
inline bool udp_valid(const uint8_t* ip, const uint8_t* udp, size_t udp_len, RxCheck port) {
    if (port != RxCheck::unknown) return port == RxCheck::good;
    return udp_checksum_ok(ip, udp, udp_len);
}

// The receive-side checks of an IPv4/UDP app, in their order.
struct ChecksumCheck {
    bool verify = true;  // off: --no-verify-checksums
    RxChecksums port;    // what the port already said about this frame
    // Off (--strict-checksums): a UDP checksum left for offload (udp_checksum_offloaded) is
    // bad like any other wrong one.
    bool accept_offloaded = true;
};
// offloaded: the UDP checksum was left to TX offload by the sender (accepted, counted apart).
enum class ChecksumVerdict : uint8_t { ok, offloaded, bad_ip, bad_udp };
inline bool checksum_accepted(ChecksumVerdict v) {
    return v == ChecksumVerdict::ok || v == ChecksumVerdict::offloaded;
}
// `ip` with its ihl_bytes and the UDP datagram of udp_len bytes must be readable. The offload
// case is looked at only once the full check failed (by software or by the port, which cannot
// know what the sender left unfinished): it costs nothing on valid frames.
inline ChecksumVerdict check_ipv4_udp(const uint8_t* ip, size_t ihl_bytes, const uint8_t* udp,
                                      size_t udp_len, ChecksumCheck check) {
    if (!check.verify) return ChecksumVerdict::ok;
    if (!ipv4_header_valid(ip, ihl_bytes, check.port.ip)) return ChecksumVerdict::bad_ip;
    if (udp_valid(ip, udp, udp_len, check.port.l4)) [[likely]]
        return ChecksumVerdict::ok;
    return check.accept_offloaded && udp_checksum_offloaded(ip, udp) ? ChecksumVerdict::offloaded
                                                                     : ChecksumVerdict::bad_udp;
}

// Completes the TCP or UDP checksum of an IPv4 frame (`len` contiguous bytes, up to two VLAN
// tags, not a fragment) whose sender left it to TX offload, as the NIC would have: the field
// holds the pseudo-header sum alone (udp_checksum_offloaded). A forwarder between kernel
// interfaces (AF_XDP, AF_PACKET, TAP on a veth) must do it, or the next hop, which no NIC
// feeds, drops the segment. Returns true when it wrote a checksum; anything else is untouched.
inline bool complete_offloaded_checksum(uint8_t* frame, size_t len) {
    // lib/pkt/frame_walk.h's walk, up to two tags; no fragment of any kind (none is completed).
    uint8_t* ip = const_cast<uint8_t*>(lr_walk_ipv4(frame, frame + len, LR_MAX_VLAN_TAGS));
    if (!ip) return false;
    const Ipv4View v{ip};
    const size_t ihl = v.header_len(), total = v.total_len();
    const uint8_t proto = v.protocol();
    if (total < ihl || total > size_t(frame + len - ip) || (load_be16(ip + 6) & LR_NO_FRAGMENTS) ||
        (proto != kIpProtoTcp && proto != kIpProtoUdp))
        return false;
    uint8_t* l4 = ip + ihl;
    const size_t l4_len =
        proto == kIpProtoTcp ? total - ihl : (total - ihl >= 8 ? load_be16(l4 + 4) : 0);
    const size_t field = proto == kIpProtoTcp ? 16 : 6;
    if (l4_len < field + 2 || l4_len > total - ihl) return false;
    const uint8_t pseudo[12] = {ip[12],
                                ip[13],
                                ip[14],
                                ip[15],
                                ip[16],
                                ip[17],
                                ip[18],
                                ip[19],
                                0,
                                proto,
                                uint8_t(l4_len >> 8),
                                uint8_t(l4_len)};
    const uint16_t sum = ones_complement_sum(pseudo, sizeof pseudo);
    const uint16_t stored = load_be16(l4 + field);
    if (stored == 0 || stored % 0xFFFF != sum % 0xFFFF) return false;
    l4[field] = l4[field + 1] = 0;
    uint16_t c = internet_checksum(l4, l4_len, sum);
    if (c == 0 && proto == kIpProtoUdp) c = 0xFFFF;  // 0 means "none" in UDP
    store_be16(l4 + field, c);
    return true;
}

// Writes the UDP checksum of the datagram at `udp` (udp_len bytes) inside the IPv4 header at
// `ip`: for senders that compute one (0 is sent as 0xFFFF).
inline void write_udp_checksum(const uint8_t* ip, uint8_t* udp, size_t udp_len) {
    udp[6] = udp[7] = 0;
    uint8_t pseudo[12];
    udp_pseudo_header(ip, udp, pseudo);
    const uint16_t seed = ones_complement_sum(pseudo, sizeof pseudo);
    uint16_t c = internet_checksum(udp, udp_len, seed);
    if (c == 0) c = 0xFFFF;
    udp[6] = uint8_t(c >> 8);
    udp[7] = uint8_t(c);
}

}  // namespace linerate::pkt
