#include "kvagg/kv_wire.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "pkt/checksum.hpp"
#include "pkt/udp_payload.hpp"

namespace linerate::kvagg {

using namespace linerate::pkt;

namespace {

// Where a kvagg app header is, once the headers are walked and the lengths checked.
struct KvLocated {
    KvVerdict verdict = KvVerdict::ok;  // ok: the magic and version are right, op unchecked
    const uint8_t* app = nullptr;
    size_t app_len = 0;  // UDP payload bytes
    size_t l3_offset = 0;
    bool udp_checksum_offloaded = false;  // accepted, left to the sender's TX offload
};

KvLocated locate_kv(const uint8_t* frame, size_t len, uint16_t udp_port,
                    ChecksumCheck checksums = {}) {
    const UdpPayload u = locate_udp_payload(frame, len, udp_port, kKvHeaderLen, checksums);
    if (!u.accepted()) return {.verdict = kKvUdpReasons.of(u.verdict)};
    if (load_be16(u.data + kKvMagicOff) != kKvMagic) return {.verdict = KvVerdict::bad_magic};
    if (u.data[kKvVersionOff] != kKvVersion) return {.verdict = KvVerdict::bad_version};
    return {.app = u.data,
            .app_len = u.len,
            .l3_offset = u.l3_offset,
            .udp_checksum_offloaded = u.verdict == UdpVerdict::offloaded};
}

// A request's own checks: count, body length and flags for its op.
KvVerdict check_request(const KvRequest& r, size_t body_len) {
    switch (r.op) {
        case kKvOpRead:
            if (r.count == 0 || r.flags != 0 || body_len < size_t(r.count) * 8) break;
            return KvVerdict::request;
        case kKvOpStatus:
            if (r.count != 0 || r.flags != 0) break;
            return KvVerdict::request;
        case kKvOpFlush:
            if (r.count > 1 || (r.flags & ~kKvFlushReset) || body_len < size_t(r.count) * 16 ||
                r.range_lo() > r.range_hi())
                break;
            return KvVerdict::request;
        default:
            return KvVerdict::bad_op;
    }
    return KvVerdict::bad_request;
}

bool is_request_op(uint8_t op) {
    return op == kKvOpRead || op == kKvOpStatus || op == kKvOpFlush;
}

}  // namespace

bool ListenAddrs::admits_any(const uint8_t* frame, size_t len) const {
    const L2Header l2 = parse_l2(frame, len);
    const uint32_t dst = load_be32(frame + l2.length + 16);
    return std::find(addrs.begin(), addrs.begin() + count, dst) != addrs.begin() + count;
}

uint32_t kv_frame_source_any(const uint8_t* frame, size_t len) {
    return load_be32(frame + parse_l2(frame, len).length + 12);
}

KvPacket parse_kv_packet_general(const uint8_t* frame, size_t len, uint16_t udp_port,
                                 ChecksumCheck checksums) {
    const KvLocated l = locate_kv(frame, len, udp_port, checksums);
    if (l.verdict != KvVerdict::ok) return {.verdict = l.verdict};
    const uint8_t op = l.app[kKvOpOff];
    if (op != kKvOpSum) {
        if (!is_request_op(op)) return {.verdict = KvVerdict::bad_op};
        return {.verdict = parse_kv_request(frame, len, udp_port).verdict};
    }
    const uint16_t n = load_be16(l.app + kKvCountOff);
    if (l.app_len - kKvHeaderLen < size_t(n) * kKvTupleLen)
        return {.verdict = KvVerdict::malformed};
    KvPacket p = kv_accepted(l.app, n);
    p.udp_checksum_offloaded = l.udp_checksum_offloaded;
    return p;
}

KvRequest parse_kv_request(const uint8_t* frame, size_t len, uint16_t udp_port) {
    const KvLocated l = locate_kv(frame, len, udp_port);
    KvRequest r;
    r.verdict = l.verdict;
    if (l.verdict != KvVerdict::ok) return r;
    r.op = l.app[kKvOpOff];
    r.l3_offset = l.l3_offset;
    r.app_offset = size_t(l.app - frame);
    r.app_len = l.app_len;
    if (r.op == kKvOpSum) {
        r.verdict = parse_kv_packet_general(frame, len, udp_port).verdict;
        return r;
    }
    r.count = load_be16(l.app + kKvCountOff);
    r.stream = load_be32(l.app + kKvStreamOff);
    r.seq = load_be64(l.app + kKvSeqOff);
    r.flags = load_be32(l.app + kKvReservedOff);
    r.body = l.app + kKvHeaderLen;
    r.verdict = check_request(r, l.app_len - kKvHeaderLen);
    return r;
}

void start_kv_response(uint8_t* out, const uint8_t* request, const KvRequest& r) {
    std::memcpy(out, request, r.app_offset);
    lr_swap_macs(out, out + r.app_offset);
    uint8_t* ip = out + r.l3_offset;
    uint8_t* udp = out + r.app_offset - kUdpHdrLen;
    for (size_t i = 0; i < 4; ++i) std::swap(ip[12 + i], ip[16 + i]);
    std::swap(udp[0], udp[2]);
    std::swap(udp[1], udp[3]);
    store_be16(ip + 4, 0);       // identification
    store_be16(ip + 6, 0x4000);  // DF, no fragment
    ip[8] = 64;                  // TTL
}

void finish_kv_response(uint8_t* frame, const KvRequest& r, size_t frame_len) {
    uint8_t* ip = frame + r.l3_offset;
    uint8_t* udp = frame + r.app_offset - kUdpHdrLen;
    const size_t udp_len = frame_len - (r.app_offset - kUdpHdrLen);
    store_be16(ip + 2, uint16_t(frame_len - r.l3_offset));
    fix_ipv4_checksum(ip);
    store_be16(udp + 4, uint16_t(udp_len));
    store_be16(udp + 6, 0);
    // Pseudo-header: addresses, protocol, UDP length; then the datagram.
    uint32_t seed = ones_complement_sum(ip + 12, 8) + kIpProtoUdp + uint32_t(udp_len);
    uint16_t sum = internet_checksum(udp, udp_len, seed);
    store_be16(udp + 6, sum == 0 ? 0xFFFF : sum);  // 0 means "no checksum" in IPv4
}

void write_kv_header(uint8_t* app, const KvHeader& h) {
    store_be16(app + kKvMagicOff, h.magic);
    app[kKvVersionOff] = h.version;
    app[kKvOpOff] = h.op;
    store_be16(app + kKvCountOff, h.tuple_count);
    store_be32(app + kKvStreamOff, h.stream);
    store_be64(app + kKvSeqOff, h.seq);
    store_be32(app + kKvReservedOff, 0);
}

void write_kv_tuples(uint8_t* dst, std::span<const KvTuple> tuples) {
    for (const KvTuple& t : tuples) {
        store_be64(dst, t.key);
        store_be64(dst + 8, t.value);
        dst += kKvTupleLen;
    }
}

size_t write_kv_frame(uint8_t* frame, const UdpFrameSpec& spec, uint32_t stream, uint64_t seq,
                      std::span<const KvTuple> tuples) {
    const size_t len = kv_frame_len(tuples.size());
    // write_udp_headers clamps the IPv4 total length at 0xFFFF; refuse rather than lie.
    if (tuples.size() > 0xFFFF || len - kEthHdrLen > 0xFFFF)
        throw std::invalid_argument("kvagg frame too long for IPv4");
    write_udp_headers(frame, len, spec);
    write_kv_header(frame + kKvHeaderOffset,
                    {.tuple_count = uint16_t(tuples.size()), .stream = stream, .seq = seq});
    write_kv_tuples(frame + kKvTuplesOffset, tuples);
    return len;
}

std::vector<uint8_t> make_kv_frame(const UdpFrameSpec& spec, uint32_t stream, uint64_t seq,
                                   std::span<const KvTuple> tuples) {
    std::vector<uint8_t> frame(kv_frame_len(tuples.size()));
    write_kv_frame(frame.data(), spec, stream, seq, tuples);
    return frame;
}

}  // namespace linerate::kvagg
