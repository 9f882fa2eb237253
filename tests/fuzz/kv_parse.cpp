// libFuzzer target: the kvagg parser on arbitrary frames. Under ASan/UBSan it reads only inside
// the frame; the canonical-layout fast path agrees with the general parser; an accepted packet's
// tuples lie inside the frame. Keyed frames (--key): the kernel's trailer check on the frame as
// given and, when the second byte's low bit is set, with a valid trailer written over its last 28
// payload bytes (so the fuzzer reaches what follows the MAC), frame by frame and in a burst
// alike; a request's gate and the error reply it may draw, never larger than the request. The
// unkeyed kernel frame by frame and in a burst alike.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "kvagg/kv_control.hpp"
#include "kvagg/kv_kernel.hpp"
#include "kvagg/kv_wire.hpp"

using namespace linerate::kvagg;

namespace {

const linerate::auth::Key kKey{{0x45, 1, 2, 3}};

void check_parse(const uint8_t* frame, size_t len, uint16_t port) {
    const KvPacket fast = parse_kv_packet(frame, len, port);
    const KvPacket general = parse_kv_packet_general(frame, len, port);
    if (fast.verdict != general.verdict) std::abort();
    if (fast.verdict != KvVerdict::ok) return;
    if (fast.tuple_count != general.tuple_count || fast.stream != general.stream ||
        fast.seq != general.seq || fast.tuples != general.tuples)
        std::abort();
    const uint8_t* end = fast.tuples + size_t(fast.tuple_count) * kKvTupleLen;
    if (fast.tuples < frame || end > frame + len) std::abort();
    volatile uint64_t sum = 0;  // touch every tuple byte: ASan checks the bounds promised
    for (const uint8_t* p = fast.tuples; p != end; ++p) sum = sum + *p;
}

// A valid trailer over the frame's UDP payload, when it has a kvagg header and room for one.
void sign_in_place(std::vector<uint8_t>& f, uint16_t port) {
    const KvRequest r = parse_kv_request(f.data(), f.size(), port);
    if (r.app_offset == 0 || r.app_len < kKvHeaderLen + linerate::auth::kTrailerLen) return;
    static linerate::auth::MessageMac mac(kKey);
    mac.sign(f.data() + r.app_offset, r.app_len - linerate::auth::kTrailerLen);
}

// The keyed kernel frame by frame and in a burst: the same verdicts. Made once (a kernel's
// windows and MAC cost milliseconds to make under ASan, which left 1800 inputs in 5 s): both see
// the same frames in the same order, so their counters stay equal input after input.
struct KernelPair {
    static constexpr AggConfig kAgg{.mode = IndexMode::hash, .max_keys = 64};
    std::vector<AggSlot> m1 = std::vector<AggSlot>(AggTable::slots_for(kAgg)), m2 = m1;
    AggTable t1{m1, kAgg}, t2{m2, kAgg};
    KvKernel<AggTable> one, burst;
    explicit KernelPair(const KvKernelConfig& cfg) : one(t1, cfg), burst(t2, cfg) {}
};

// The unkeyed kernel frame by frame and in a burst (whose one-tuple frames skip the canonical
// parse, KvOneTupleShape): the same verdicts, sums and tuples, with the checksums verified.
void check_plain(const std::vector<uint8_t>& f, uint16_t port) {
    static std::vector<std::unique_ptr<KernelPair>> pairs(2);
    std::unique_ptr<KernelPair>& pair = pairs[port == kKvDefaultPort ? 0 : 1];
    if (!pair || pair->one.config().udp_port != port)
        pair = std::make_unique<KernelPair>(KvKernelConfig{.udp_port = port});
    pair->one.aggregate_frame(f.data(), f.size());
    const FrameRef ref{f.data(), f.size()};
    pair->burst.aggregate_burst({&ref, 1});
    const KvCounters &a = pair->one.counters(), &b = pair->burst.counters();
    if (a.by_verdict != b.by_verdict || a.value_sum != b.value_sum ||
        a.tuples_aggregated != b.tuples_aggregated || a.overflow_sum != b.overflow_sum)
        std::abort();
}

void check_keyed(const std::vector<uint8_t>& f, uint16_t port) {
    static std::vector<std::unique_ptr<KernelPair>> pairs(2);  // the default port, or another
    std::unique_ptr<KernelPair>& pair = pairs[port == kKvDefaultPort ? 0 : 1];
    if (!pair || pair->one.config().udp_port != port) {
        KvKernelConfig cfg{.udp_port = port, .verify_checksums = false};
        cfg.key = kKey;
        pair = std::make_unique<KernelPair>(cfg);
    }
    pair->one.aggregate_frame(f.data(), f.size());
    const FrameRef ref{f.data(), f.size()};
    pair->burst.aggregate_burst({&ref, 1});
    if (pair->one.counters().by_verdict != pair->burst.counters().by_verdict) std::abort();
    const KvRequest r = parse_kv_request(f.data(), f.size(), port);
    if (r.verdict != KvVerdict::request) return;
    pair->one.request_gate(f.data(), r);
    const std::vector<uint8_t> reply = error_response(f.data(), r, kKvErrAuth);
    if (reply.size() != r.app_offset + kKvHeaderLen || kKvHeaderLen > r.app_len) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // The first byte picks the UDP port: mostly the default, so the fuzzer reaches the header;
    // the second whether the frame is signed before the keyed kernel sees it.
    if (size < 2) return 0;
    const uint16_t port = data[0] < 240 ? kKvDefaultPort : uint16_t(9000 + data[0]);
    const bool sign = data[1] & 1;
    std::vector<uint8_t> frame(data + 2, data + size);  // its own allocation: ASan sees its end
    check_parse(frame.data(), frame.size(), port);
    check_plain(frame, port);
    if (sign) sign_in_place(frame, port);
    check_keyed(frame, port);
    return 0;
}
