#pragma once
// The stamp gen puts in the UDP payload of the frames it expects back (udp kind, and the valid
// frames of nfv-mix): l2reflect and nfv send frames back unchanged except for the MACs, so the
// stamp tells loss, reordering and round-trip time. Offsets from the start of the frame
// (Ethernet II + IPv4 without options + UDP, so the UDP payload starts at 42):
//
//   42  8  sequence number, big-endian: per sending worker, from 0, +1 per stamped frame
//   50  8  TX timestamp, big-endian: the sender's TSC (rte_rdtsc) right before rte_eth_tx_burst;
//          0 in pcaps gen writes
//   58  2  magic 0x4C47 ("LG"): tells stamped frames from anything else that comes back
//
// 18 bytes, so the stamp fits the smallest frame (64 bytes on the wire = 60 bytes + FCS).
// The UDP source port says which flow the frame belongs to (base port + flow index); reordering
// is counted per flow, since only the order within a flow survives RSS.
#include <cstddef>
#include <cstdint>

#include "pkt/bytes.hpp"
#include "pkt/headers.hpp"

namespace linerate::gen {

inline constexpr size_t kStampSeqOffset = pkt::kUdpPayloadOffset;  // 42
inline constexpr size_t kStampTscOffset = kStampSeqOffset + 8;     // 50
inline constexpr size_t kStampMagicOffset = kStampTscOffset + 8;   // 58
inline constexpr size_t kStampEnd = kStampMagicOffset + 2;         // 60
inline constexpr uint16_t kStampMagic = 0x4C47;

inline void write_stamp(uint8_t* frame, uint64_t seq, uint64_t tsc) {
    pkt::store_be64(frame + kStampSeqOffset, seq);
    pkt::store_be64(frame + kStampTscOffset, tsc);
    pkt::store_be16(frame + kStampMagicOffset, kStampMagic);
}

inline void write_stamp_tsc(uint8_t* frame, uint64_t tsc) {
    pkt::store_be64(frame + kStampTscOffset, tsc);
}

struct Stamp {
    bool valid = false;
    uint16_t src_port = 0;
    uint64_t seq = 0;
    uint64_t tsc = 0;
};

// Reads the stamp of a frame that came back: untagged IPv4 without options, UDP, the magic.
inline Stamp read_stamp(const uint8_t* frame, size_t len) {
    Stamp s;
    if (len < kStampEnd || pkt::load_be16(frame + 12) != pkt::kEtherTypeIpv4) return s;
    const uint8_t* ip = frame + pkt::kEthHdrLen;
    if (ip[0] != 0x45 || ip[9] != pkt::kIpProtoUdp) return s;
    if (pkt::load_be16(frame + kStampMagicOffset) != kStampMagic) return s;
    s.valid = true;
    s.src_port = pkt::load_be16(ip + pkt::kIpv4MinHdrLen);
    s.seq = pkt::load_be64(frame + kStampSeqOffset);
    s.tsc = pkt::load_be64(frame + kStampTscOffset);
    return s;
}

}  // namespace linerate::gen
