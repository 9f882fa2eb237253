#pragma once
// Where an app's UDP datagram is in a frame, for the apps that own a UDP port (their data
// path and their request parsers): one walk of Ethernet (up to two VLAN tags), IPv4 (options
// allowed) and UDP, with one verdict for the same frame whoever asks.
//
// A frame is the app's once its UDP destination port says so; anything that cannot be read that
// far (not IPv4, not UDP, truncated before the UDP header, a non-first fragment, an IPv4 header
// that is no IPv4 header) is not_mine, and so goes to the kernel on an exception path. From the
// port on, what is wrong with it is the app's to count: inconsistent lengths or a first fragment
// (malformed), then the checksums (docs/wire-formats.md, Checksums).
#include <cstddef>
#include <cstdint>

#include "pkt/bytes.hpp"
#include "pkt/checksum.hpp"
#include "pkt/headers.hpp"

namespace linerate::pkt {

enum class UdpVerdict : uint8_t {
    ok,
    offloaded,  // ok, with the UDP checksum left to the sender's TX offload
    not_mine,
    malformed,
    bad_ip_checksum,
    bad_udp_checksum,
};

struct UdpPayload {
    UdpVerdict verdict = UdpVerdict::not_mine;
    uint16_t l3_offset = 0;         // the IPv4 header
    const uint8_t* data = nullptr;  // the UDP payload (the app header), when accepted
    size_t len = 0;                 // its bytes, as the UDP length says (at least min_payload)

    bool accepted() const { return verdict == UdpVerdict::ok || verdict == UdpVerdict::offloaded; }
};

// An app's names for the verdicts that are not an accepted datagram.
template <class Reason>
struct UdpReasons {
    Reason not_mine, malformed, bad_ip_checksum, bad_udp_checksum;

    constexpr Reason of(UdpVerdict v) const {
        return v == UdpVerdict::malformed          ? malformed
               : v == UdpVerdict::bad_ip_checksum  ? bad_ip_checksum
               : v == UdpVerdict::bad_udp_checksum ? bad_udp_checksum
                                                   : not_mine;
    }
};

// A checksum check's verdict as the locator's (the one mapping from one to the other).
constexpr UdpVerdict udp_verdict(ChecksumVerdict c) {
    return c == ChecksumVerdict::bad_ip      ? UdpVerdict::bad_ip_checksum
           : c == ChecksumVerdict::bad_udp   ? UdpVerdict::bad_udp_checksum
           : c == ChecksumVerdict::offloaded ? UdpVerdict::offloaded
                                             : UdpVerdict::ok;
}

// The datagram to `dst_port` in frame[0, len) whose UDP payload holds at least `min_payload`
// bytes (the app's fixed header), with its checksums judged by `checks`. Reads only inside
// the frame.
inline UdpPayload locate_udp_payload(const uint8_t* frame, size_t len, uint16_t dst_port,
                                     size_t min_payload, ChecksumCheck checks = {}) {
    UdpPayload p;
    // lib/pkt/frame_walk.h's walk: up to two tags; a non-first fragment carries no UDP header,
    // so nothing says it is ours, but a first one is judged below.
    const uint8_t* end = frame + len;
    const uint8_t* l3 = lr_walk_ipv4(frame, end, LR_MAX_VLAN_TAGS);
    if (!l3) return p;
    const uint8_t* l4 = lr_walk_udp(l3, end, LR_FIRST_FRAGMENT_ALLOWED);
    if (!l4) return p;
    const Ipv4View ip{l3};
    const UdpView udp{l4};
    if (udp.dst_port() != dst_port) return p;

    p.verdict = UdpVerdict::malformed;
    // The header length as the walk's UDP offset: not read and scaled again (callgrind: 3
    // instructions a tagged frame).
    const size_t ihl = size_t(l4 - l3), room = size_t(end - l3);
    const size_t total = ip.total_len(), udp_len = udp.length();
    // total < room is fine: Ethernet pads short frames. A first fragment (MF): no reassembly.
    if ((load_be16(l3 + 6) & LR_IPV4_MORE_FRAGMENTS) != 0 || total < ihl + kUdpHdrLen ||
        total > room || udp_len < kUdpHdrLen + min_payload || udp_len > total - ihl)
        return p;
    p.verdict = udp_verdict(check_ipv4_udp(ip.ip, ihl, udp.udp, udp_len, checks));
    if (!p.accepted()) return p;
    p.l3_offset = uint16_t(l3 - frame);
    p.data = udp.udp + kUdpHdrLen;
    p.len = udp_len - kUdpHdrLen;
    return p;
}

// Whether an app that owns UDP port `port` serves a frame: anything the locator would not call
// not_mine (its own traffic, valid or not). The rest is what --exception-path hands to the
// host's kernel (runtime/rx_step.hpp).
struct UdpPortFilter {
    uint16_t port;
    bool operator()(const uint8_t* frame, size_t len) const {
        return locate_udp_payload(frame, len, port, 0, {.verify = false}).verdict !=
               UdpVerdict::not_mine;
    }
};

}  // namespace linerate::pkt
