#include "pkt/build.hpp"

#include <algorithm>
#include <stdexcept>

#include "pkt/checksum.hpp"
#include "pkt/headers.hpp"

namespace linerate::pkt {

uint32_t ipv4_addr(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return uint32_t(a) << 24 | uint32_t(b) << 16 | uint32_t(c) << 8 | d;
}

void fix_ipv4_checksum(uint8_t* ip) {
    size_t ihl = size_t(ip[0] & 0x0F) * 4;
    store_be16(ip + 10, 0);
    store_be16(ip + 10, internet_checksum(ip, ihl));
}

void write_udp_headers(uint8_t* frame, size_t frame_len, const UdpFrameSpec& spec) {
    if (frame_len < kUdpPayloadOffset) throw std::invalid_argument("frame shorter than 42 bytes");
    std::copy(spec.dst_mac.begin(), spec.dst_mac.end(), frame);
    std::copy(spec.src_mac.begin(), spec.src_mac.end(), frame + kMacLen);
    store_be16(frame + 12, kEtherTypeIpv4);

    uint8_t* ip = frame + kEthHdrLen;
    size_t ip_len = std::min<size_t>(frame_len - kEthHdrLen, 0xFFFF);
    ip[0] = 0x45;
    ip[1] = 0;
    store_be16(ip + 2, uint16_t(ip_len));
    store_be16(ip + 4, spec.ip_id);
    store_be16(ip + 6, 0x4000);  // don't fragment
    ip[8] = spec.ttl;
    ip[9] = kIpProtoUdp;
    store_be32(ip + 12, spec.src_ip);
    store_be32(ip + 16, spec.dst_ip);
    fix_ipv4_checksum(ip);

    uint8_t* udp = ip + kIpv4MinHdrLen;
    store_be16(udp, spec.src_port);
    store_be16(udp + 2, spec.dst_port);
    store_be16(udp + 4, uint16_t(ip_len - kIpv4MinHdrLen));
    store_be16(udp + 6, 0);
}

std::vector<uint8_t> make_udp_frame(const UdpFrameSpec& spec, size_t frame_len,
                                    std::span<const uint8_t> payload) {
    std::vector<uint8_t> frame(frame_len, 0);
    write_udp_headers(frame.data(), frame_len, spec);
    size_t n = std::min(payload.size(), frame_len - kUdpPayloadOffset);
    std::copy_n(payload.begin(), n, frame.begin() + kUdpPayloadOffset);
    return frame;
}

}  // namespace linerate::pkt
