/* XDP-native MAC-swap reflector: what a user without a DPDK-capable NIC would run instead of
 * l2reflect. Every frame goes back out the interface it came in on (XDP_TX) with source and
 * destination MAC swapped. The baseline of `bench/run af-xdp` (loaded by bench/xdp_reflect). */
#include <linux/bpf.h>
#include <linux/if_ether.h>

#include <bpf/bpf_helpers.h>

#include "xdp/bpf_map.h"
#include "xdp/reflect/reflect_abi.h"

LR_BPF_MAP(reflect_counters, BPF_MAP_TYPE_PERCPU_ARRAY, 1, struct reflect_counters);

SEC("xdp")
int xdp_reflect(struct xdp_md* ctx) {
    void* data = (void*)(long)ctx->data;
    void* data_end = (void*)(long)ctx->data_end;
    __u32 key = 0;
    struct reflect_counters* c = bpf_map_lookup_elem(&reflect_counters, &key);
    if (!c) return XDP_PASS;

    struct ethhdr* eth = data;
    if ((void*)(eth + 1) > data_end) {
        c->too_short++;
        return XDP_DROP;
    }
    unsigned char tmp[ETH_ALEN];
    __builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
    __builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
    __builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
    c->reflected++;
    c->bytes += (__u64)(data_end - data);
    return XDP_TX;
}

/* Nothing but XDP_TX: what BPF_PROG_TEST_RUN's own loop costs a run (bench/xdp_cost's "loop"),
 * so that each program's work is its time less this. */
SEC("xdp")
int xdp_tx_only(struct xdp_md* ctx) {
    (void)ctx;
    return XDP_TX;
}

char _license[] SEC("license") = "Dual BSD/GPL";
