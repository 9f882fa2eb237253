// Sends the frame it is given by XDP_TX and stamps it: a time client's request leaves from
// the XDP layer (BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES on its interface), skipping
// the socket, the skb and the copy of the AF_XDP transmit path, and its t1 is read here, the
// last instant before the kernel takes the frame (lib/xdp/xdp_tx/xdp_transmitter).
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "xdp/bpf_map.h"
#include "xdp/xdp_tx/xdp_tx_abi.h"

LR_BPF_MAP(xdp_tx_stamp, BPF_MAP_TYPE_ARRAY, 1, struct xdp_tx_stamp);

SEC("xdp")
int xdp_tx(struct xdp_md* ctx) {
    const __u32 key = 0;
    struct xdp_tx_stamp* stamp = bpf_map_lookup_elem(&xdp_tx_stamp, &key);
    if (!stamp) return XDP_ABORTED;
    stamp->frames += 1;
    stamp->sent_ns = bpf_ktime_get_ns();
    return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
