/* l2reflect on the XDP datapath: every frame back out (XDP_TX), MACs swapped by
 * lib/pkt/mac_swap.h's swap (the one the C++ kernel compiles) unless the config says not; a frame
 * shorter than an Ethernet header is a runt (dropped, counted); a multi-buffer frame goes to the
 * slow path, a frame the app does not serve (dp_config.serve) to the kernel. */
#include <linux/bpf.h>
#include <linux/if_ether.h>

#include <bpf/bpf_helpers.h>

#include "l2reflect/xdp/l2reflect_abi.h"
#include "pkt/mac_swap.h"
#include "xdp/datapath/datapath.bpf.h"

static __always_inline int l2reflect_kernel(struct xdp_md* ctx, __u32 flags, __u8* data,
                                            const __u8* data_end) {
    if (data + ETH_HLEN > data_end) return dp_finish(ctx, flags, DP_DROP_FIRST + LR_L2REFLECT_RUNT);
    if (flags & DP_MAC_SWAP) lr_swap_macs(data, data_end);
    return dp_finish(ctx, flags, DP_TX);
}

SEC("xdp.frags")
int xsk_def_prog(struct xdp_md* ctx) {
    return dp_run(ctx, l2reflect_kernel);
}
