#pragma once
// IPv4 and UDP checksums for test frames, written out plainly (RFC 1071, RFC 768) so a test's
// expectations never come from lib/pkt/checksum.hpp, the code under test.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace linerate::test {

// One's-complement sum of big-endian 16-bit words (an odd last byte padded with zero), folded.
inline uint32_t plain_sum(const uint8_t* p, size_t len, uint32_t sum = 0) {
    for (size_t i = 0; i < len; i += 2) sum += uint32_t(p[i]) << 8 | (i + 1 < len ? p[i + 1] : 0);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return sum;
}

// Rewrites the IPv4 header checksum of the header at frame[l3] (IHL from the header).
inline void set_ip_checksum(std::vector<uint8_t>& f, size_t l3 = 14) {
    uint8_t* ip = &f[l3];
    const size_t ihl = size_t(ip[0] & 0x0F) * 4;
    ip[10] = ip[11] = 0;
    const uint16_t c = uint16_t(~plain_sum(ip, ihl));
    ip[10] = uint8_t(c >> 8);
    ip[11] = uint8_t(c);
}

// Writes what a Linux sender with TX checksum offload leaves in the UDP checksum field
// (CHECKSUM_PARTIAL, as a veth delivers it): the pseudo-header sum alone, folded, not inverted.
inline void set_partial_udp_checksum(std::vector<uint8_t>& f, size_t l3 = 14) {
    const uint8_t* ip = &f[l3];
    uint8_t* udp = &f[l3 + size_t(ip[0] & 0x0F) * 4];
    const uint8_t pseudo[12] = {ip[12], ip[13], ip[14], ip[15], ip[16], ip[17],
                                ip[18], ip[19], 0,      17,     udp[4], udp[5]};
    const uint16_t c = uint16_t(plain_sum(pseudo, sizeof pseudo));
    udp[6] = uint8_t(c >> 8);
    udp[7] = uint8_t(c);
}

// Writes the UDP checksum of the datagram after the IPv4 header at frame[l3] (its length from
// the UDP header), 0 sent as 0xFFFF.
inline void set_udp_checksum(std::vector<uint8_t>& f, size_t l3 = 14) {
    const uint8_t* ip = &f[l3];
    uint8_t* udp = &f[l3 + size_t(ip[0] & 0x0F) * 4];
    const size_t udp_len = size_t(udp[4]) << 8 | udp[5];
    udp[6] = udp[7] = 0;
    const uint8_t pseudo[12] = {ip[12], ip[13], ip[14], ip[15], ip[16], ip[17],
                                ip[18], ip[19], 0,      17,     udp[4], udp[5]};
    uint16_t c = uint16_t(~plain_sum(udp, udp_len, plain_sum(pseudo, sizeof pseudo)));
    if (c == 0) c = 0xFFFF;
    udp[6] = uint8_t(c >> 8);
    udp[7] = uint8_t(c);
}

}  // namespace linerate::test
