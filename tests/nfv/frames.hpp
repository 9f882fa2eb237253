#pragma once
// Frames for nfv's end-to-end tests, built here byte by byte (with this file's own checksum) so
// the expected output never comes from the code under test.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pcapio/pcap_file.hpp"
#include "pkt/bytes.hpp"
#include "pkt/mac_swap.h"

namespace linerate::test::nfv {

using pcapio::Frame;

inline uint32_t ip(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return uint32_t(a) << 24 | uint32_t(b) << 16 | uint32_t(c) << 8 | d;
}

struct IpSpec {
    std::vector<uint16_t> tags;  // TPIDs, outermost first
    uint16_t ethertype = 0x0800;
    uint8_t ver_ihl = 0x45;
    size_t ip_total = 46;  // bytes of the datagram actually present (header + payload)
    int total_field = -1;  // the total length field; -1: ip_total
    size_t padding = 0;    // bytes after the datagram
    uint32_t src = ip(10, 0, 0, 1);
    uint32_t dst = ip(10, 0, 0, 2);
    bool break_checksum = false;
};

// RFC 1071 over the header, written out plainly.
inline uint16_t header_checksum(const uint8_t* h, size_t len) {
    uint32_t sum = 0;
    for (size_t i = 0; i < len; i += 2) sum += uint32_t(h[i]) << 8 | h[i + 1];
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return uint16_t(~sum);
}

inline size_t l2_length(const IpSpec& s) {
    return 14 + 4 * s.tags.size();
}

// Distinct MACs (so a swap shows), tags, IPv4 header with options when IHL > 5 (NOPs), payload
// bytes that count up, padding of 0xEE (so a missing trim shows).
inline Frame ip_frame(const IpSpec& s) {
    const size_t l2 = l2_length(s);
    Frame f(l2 + s.ip_total + s.padding, 0xEE);
    const uint8_t macs[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
    std::copy(macs, macs + 12, f.begin());
    size_t off = 12;
    for (uint16_t tpid : s.tags) {
        pkt::store_be16(&f[off], tpid);
        pkt::store_be16(&f[off + 2], 100);
        off += 4;
    }
    pkt::store_be16(&f[off], s.ethertype);
    uint8_t* h = &f[l2];
    const size_t hlen = std::max<size_t>(20, size_t(s.ver_ihl & 0x0F) * 4);
    for (size_t i = 0; i < s.ip_total; ++i) h[i] = uint8_t(i);
    h[0] = s.ver_ihl;
    h[1] = 0;
    pkt::store_be16(h + 2, uint16_t(s.total_field >= 0 ? s.total_field : int(s.ip_total)));
    pkt::store_be16(h + 4, 0x1234);
    pkt::store_be16(h + 6, 0);
    h[8] = 64;
    h[9] = 17;
    pkt::store_be16(h + 10, 0);
    pkt::store_be32(h + 12, s.src);
    pkt::store_be32(h + 16, s.dst);
    for (size_t i = 20; i < hlen && i < s.ip_total; ++i) h[i] = 1;  // NOP options
    if (hlen <= s.ip_total) {
        uint16_t sum = header_checksum(h, hlen);
        if (s.break_checksum) sum ^= 0x0100;
        pkt::store_be16(h + 10, sum);
    }
    return f;
}

// A non-IP frame of `len` bytes (ARP, IPv6...).
inline Frame other_frame(uint16_t ethertype, size_t len) {
    Frame f(len, 0x5A);
    const uint8_t macs[12] = {2, 0, 0, 0, 0, 4, 2, 0, 0, 0, 0, 3};
    std::copy(macs, macs + 12, f.begin());
    pkt::store_be16(&f[12], ethertype);
    return f;
}

inline Frame swap_macs(Frame f) {
    lr_swap_macs(f.data(), f.data() + f.size());
    return f;
}

// What nfv sends for a valid frame: cut after the datagram, MACs swapped unless told not to.
inline Frame forwarded(const IpSpec& s, bool mac_swap = true) {
    Frame f = ip_frame(s);
    f.resize(l2_length(s) + s.ip_total);
    return mac_swap ? swap_macs(f) : f;
}

// One frame of the test mix: its bytes, and the drop reason nfv must give ("" = valid).
struct Case {
    Frame frame;
    std::string reason;
    Frame out;  // for a valid frame: what comes out
};

inline Case valid(const IpSpec& s) {
    return {ip_frame(s), "", forwarded(s)};
}
inline Case invalid(Frame f, std::string reason) {
    return {std::move(f), std::move(reason), {}};
}

}  // namespace linerate::test::nfv
