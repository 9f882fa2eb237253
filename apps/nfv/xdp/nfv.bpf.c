/* nfv on the XDP datapath: Click's CheckIPHeader (apps/nfv/xdp/check_ipv4.h, the check the C++
 * kernel compiles too) on every frame. Valid: trimmed to the IP length and MAC-swapped (per the
 * config), XDP_TX. Invalid: XDP_DROP, counted by reason. Not IPv4: XDP_PASS to the kernel. A
 * multi-buffer frame: to the slow path (the DPDK kernel behind the queue's AF_XDP socket); a frame
 * the app does not serve (dp_config.serve), to the kernel. */
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "nfv/xdp/check_ipv4.h"
#include "nfv/xdp/nfv_abi.h"
#include "pkt/mac_swap.h"
#include "xdp/datapath/datapath.bpf.h"

LR_BPF_MAP(nfv_bad_src, BPF_MAP_TYPE_HASH, NFV_MAX_ADDRESSES, __u8);
LR_BPF_MAP(nfv_good_dst, BPF_MAP_TYPE_HASH, NFV_MAX_ADDRESSES, __u8);

/* Whether `src` may be in the bad-source set, by the filter `f` (null: it may). In 64 bits, so
 * that a source below clear_first wraps far above the span with no 32-bit truncation. */
static __always_inline int nfv_maybe_bad(const struct nfv_src_filter* f, __u32 src) {
    if (!f) return 1;
    if ((__u64)src - f->clear_first <= f->clear_span) return 0;
    const __u32 bit = nfv_src_filter_bit(src);
    return (f->bits[bit / 64] >> (bit % 64)) & 1;
}

/* The source test's two lookups, each only where it can find something (the filter in the
 * config's app part, nfv_abi.h): the bad-source set where the filter says the source may be in it,
 * the good-destination set where the source is bad and the set has entries (without the filter,
 * never: an ARRAY's entry, both sets are asked). */
static __always_inline void nfv_test_source(struct lr_ipv4_check* r, const struct dp_config* cfg) {
    __u32 src = r->src, dst = r->dst;
    const struct nfv_src_filter* f = cfg ? (const struct nfv_src_filter*)cfg->app : 0;
    const int maybe_bad = nfv_maybe_bad(f, src);
    const int bad = maybe_bad && bpf_map_lookup_elem(&nfv_bad_src, &src) != 0;
    const int maybe_good = bad && (!f || f->good_dst);
    lr_ipv4_test_source(r, bad, maybe_good && bpf_map_lookup_elem(&nfv_good_dst, &dst) != 0);
}

/* A valid frame out, `out_len` bytes long (the IP packet and its L2 header, never more than the
 * frame): the Ethernet padding trimmed, as the DPDK kernel trims its mbuf; MAC-swapped per the
 * config; counted with its length as sent. */
static __always_inline int nfv_send(struct xdp_md* ctx, __u32 flags, __u32 out_len) {
    const __u32 len = (__u32)(ctx->data_end - ctx->data);
    if (out_len < len) {
        if (bpf_xdp_adjust_tail(ctx, (int)out_len - (int)len))
            return dp_finish(ctx, flags, DP_SLOW_PATH);
        dp_count(DP_TRIMMED, len - out_len);
    }
    if (flags & DP_MAC_SWAP) lr_swap_macs((__u8*)(long)ctx->data, (const __u8*)(long)ctx->data_end);
    return dp_finish_bytes(ctx, flags, DP_TX, out_len);
}

/* The frame's slot from the check's result `r` (the source test still to do where it says so),
 * counted; a valid frame sent. */
static __always_inline int nfv_answer(struct xdp_md* ctx, const struct dp_config* cfg, __u32 flags,
                                      struct lr_ipv4_check r) {
    if (r.verdict == LR_IPV4_TEST_SOURCE) nfv_test_source(&r, cfg);
    if (r.verdict == LR_IPV4_NOT_IPV4) return dp_finish(ctx, flags, DP_PASSED);
    if (r.verdict != LR_IPV4_OK) return dp_finish(ctx, flags, DP_DROP_FIRST + r.verdict);
    return nfv_send(ctx, flags, r.out_len);
}

SEC("xdp.frags")
int xsk_def_prog(struct xdp_md* ctx) {
    const struct dp_config* cfg = dp_config_of();
    const __u8* data = (const __u8*)(long)ctx->data;
    const __u8* data_end = (const __u8*)(long)ctx->data_end;
    /* The frame most traffic is, where the app serves every IPv4 frame: its route is the check's
     * own test of its kind. */
    if (dp_serves_every_ipv4(cfg) && lr_ipv4_plain(data, data_end))
        return nfv_answer(ctx, cfg, cfg->flags,
                          lr_check_ipv4_plain(data, data_end, cfg->flags & DP_VERIFY_CHECKSUM));
    const struct dp_start start = dp_begin_with(ctx, cfg);
    if (start.route != DP_SLOTS) return dp_finish(ctx, start.flags, start.route);
    return nfv_answer(ctx, cfg, start.flags,
                      lr_check_ipv4_header(data, data_end, start.flags & DP_VERIFY_CHECKSUM,
                                           start.flags & DP_PASS_NON_IP));
}
