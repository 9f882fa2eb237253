/* What every app's XDP program shares: the maps of bpf/datapath_abi.h and the end of a frame's
 * run (count its slot, record it for the pcap test mode, return the action). */
#ifndef LINERATE_BPF_DATAPATH_BPF_H
#define LINERATE_BPF_DATAPATH_BPF_H

#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "datapath_abi.h"

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct dp_config);
} dp_config SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, DP_SLOTS);
    __type(key, __u32);
    __type(value, __u64);
} dp_counters SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} dp_last SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, DP_MAX_QUEUES);
    __type(key, __u32);
    __type(value, __u32);
} dp_xsks SEC(".maps");

static __always_inline __u32 dp_flags(void) {
    __u32 key = 0;
    const struct dp_config* c = bpf_map_lookup_elem(&dp_config, &key);
    return c ? c->flags : 0;
}

/* Counts the frame under `slot` and returns the action that goes with it. */
static __always_inline int dp_finish(struct xdp_md* ctx, __u32 flags, __u32 slot) {
    __u64* n = bpf_map_lookup_elem(&dp_counters, &slot);
    if (n) *n += 1;
    if (flags & DP_RECORD_LAST) {
        __u32 key = 0;
        __u32* last = bpf_map_lookup_elem(&dp_last, &key);
        if (last) *last = slot;
    }
    if (slot == DP_TX) return XDP_TX;
    if (slot == DP_PASSED) return XDP_PASS;
    /* No socket on the queue (as in BPF_PROG_TEST_RUN): the kernel's, as --xdp-steer does. */
    if (slot == DP_SLOW_PATH) return bpf_redirect_map(&dp_xsks, ctx->rx_queue_index, XDP_PASS);
    return XDP_DROP;
}

/* A multi-buffer frame (its bytes do not all lie in [data, data_end)): the slow path's. Asked
 * only where the config says frames can be (DP_MULTI_BUFFER). */
static __always_inline int dp_multi_buffer(struct xdp_md* ctx, __u32 flags) {
    return (flags & DP_MULTI_BUFFER) &&
           bpf_xdp_get_buff_len(ctx) > (__u64)(ctx->data_end - ctx->data);
}

char _license[] SEC("license") = "Dual BSD/GPL";

#endif
