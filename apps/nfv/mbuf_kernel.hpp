#pragma once
// nfv's step on one mbuf, for forward_loop: CheckIPHeader's verdict; a valid frame is trimmed to
// its L2 header + IP total length (Ethernet padding removed, as Click does) and MAC-swapped.
#include <rte_mbuf.h>

#include <utility>

#include "check_ip_header.hpp"
#include "first_bad_log.hpp"
#include "pkt/headers.hpp"
#include "runtime/forward_loop.hpp"

namespace linerate::nfv {

// Verdict value == drop reason index on the board; ok takes the place of "tx full" (index 0),
// which is what the kernel returns to transmit.
static_assert(static_cast<unsigned>(Verdict::ok) == kTransmit);
static_assert(static_cast<unsigned>(Verdict::ok) == kTxFullReason);

// The options the per-frame path would otherwise test for every frame are template parameters:
// kMacSwap (--no-mac-swap) and the check's compile-time choices (see CheckIpHeader::check_fast).
template <bool kMacSwap, bool kChecksum, SourceTest kSource>
class MbufKernel {
  public:
    // `log` is null unless --verbose. `check` must have been configured for kChecksum/kSource:
    // with_mbuf_kernel() picks the instance that matches.
    MbufKernel(const CheckIpHeader& check, FirstBadLog* log) : check_(check), log_(log) {}

    unsigned operator()(rte_mbuf* m) {
        uint8_t* frame = rte_pktmbuf_mtod(m, uint8_t*);
        // The ports do not enable scattered RX: a frame is one segment.
        const uint32_t len = rte_pktmbuf_data_len(m);
        const Result r = check_.check_fast<kChecksum, kSource>(frame, len);
        if (r.verdict != Verdict::ok) [[unlikely]] {
            if (log_) log_->record(r.verdict, frame, len);
            return static_cast<unsigned>(r.verdict);
        }
        if (r.out_len < len) {
            trimmed_bytes_ += len - r.out_len;
            rte_pktmbuf_trim(m, uint16_t(len - r.out_len));
        }
        // A valid frame holds Ethernet + IPv4 headers: at least 34 bytes, so the wide swap fits.
        if constexpr (kMacSwap) pkt::swap_macs_wide(frame);
        return kTransmit;
    }

    // forward_loop's TrimmingKernel hook: bytes cut from transmitted frames since the last call.
    uint64_t take_trimmed_bytes() { return std::exchange(trimmed_bytes_, 0); }

  private:
    // A copy, not a reference: the kernel's own address reaches it, so the per-frame path loads
    // no pointer (stores into frames may alias anything reached through one).
    const CheckIpHeader check_;
    FirstBadLog* log_;
    uint64_t trimmed_bytes_ = 0;
};

// Calls fn(kernel) with the MbufKernel instance that matches `check` and `mac_swap`.
template <class Fn>
void with_mbuf_kernel(const CheckIpHeader& check, FirstBadLog* log, bool mac_swap, Fn&& fn) {
    auto pick_source = [&]<bool kSwap, bool kSum>() {
        if (check.source_test() == SourceTest::rfc1812) {
            MbufKernel<kSwap, kSum, SourceTest::rfc1812> kernel(check, log);
            fn(kernel);
        } else {
            MbufKernel<kSwap, kSum, SourceTest::filter> kernel(check, log);
            fn(kernel);
        }
    };
    auto pick_checksum = [&]<bool kSwap>() {
        if (check.verify_checksum())
            pick_source.template operator()<kSwap, true>();
        else
            pick_source.template operator()<kSwap, false>();
    };
    if (mac_swap)
        pick_checksum.template operator()<true>();
    else
        pick_checksum.template operator()<false>();
}

}  // namespace linerate::nfv
