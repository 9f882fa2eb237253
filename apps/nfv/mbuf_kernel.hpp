#pragma once
// nfv's step on one mbuf, for forward_loop: CheckIPHeader's verdict; a valid frame is trimmed to
// its L2 header + IP total length (Ethernet padding removed, as Click does) and MAC-swapped.
#include <rte_mbuf.h>

#include "check_ip_header.hpp"
#include "first_bad_log.hpp"
#include "pkt/headers.hpp"
#include "runtime/forward_loop.hpp"

namespace linerate::nfv {

// Verdict value == drop reason index on the board; ok takes the place of "tx full" (index 0),
// which is what the kernel returns to transmit.
static_assert(static_cast<unsigned>(Verdict::ok) == kTransmit);
static_assert(static_cast<unsigned>(Verdict::ok) == kTxFullReason);

// kMacSwap is a template parameter so the per-packet path has no test for it.
template <bool kMacSwap>
class MbufKernel {
  public:
    // `log` is null unless --verbose.
    MbufKernel(const CheckIpHeader& check, FirstBadLog* log) : check_(check), log_(log) {}

    unsigned operator()(rte_mbuf* m) const {
        uint8_t* frame = rte_pktmbuf_mtod(m, uint8_t*);
        // The ports do not enable scattered RX: a frame is one segment.
        const uint32_t len = rte_pktmbuf_data_len(m);
        const Result r = check_.check(frame, len);
        if (r.verdict != Verdict::ok) [[unlikely]] {
            if (log_) log_->record(r.verdict, frame, len);
            return static_cast<unsigned>(r.verdict);
        }
        if (r.out_len < len) rte_pktmbuf_trim(m, uint16_t(len - r.out_len));
        // A valid frame holds Ethernet + IPv4 headers: at least 34 bytes, so the wide swap fits.
        if constexpr (kMacSwap) pkt::swap_macs_wide(frame);
        return kTransmit;
    }

  private:
    const CheckIpHeader& check_;
    FirstBadLog* log_;
};

}  // namespace linerate::nfv
