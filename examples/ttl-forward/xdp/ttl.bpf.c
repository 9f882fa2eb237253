/* ttl-forward on the XDP datapath: the kernel the C++ path runs (../ttl_decrement.h, on the one
 * frame walk, pkt/frame_walk.h), on the datapath frame every linerate app's program shares
 * (xdp/datapath/datapath.bpf.h: config, counters, the end of a frame's run), both from the
 * installed package; built by linerate_bpf_programs (CMakeLists.txt). An untagged IPv4 frame
 * with its TTL above 1 goes back out (XDP_TX) with the TTL one lower and the header checksum
 * patched (RFC 1624); anything else is dropped and counted by reason, in the order of
 * TTL_FORWARD_DROPS. */
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "../ttl_decrement.h"
#include "xdp/datapath/datapath.bpf.h"

static __always_inline int ttl_kernel(struct xdp_md* ctx, __u32 flags, __u8* data,
                                      const __u8* data_end) {
    const enum ttl_verdict v = ttl_decrement(data, data_end);
    if (v != TTL_FORWARD) return dp_finish(ctx, flags, DP_DROP_FIRST + v);
    return dp_finish(ctx, flags, DP_TX);
}

SEC("xdp.frags")
int xsk_def_prog(struct xdp_md* ctx) {
    return dp_run(ctx, ttl_kernel);
}
