/* ttl-forward on the XDP datapath: ttl.hpp's decrement_ttl in BPF, on the datapath frame every
 * linerate app's program shares (xdp/datapath/datapath.bpf.h: config, counters, the end of a
 * frame's run) and the one frame walk (pkt/frame_walk.h), both from the installed package; built
 * by linerate_bpf_programs (CMakeLists.txt). An untagged IPv4 frame with its TTL above 1 goes back
 * out (XDP_TX) with the TTL one lower and the header checksum patched (RFC 1624); anything else
 * is dropped and counted by reason, in the order of TTL_FORWARD_DROPS. */
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "pkt/frame_walk.h"
#include "xdp/datapath/datapath.bpf.h"

/* The reasons after DP_DROP_FIRST: TTL_FORWARD_DROPS (ttl.hpp) in its order. */
enum ttl_drop { TTL_NOT_IPV4, TTL_TRUNCATED, TTL_EXPIRED };

/* HC' = ~(~HC + ~m + m') over the 16-bit word holding TTL and protocol: m' = m - 0x0100. */
static __always_inline void ttl_decrement(__u8* ip) {
    const __u32 old_word = (__u32)ip[8] << 8 | ip[9];
    const __u32 new_word = (old_word - 0x0100) & 0xFFFF;
    __u32 sum = (~(__u32)lr_load_be16(ip + 10) & 0xFFFF) + (~old_word & 0xFFFF) + new_word;
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    ip[8] -= 1;
    ip[10] = (__u8)(~sum >> 8);
    ip[11] = (__u8)~sum;
}

SEC("xdp.frags")
int xsk_def_prog(struct xdp_md* ctx) {
    const struct dp_start start = dp_begin(ctx);
    const __u32 flags = start.flags;
    if (start.route != DP_SLOTS) return dp_finish(ctx, flags, start.route);
    __u8* data = (__u8*)(long)ctx->data;
    const __u8* data_end = (const __u8*)(long)ctx->data_end;
    __u16 type = 0;
    if (lr_l3_offset(data, data_end, LR_UNTAGGED_ONLY, &type) == 0)
        return dp_finish(ctx, flags, DP_DROP_FIRST + TTL_TRUNCATED);
    if (type != LR_ETHERTYPE_IPV4) return dp_finish(ctx, flags, DP_DROP_FIRST + TTL_NOT_IPV4);
    __u8* ip = data + LR_ETH_HLEN;
    if (ip + LR_IPV4_MIN_HLEN > data_end)
        return dp_finish(ctx, flags, DP_DROP_FIRST + TTL_TRUNCATED);
    if (ip[8] <= 1) return dp_finish(ctx, flags, DP_DROP_FIRST + TTL_EXPIRED);
    ttl_decrement(ip);
    return dp_finish(ctx, flags, DP_TX);
}
