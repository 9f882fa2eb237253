// libFuzzer target: CheckIPHeader on arbitrary frames. Under ASan/UBSan no configuration may read
// outside the frame, and the inline fast path must give Click's full check's answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "nfv/check_ip_header.hpp"

using namespace linerate::nfv;

namespace {

const CheckIpHeader& checker(unsigned which) {
    static const CheckIpHeader checkers[] = {
        CheckIpHeader(),
        CheckIpHeader(Config{.verify_checksum = false}),
        CheckIpHeader(Config{.pass_non_ip = true}),
        // Not the default list: the fast path's filter instead of its 0/~0 test.
        CheckIpHeader(Config{.bad_src = {0, 0xFFFFFFFF, 0x0A000001}, .good_dst = {0x0A000002}}),
    };
    return checkers[which % 4];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const CheckIpHeader& c = checker(data[0]);
    const uint8_t* frame = data + 1;
    const size_t len = size - 1;
    const Result fast = c.check(frame, len), full = c.check_full(frame, len);
    if (fast.verdict != full.verdict || fast.out_len != full.out_len) std::abort();
    if (full.verdict == Verdict::ok && full.out_len > len) std::abort();  // trims, never grows
    return 0;
}
