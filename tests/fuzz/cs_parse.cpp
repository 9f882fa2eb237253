// libFuzzer target: the clocksync parser and the master's response (or warm-up echo) on arbitrary
// frames, unkeyed and keyed (--key: the trailer verified, the answer signed in place; the first
// input byte picks whether a keyed frame is made valid by signing it first). Under ASan/UBSan
// neither reads nor writes outside the frame.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "clocksync/cs_wire.hpp"

using namespace linerate::clocksync;

namespace {

linerate::auth::MessageMac& fuzz_mac() {
    static linerate::auth::MessageMac mac(linerate::auth::Key{});
    return mac;
}

// The master's way with a frame: parsed (verified with `mac`), answered, with a key signed.
void answer(std::vector<uint8_t>& frame, linerate::auth::MessageMac* mac) {
    const CsPacket p = parse_cs_packet(frame.data(), frame.size(), kCsUdpPort, {}, mac);
    if (p.ok && p.type == CsType::request) make_response(frame.data(), p, 1, 2);
    if (p.ok && p.type == CsType::warmup && (p.reserved & kCsFlagEcho))
        make_warmup_echo(frame.data(), p);
    if (p.ok && mac && (p.type == CsType::request || p.type == CsType::warmup))
        sign_answer(*mac, frame.data(), p);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<uint8_t> frame(data, data + size);  // make_response writes into it
    answer(frame, nullptr);
    frame.assign(data, data + size);
    // Keyed: a frame whose datagram passes the unkeyed parse gets a valid trailer over what
    // precedes its trailer, so the fuzzer reaches past the MAC check too.
    const CsPacket plain =
        parse_cs_packet(frame.data(), frame.size(), kCsUdpPort, {.verify = false});
    if (size > 0 && (data[0] & 1) && plain.ok &&
        plain.payload_len >= kCsHeaderLen + linerate::auth::kTrailerLen)
        fuzz_mac().sign(frame.data() + plain.payload_offset,
                        plain.payload_len - linerate::auth::kTrailerLen);
    answer(frame, &fuzz_mac());
    return 0;
}
