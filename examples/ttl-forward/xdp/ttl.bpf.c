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

SEC("xdp.frags")
int xsk_def_prog(struct xdp_md* ctx) {
    const struct dp_start start = dp_begin(ctx);
    const __u32 flags = start.flags;
    if (start.route != DP_SLOTS) return dp_finish(ctx, flags, start.route);
    __u8* data = (__u8*)(long)ctx->data;
    const __u8* data_end = (const __u8*)(long)ctx->data_end;
    const enum ttl_verdict v = ttl_decrement(data, data_end);
    if (v != TTL_FORWARD) return dp_finish(ctx, flags, DP_DROP_FIRST + v);
    return dp_finish(ctx, flags, DP_TX);
}
