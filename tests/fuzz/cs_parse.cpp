// libFuzzer target: the clocksync parser and the master's response (or warm-up echo) on arbitrary
// frames. Under ASan/UBSan neither reads nor writes outside the frame.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "clocksync/cs_wire.hpp"

using namespace linerate::clocksync;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<uint8_t> frame(data, data + size);  // make_response writes into it
    const CsPacket p = parse_cs_packet(frame.data(), frame.size());
    if (p.ok && p.type == CsType::request) make_response(frame.data(), p, 1, 2);
    if (p.ok && p.type == CsType::warmup && (p.reserved & kCsFlagEcho))
        make_warmup_echo(frame.data(), p);
    return 0;
}
