/* XDP-native MAC-swap reflector: what a user without a DPDK-capable NIC would run instead of
 * the DPDK reflector. Every frame goes back out the interface it came in on (XDP_TX) with source and
 * destination MAC swapped (lib/pkt/mac_swap.h's swap, the one every program and kernel runs), a
 * frame shorter than an Ethernet header dropped and counted. The baseline of `bench/run af-xdp`
 * (loaded by bench/xdp_reflect) and of `bench/run xdp-cost`. */
#include <linux/bpf.h>
#include <linux/if_ether.h>

#include <bpf/bpf_helpers.h>

#include "pkt/mac_swap.h"
#include "xdp/bpf_map.h"
#include "xdp/reflect/reflect_abi.h"

LR_BPF_MAP(reflect_counters, BPF_MAP_TYPE_PERCPU_ARRAY, 1, struct reflect_counters);

SEC("xdp")
int xdp_reflect(struct xdp_md* ctx) {
    __u8* data = (__u8*)(long)ctx->data;
    const __u8* data_end = (const __u8*)(long)ctx->data_end;
    __u32 key = 0;
    struct reflect_counters* c = bpf_map_lookup_elem(&reflect_counters, &key);
    if (!c) return XDP_PASS;

    if (data + ETH_HLEN > data_end) {
        c->too_short++;
        return XDP_DROP;
    }
    lr_swap_macs(data, data_end);
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
