#include "gen/nfv_mix.hpp"

#include "pkt/build.hpp"
#include "pkt/checksum.hpp"
#include "pkt/headers.hpp"

namespace linerate::gen {

using namespace linerate::pkt;

const char* frame_class_name(FrameClass c) {
    switch (c) {
        case FrameClass::normal:
            return "normal";
#define LINERATE_GEN_X(id, opt, verdict) \
    case FrameClass::id:                 \
        return #id;
            LINERATE_GEN_BAD_CLASSES(LINERATE_GEN_X)
#undef LINERATE_GEN_X
        case FrameClass::kv_duplicate:
            return "kv_duplicate";
        case FrameClass::kv_malformed:
            return "kv_malformed";
    }
    return "?";
}

namespace {

// Checksum over the 20-byte base header whatever IHL says, so only the field under test is off.
void fix_base_checksum(uint8_t* ip) {
    store_be16(ip + 10, 0);
    store_be16(ip + 10, internet_checksum(ip, kIpv4MinHdrLen));
}

}  // namespace

size_t make_bad(uint8_t* frame, size_t len, FrameClass c, Rng& rng) {
    uint8_t* ip = frame + kEthHdrLen;
    const size_t plen = len - kEthHdrLen;
    switch (c) {
        case FrameClass::tiny:
            // Ends inside the IPv4 header (0..19 bytes of it). A NIC pads such a frame to 60
            // bytes on the wire, so tiny frames exist only on virtual links and in pcaps.
            return kEthHdrLen + size_t(rng.below(kIpv4MinHdrLen));
        case FrameClass::bad_version: {
            auto v = uint8_t(rng.below(15));
            if (v >= 4) ++v;
            ip[0] = uint8_t(v << 4 | 5);
            fix_base_checksum(ip);
            return len;
        }
        case FrameClass::bad_ihl:
            ip[0] = uint8_t(0x40 | rng.below(5));  // IHL 0..4: shorter than the fixed header
            fix_base_checksum(ip);
            return len;
        case FrameClass::bad_length: {
            // Longer than the frame holds, or shorter than the header; both are Click's check.
            uint64_t total = rng.next() & 1 ? plen + 1 + rng.below(1000) : rng.below(20);
            if (total > 0xFFFF) total = 0xFFFF;
            store_be16(ip + 2, uint16_t(total));
            fix_base_checksum(ip);
            return len;
        }
        case FrameClass::bad_checksum: {
            // XOR with 1..0xFFFE: never lands on the other zero (0x0000 <-> 0xFFFF), which would
            // still verify in one's complement.
            const auto mask = uint16_t(1 + rng.below(0xFFFE));
            store_be16(ip + 10, uint16_t(load_be16(ip + 10) ^ mask));
            return len;
        }
        case FrameClass::bad_source:
            store_be32(ip + 12, rng.next() & 1 ? 0xFFFFFFFFu : 0u);  // RFC 1812 5.3.7 defaults
            fix_base_checksum(ip);
            return len;
        case FrameClass::not_ipv4:
            store_be16(frame + 12, kNotIpv4Ethertype);
            return len;
        default:
            return len;
    }
}

}  // namespace linerate::gen
