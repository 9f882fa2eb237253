#include "kvagg/kv_wire.hpp"

#include <stdexcept>

namespace linerate::kvagg {

using namespace linerate::pkt;

namespace {}  // namespace

KvPacket parse_kv_packet_general(const uint8_t* frame, size_t len, uint16_t udp_port) {
    KvPacket p;
    auto bad = [&p](KvVerdict v) {
        p.verdict = v;
        return p;
    };
    const L2Header l2 = parse_l2(frame, len);
    if (!l2.complete) return bad(KvVerdict::malformed);
    if (l2.ethertype != kEtherTypeIpv4) return bad(KvVerdict::not_kvagg);

    const size_t l3_room = len - l2.length;
    if (l3_room < kIpv4MinHdrLen) return bad(KvVerdict::malformed);
    const Ipv4View ip{frame + l2.length};
    const size_t ihl = ip.header_len();
    const size_t total = ip.total_len();
    // total < room is fine: Ethernet pads short frames.
    if (ip.version() != 4 || ihl < kIpv4MinHdrLen || total < ihl || total > l3_room)
        return bad(KvVerdict::malformed);
    if (ip.protocol() != kIpProtoUdp) return bad(KvVerdict::not_kvagg);
    const uint16_t frag = load_be16(ip.ip + 6);
    // A non-first fragment carries no UDP header: nothing says it is ours.
    if ((frag & 0x1FFF) != 0) return bad(KvVerdict::not_kvagg);
    if (total < ihl + kUdpHdrLen) return bad(KvVerdict::malformed);

    const UdpView udp{ip.ip + ihl};
    if (udp.dst_port() != udp_port) return bad(KvVerdict::not_kvagg);
    // A first fragment (MF set) of a kvagg datagram: we do not reassemble.
    if (frag & 0x2000) return bad(KvVerdict::malformed);
    const size_t udp_len = udp.length();
    if (udp_len < kUdpHdrLen + kKvHeaderLen || udp_len > total - ihl)
        return bad(KvVerdict::malformed);

    const uint8_t* app = udp.udp + kUdpHdrLen;
    if (load_be16(app + kKvMagicOff) != kKvMagic) return bad(KvVerdict::bad_magic);
    if (app[kKvVersionOff] != kKvVersion) return bad(KvVerdict::bad_version);
    if (app[kKvOpOff] != kKvOpSum) return bad(KvVerdict::bad_op);
    const uint16_t n = load_be16(app + kKvCountOff);
    if (udp_len - kUdpHdrLen - kKvHeaderLen < size_t(n) * kKvTupleLen)
        return bad(KvVerdict::malformed);

    return kv_accepted(app, n);
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
