#pragma once
// The receive time lib/xdp/steer/steer.bpf.c puts ahead of each frame it hands the app when asked
// (STEER_FLAG_RX_STAMP, SteerFilter::rx_stamp): struct steer_rx_stamp in the XDP metadata, which
// the AF_XDP socket copies into the umem chunk right before the frame, and net_af_xdp's mbufs
// are those chunks; with STEER_FLAG_HOOK also the word the app's steering hook put there. Plain
// bytes, no EAL.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include "xdp/steer/steer_abi.h"

namespace linerate::xdp {

// What the steering program put ahead of a frame: its receive time, and (STEER_FLAG_HOOK) the app
// hook's time for it (a request the hook turned: the t1 of the turned request it answers).
// CLOCK_MONOTONIC ns.
struct RxStamp {
    uint64_t rx_ns = 0;
    std::optional<uint64_t> hook_ns;  // none: the hook put nothing
};

// The stamp before `frame` (`headroom` bytes before it belong to its buffer); nullopt when none
// is there. The magic is cleared once read: the chunk's next frame, if it comes without a stamp
// (a driver without XDP metadata), never shows this one's.
inline std::optional<RxStamp> take_rx_stamp(uint8_t* frame, size_t headroom) {
    if (headroom < sizeof(steer_rx_stamp)) return std::nullopt;
    uint8_t* at = frame - sizeof(steer_rx_stamp);
    steer_rx_stamp s;
    std::memcpy(&s, at, sizeof(s));
    if (s.magic != STEER_RX_STAMP_MAGIC || s.zero != 0) return std::nullopt;
    std::memset(at + offsetof(steer_rx_stamp, magic), 0, sizeof(s.magic));
    RxStamp r{s.rx_ns, std::nullopt};
    if (s.hook_ns != 0) r.hook_ns = s.hook_ns;
    return r;
}

}  // namespace linerate::xdp
