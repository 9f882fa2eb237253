// libFuzzer target: the kvagg parser on arbitrary frames. Under ASan/UBSan it reads only inside
// the frame; the canonical-layout fast path agrees with the general parser; an accepted packet's
// tuples lie inside the frame.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "kvagg/kv_wire.hpp"

using namespace linerate::kvagg;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // The first byte picks the UDP port: mostly the default, so the fuzzer reaches the header.
    if (size == 0) return 0;
    const uint16_t port = data[0] < 240 ? kKvDefaultPort : uint16_t(9000 + data[0]);
    const uint8_t* frame = data + 1;
    const size_t len = size - 1;
    const KvPacket fast = parse_kv_packet(frame, len, port);
    const KvPacket general = parse_kv_packet_general(frame, len, port);
    if (fast.verdict != general.verdict) std::abort();
    if (fast.verdict != KvVerdict::ok) return 0;
    if (fast.tuple_count != general.tuple_count || fast.stream != general.stream ||
        fast.seq != general.seq || fast.tuples != general.tuples)
        std::abort();
    const uint8_t* end = fast.tuples + size_t(fast.tuple_count) * kKvTupleLen;
    if (fast.tuples < frame || end > frame + len) std::abort();
    uint64_t sum = 0;  // touch every tuple byte: ASan checks the bounds the parser promised
    for (const uint8_t* p = fast.tuples; p != end; ++p) sum += *p;
    return int(sum & 0);
}
