#include "clocksync/cs_wire.hpp"

#include <algorithm>
#include <numeric>

#include "pkt/bytes.hpp"
#include "pkt/checksum.hpp"
#include "pkt/udp_payload.hpp"

namespace linerate::clocksync {

using namespace linerate::pkt;

uint64_t DropCounters::total() const {
    return std::accumulate(count.begin(), count.end(), uint64_t(0));
}

namespace {

constexpr UdpReasons<Drop> kCsUdpReasons{Drop::not_clocksync, Drop::malformed,
                                         Drop::bad_ip_checksum, Drop::bad_udp_checksum};

}  // namespace

CsPacket parse_cs_packet(const uint8_t* frame, size_t len, uint16_t udp_port,
                         ChecksumCheck checksums, auth::MessageMac* mac) {
    CsPacket p;
    const UdpPayload u = locate_udp_payload(frame, len, udp_port, kCsHeaderLen, checksums);
    if (!u.accepted()) {
        p.drop = kCsUdpReasons.of(u.verdict);
        return p;
    }
    p.udp_checksum_offloaded = u.verdict == UdpVerdict::offloaded;
    const uint8_t* cs = u.data;
    auto dropped = [&p](Drop d) {
        p.drop = d;
        return p;
    };
    // With a key, nothing of the message counts before its tag is the key's.
    if (mac && (u.len < kCsHeaderLen + auth::kTrailerLen || !mac->verify(cs, u.len)))
        return dropped(Drop::bad_auth);
    if (load_be16(cs + kCsOffMagic) != kCsMagic) return dropped(Drop::bad_magic);
    if (cs[kCsOffVersion] != kCsVersion) return dropped(Drop::bad_version);
    uint8_t type = cs[kCsOffType];
    if (type < uint8_t(CsType::request) || type > uint8_t(CsType::warmup_echo))
        return dropped(Drop::bad_type);
    p.ok = true;
    p.type = CsType(type);
    p.l3_offset = u.l3_offset;
    p.payload_offset = uint16_t(cs - frame);
    p.payload_len = uint16_t(u.len);
    p.reserved = load_be16(cs + kCsOffReserved);
    p.client_id = load_be32(cs + kCsOffClientId);
    p.seq = load_be64(cs + kCsOffSeq);
    p.t1 = load_be64(cs + kCsOffT1);
    p.t2 = load_be64(cs + kCsOffT2);
    p.t3 = load_be64(cs + kCsOffT3);
    return p;
}

size_t build_request(uint8_t* frame, size_t cap, const UdpFrameSpec& spec, uint32_t client_id,
                     uint64_t seq, uint64_t t1, size_t trailer) {
    const size_t len = kCsFrameLen + trailer;
    if (cap < len) return 0;
    write_udp_headers(frame, len, spec);
    uint8_t* cs = frame + kUdpPayloadOffset;
    store_be16(cs + kCsOffMagic, kCsMagic);
    cs[kCsOffVersion] = kCsVersion;
    cs[kCsOffType] = uint8_t(CsType::request);
    store_be16(cs + kCsOffReserved, 0);
    store_be32(cs + kCsOffClientId, client_id);
    store_be64(cs + kCsOffSeq, seq);
    store_be64(cs + kCsOffT1, t1);
    store_be64(cs + kCsOffT2, 0);
    store_be64(cs + kCsOffT3, 0);
    std::fill_n(cs + kCsHeaderLen, trailer, uint8_t(0));
    return len;
}

size_t build_warmup(uint8_t* frame, size_t cap, const UdpFrameSpec& spec, uint32_t client_id,
                    bool echo, size_t trailer) {
    const size_t len = build_request(frame, cap, spec, client_id, 0, 0, trailer);
    if (!len) return 0;
    uint8_t* cs = frame + kUdpPayloadOffset;
    cs[kCsOffType] = uint8_t(CsType::warmup);
    store_be16(cs + kCsOffReserved, echo ? kCsFlagEcho : 0);
    return len;
}

size_t build_turn_trigger(uint8_t* frame, size_t cap, const UdpFrameSpec& spec, uint32_t client_id,
                          uint64_t seq) {
    const size_t len = build_warmup(frame, cap, spec, client_id, true);
    if (!len) return 0;
    uint8_t* cs = frame + kUdpPayloadOffset;
    store_be16(cs + kCsOffReserved, kCsFlagEcho | kCsFlagTurn);
    store_be64(cs + kCsOffSeq, seq);
    return len;
}

namespace {

// The frame sent back whence it came, as `type`: MACs, IPs, UDP ports swapped, UDP checksum 0.
// Swapping two 16-bit-aligned words keeps the IPv4 checksum valid (the sum commutes).
uint8_t* turn_around(uint8_t* frame, const CsPacket& p, CsType type) {
    lr_swap_macs(frame, frame + p.payload_offset);
    uint8_t* ip = frame + p.l3_offset;
    std::swap_ranges(ip + 12, ip + 16, ip + 16);
    uint8_t* udp = frame + p.payload_offset - kUdpHdrLen;
    std::swap_ranges(udp, udp + 2, udp + 2);
    store_be16(udp + 6, 0);
    uint8_t* cs = frame + p.payload_offset;
    cs[kCsOffType] = uint8_t(type);
    return cs;
}

}  // namespace

void make_response(uint8_t* frame, const CsPacket& p, uint64_t t2, uint64_t t3) {
    uint8_t* cs = turn_around(frame, p, CsType::response);
    store_be64(cs + kCsOffT2, t2);
    store_be64(cs + kCsOffT3, t3);
}

void make_warmup_echo(uint8_t* frame, const CsPacket& p) {
    turn_around(frame, p, CsType::warmup_echo);
}

}  // namespace linerate::clocksync
