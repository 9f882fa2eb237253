#pragma once
// nfv's step on one mbuf, for forward_loop: CheckIPHeader's verdict; a valid frame is trimmed to
// its L2 header + IP total length (Ethernet padding removed, as Click does) and MAC-swapped.
// A frame on a chain of segments (jumbo frames) gets the same verdict and trim, across segments.
#include <rte_mbuf.h>

#include <algorithm>
#include <utility>

#include "nfv/check_ip_header.hpp"
#include "nfv/first_bad_log.hpp"
#include "pkt/headers.hpp"
#include "pkt/mac_swap.h"
#include "runtime/forward_loop.hpp"
#include "runtime/mbuf_frame.hpp"

namespace linerate::nfv {

// The most header bytes the check reads: Ethernet with two tags, an IPv4 header with options.
inline constexpr uint32_t kMaxCheckedHeader = pkt::kEthHdrLen + 2 * pkt::kVlanTagLen + 60;

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
        if (m->nb_segs != 1) [[unlikely]]
            return chained(m, frame);
        const uint16_t len = rte_pktmbuf_data_len(m);
        const FastTests t = check_.fast_tests<kChecksum, kSource>(frame, len);
        // The common case on its own path: nothing to trim, and the swap's length test folds
        // (len >= 34 there).
        if (t == FastTests::valid_unpadded) [[likely]] {
            if constexpr (kMacSwap) lr_swap_macs(frame, frame + len);
            return kTransmit;
        }
        return not_unpadded(m, frame, len, check_.check_rest(frame, len, t));
    }

    // forward_loop's TrimmingKernel hook: bytes cut from transmitted frames since the last call.
    uint64_t take_trimmed_bytes() { return std::exchange(trimmed_bytes_, 0); }

  private:
    // A frame in one segment that is not valid_unpadded: dropped, or trimmed to its datagram.
    unsigned not_unpadded(rte_mbuf* m, uint8_t* frame, uint16_t len, Result r) {
        if (r.verdict != Verdict::ok) [[unlikely]] {
            if (log_) log_->record(r.verdict, frame, len);
            return stats::drop_slot(r.verdict);
        }
        if (r.out_len < len) {
            trimmed_bytes_ += len - r.out_len;
            rte_pktmbuf_trim(m, uint16_t(len - r.out_len));
        }
        // lib/pkt/mac_swap.h's swap, as the XDP program does it.
        if constexpr (kMacSwap) lr_swap_macs(frame, frame + r.out_len);
        return kTransmit;
    }

    // The whole check (chains are rare) on the frame's length; it reads only headers, which lie
    // in the first segment.
    [[gnu::noinline, gnu::cold]] unsigned chained(rte_mbuf* m, uint8_t* frame) {
        const uint32_t len = rte_pktmbuf_pkt_len(m);
        const uint32_t first = rte_pktmbuf_data_len(m);
        if (first < std::min(len, kMaxCheckedHeader)) return stats::drop_slot(Drop::split_header);
        const Result r = check_.check_full(frame, len);
        if (r.verdict != Verdict::ok) {
            if (log_) log_->record(r.verdict, frame, first);
            return stats::drop_slot(r.verdict);
        }
        if (r.out_len < len) {
            trimmed_bytes_ += len - r.out_len;
            truncate_frame(m, r.out_len);
        }
        if constexpr (kMacSwap) lr_swap_macs(frame, frame + first);
        return kTransmit;
    }

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
