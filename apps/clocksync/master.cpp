#include "clocksync/master.hpp"

namespace linerate::clocksync {

CsPacket answer_request(uint8_t* frame, size_t len, uint64_t t2, uint64_t t3, uint16_t udp_port,
                        pkt::ChecksumCheck checksums, auth::MessageMac* mac) {
    return answer_parsed(frame, parse_cs_packet(frame, len, udp_port, checksums, mac), t2, t3);
}

CsPacket answer_parsed(uint8_t* frame, CsPacket p, uint64_t t2, uint64_t t3) {
    if (!p.ok) return p;
    if (p.type == CsType::warmup && (p.reserved & kCsFlagEcho)) {
        make_warmup_echo(frame, p);
        p.type = CsType::warmup_echo;
        return p;
    }
    if (p.type != CsType::request) {
        p.ok = false;
        p.drop = p.type == CsType::warmup ? Drop::warmup : Drop::bad_type;
        return p;
    }
    make_response(frame, p, t2, t3);
    p.type = CsType::response;  // describe the frame as it now is
    p.t2 = t2;
    p.t3 = t3;
    return p;
}

}  // namespace linerate::clocksync
