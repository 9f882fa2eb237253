#pragma once
// Builds Ethernet + IPv4 + UDP frames: used by the traffic generator and by tests.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace linerate::pkt {

using MacAddr = std::array<uint8_t, 6>;

struct UdpFrameSpec {
    MacAddr dst_mac{0x02, 0, 0, 0, 0, 0x02};
    MacAddr src_mac{0x02, 0, 0, 0, 0, 0x01};
    uint32_t src_ip = 0xC0A80001;  // 192.168.0.1
    uint32_t dst_ip = 0xC0A80002;  // 192.168.0.2
    uint16_t src_port = 1024;
    uint16_t dst_port = 9;
    uint8_t ttl = 64;
    uint16_t ip_id = 0;
};

// Writes Ethernet, IPv4 (valid checksum) and UDP (checksum 0: none, allowed in IPv4) headers
// into the first 42 bytes of `frame`; IP and UDP lengths cover frame_len - 14 bytes.
// frame_len must be at least 42.
void write_udp_headers(uint8_t* frame, size_t frame_len, const UdpFrameSpec& spec);

// A whole frame of frame_len bytes (at least 42): headers, then `payload`, then zero fill.
std::vector<uint8_t> make_udp_frame(const UdpFrameSpec& spec, size_t frame_len,
                                    std::span<const uint8_t> payload = {});

// Recomputes the IPv4 header checksum of the header at `ip` (IHL taken from the header).
void fix_ipv4_checksum(uint8_t* ip);

uint32_t ipv4_addr(uint8_t a, uint8_t b, uint8_t c, uint8_t d);

}  // namespace linerate::pkt
