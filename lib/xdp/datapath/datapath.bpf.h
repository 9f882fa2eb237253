/* What every app's XDP program shares: the maps of lib/xdp/datapath/datapath_abi.h and the end of a
 * frame's run (count its slot, record it for the pcap test mode, return the action). */
#ifndef LINERATE_BPF_DATAPATH_BPF_H
#define LINERATE_BPF_DATAPATH_BPF_H

#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "xdp/bpf_map.h"
#include "xdp/datapath/datapath_abi.h"
#include "xdp/steer/steer_match.h"

LR_BPF_MAP(dp_config, BPF_MAP_TYPE_ARRAY, 1, struct dp_config);
LR_BPF_MAP(dp_counters, BPF_MAP_TYPE_PERCPU_ARRAY, DP_SLOTS, struct dp_count);
LR_BPF_MAP(dp_last, BPF_MAP_TYPE_ARRAY, 1, __u32);
LR_BPF_MAP(xsks_map, BPF_MAP_TYPE_XSKMAP, DP_MAX_QUEUES, __u32);

/* --forward pair's other interface (DP_FORWARD_PAIR): a DEVMAP, so that the kernel sends the
 * redirected frames in bulk. */
LR_BPF_MAP(dp_pair_port, BPF_MAP_TYPE_DEVMAP, 1, __u32);

/* The config (never null in practice: an ARRAY's entry; the programs pass the frame if it is). */
static __always_inline const struct dp_config* dp_config_of(void) {
    __u32 key = 0;
    return bpf_map_lookup_elem(&dp_config, &key);
}

/* Counts a frame of `bytes` under `slot`. */
static __always_inline void dp_count(__u32 slot, __u64 bytes) {
    struct dp_count* c = bpf_map_lookup_elem(&dp_counters, &slot);
    if (c) {
        c->packets += 1;
        c->bytes += bytes;
    }
}

/* Counts the frame, `bytes` long, under `slot` and returns the action that goes with it. */
static __always_inline int dp_finish_bytes(struct xdp_md* ctx, __u32 flags, __u32 slot,
                                           __u32 bytes) {
    dp_count(slot, bytes);
    if (flags & DP_RECORD_LAST) {
        __u32 key = 0;
        __u32* last = bpf_map_lookup_elem(&dp_last, &key);
        if (last) *last = slot;
    }
    /* No paired interface in the map (never: written before the attach): dropped. */
    if (slot == DP_TX)
        return (flags & DP_FORWARD_PAIR) ? bpf_redirect_map(&dp_pair_port, 0, XDP_DROP) : XDP_TX;
    if (slot == DP_PASSED || slot == DP_NOT_SERVED) return XDP_PASS;
    /* No socket on the queue (as in BPF_PROG_TEST_RUN): the kernel's, as --xdp-steer does. */
    if (slot == DP_SLOW_PATH) return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
    return XDP_DROP;
}

/* dp_finish_bytes with the frame's length: the first buffer's bytes (a multi-buffer frame's slow
 * path is counted by the DPDK tier). */
static __always_inline int dp_finish(struct xdp_md* ctx, __u32 flags, __u32 slot) {
    return dp_finish_bytes(ctx, flags, slot, (__u32)(ctx->data_end - ctx->data));
}

/* A multi-buffer frame (its bytes do not all lie in [data, data_end)): the slow path's. Asked
 * only where the config says frames can be (DP_MULTI_BUFFER). */
static __always_inline int dp_multi_buffer(struct xdp_md* ctx, __u32 flags) {
    return (flags & DP_MULTI_BUFFER) &&
           bpf_xdp_get_buff_len(ctx) > (__u64)(ctx->data_end - ctx->data);
}

/* Where the frame goes before the app's kernel sees it: outside the served set, to the kernel
 * (DP_NOT_SERVED); multi-buffer, or every frame under DP_SLOW_PATH_ALL, to the slow path.
 * Returns the slot, or DP_SLOTS when the app's kernel is to decide. */
static __always_inline __u32 dp_route(struct xdp_md* ctx, const struct dp_config* cfg) {
    if (!lr_steer_matches(&cfg->serve, (void*)(long)ctx->data, (void*)(long)ctx->data_end))
        return DP_NOT_SERVED;
    /* One test for the common case, neither flag set. */
    if (!(cfg->flags & DP_ROUTE_FLAGS)) return DP_SLOTS;
    if (cfg->flags & DP_SLOW_PATH_ALL) return DP_SLOW_PATH;
    if (dp_multi_buffer(ctx, cfg->flags)) return DP_SLOW_PATH;
    return DP_SLOTS;
}

/* A frame's first step: the config, its flags, and dp_route's slot. */
struct dp_start {
    /* Never null in practice (an ARRAY's entry); if it were, route is DP_NOT_SERVED. */
    const struct dp_config* cfg;
    __u32 flags;
    __u32 route; /* DP_SLOTS: the app's kernel decides */
};

static __always_inline struct dp_start dp_begin_with(struct xdp_md* ctx,
                                                     const struct dp_config* cfg) {
    struct dp_start s = {cfg, cfg ? cfg->flags : 0, DP_NOT_SERVED};
    if (cfg) s.route = dp_route(ctx, cfg);
    return s;
}

static __always_inline struct dp_start dp_begin(struct xdp_md* ctx) {
    return dp_begin_with(ctx, dp_config_of());
}

/* A frame's whole run for an app's kernel: dp_begin's route, else `kernel(ctx, flags, data,
 * data_end)`, which ends the frame with dp_finish as it decides (DP_TX, DP_DROP_FIRST + a
 * reason, ...). `kernel` names an __always_inline function: clang inlines it here, so the program
 * makes no call and each dp_finish keeps its constant slot. */
typedef int (*dp_kernel)(struct xdp_md* ctx, __u32 flags, __u8* data, const __u8* data_end);

static __always_inline int dp_run(struct xdp_md* ctx, dp_kernel kernel) {
    const struct dp_start start = dp_begin(ctx);
    if (start.route != DP_SLOTS) return dp_finish(ctx, start.flags, start.route);
    return kernel(ctx, start.flags, (__u8*)(long)ctx->data, (const __u8*)(long)ctx->data_end);
}

/* Whether every frame of a kind the app's kernel recognises itself (an untagged IPv4 frame with
 * a whole header, say) goes to that kernel without dp_route: the app serves all IPv4 (or every
 * frame) and nothing is left to the slow path wholesale. Then the kernel's own test of the
 * frame's kind is the route too, and the steering filter is not run a second time over the
 * same bytes (1 ns of a header check's program, bench/run xdp-cost). User space works this out from
 * the config once (DP_SERVES_EVERY_IPV4). */
static __always_inline int dp_serves_every_ipv4(const struct dp_config* cfg) {
    return cfg && (cfg->flags & DP_SERVES_EVERY_IPV4);
}

char _license[] SEC("license") = "Dual BSD/GPL";
/* libxdp's tag (DP_PROGRAM): no global variables either, or libxdp takes one for a count. */
__uint(xsk_prog_version, 1) SEC("xdp_metadata");

#endif
