/* linerate's XDP steering program: hands the frames the app serves to the AF_XDP socket of the
 * RX queue they arrived on and passes everything else (ARP, ICMP, ssh, other UDP ports...) to
 * the kernel, so an app shares the interface with the host's own stack. The app writes the
 * filter into steer_config and reads steer_counters (steer_program). */
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "xdp/bpf_map.h"
#include "xdp/steer/steer_abi.h"
#include "xdp/steer/steer_match.h"

LR_BPF_MAP(xsks_map, BPF_MAP_TYPE_XSKMAP, STEER_MAX_QUEUES, __u32);
LR_BPF_MAP(steer_config, BPF_MAP_TYPE_ARRAY, 1, struct steer_config);
LR_BPF_MAP(steer_counters, BPF_MAP_TYPE_PERCPU_ARRAY, STEER_MAX_QUEUES, struct steer_counters);

/* The app's hook (STEER_FLAG_HOOK): an app's steering object is this file compiled with
 * -DSTEER_HOOK_HEADER="<its header>" (linerate_bpf_programs' STEER_HOOK), which defines
 *     static __always_inline int steer_hook(struct xdp_md* ctx, const struct steer_config* cfg,
 *                                           __u64* hook_ns);
 * run on a frame the filter claimed, with the config set: 1 sends the frame back by XDP_TX
 * (counted turned), 0 hands it on as any other, *hook_ns (0 before) going into its stamp. The
 * plain steer.bpf.o's hook does nothing, and with the flag never set costs nothing. */
#ifdef STEER_HOOK_HEADER
#include STEER_HOOK_HEADER
#else
static __always_inline int steer_hook(struct xdp_md* ctx, const struct steer_config* cfg,
                                      __u64* hook_ns) {
    return 0;
}
#endif

/* STEER_FLAG_RX_STAMP: `rx_ns` (and the hook's word, 0 if none) into the metadata ahead of the
 * frame. A driver without XDP metadata refuses the room, and the frame goes on without a stamp. */
static __always_inline void put_rx_stamp(struct xdp_md* ctx, __u64 rx_ns, __u64 hook_ns) {
    if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct steer_rx_stamp))) return;
    struct steer_rx_stamp* s = (void*)(long)ctx->data_meta;
    if ((void*)(s + 1) > (void*)(long)ctx->data) return;
    s->rx_ns = rx_ns;
    s->hook_ns = hook_ns;
    s->magic = STEER_RX_STAMP_MAGIC;
    s->zero = 0;
}

/* Named xsk_def_prog with libxdp's version tag below: net_af_xdp vdevs that were not given
 * xdp_prog= (the further queues of an interface, one vdev each) then adopt this program as
 * libxdp's own and insert their sockets into xsks_map instead of failing to attach theirs.
 * No global variables: libxdp would take a .data/.bss map for its reference count. */
SEC("xdp")
int xsk_def_prog(struct xdp_md* ctx) {
    void* data = (void*)(long)ctx->data;
    void* data_end = (void*)(long)ctx->data_end;
    __u32 key = 0;
    __u32 queue = ctx->rx_queue_index;
    if (queue >= STEER_MAX_QUEUES) queue = STEER_MAX_QUEUES - 1;

    struct steer_counters* c = bpf_map_lookup_elem(&steer_counters, &queue);
    struct steer_config* cfg = bpf_map_lookup_elem(&steer_config, &key);
    if (!c || !cfg) return XDP_PASS;
    /* Read before the filter runs, so that its work does not land in the receive time; and
     * only when asked: the clock read costs every other app's frames nothing. */
    const int stamp = cfg->flags & STEER_FLAG_RX_STAMP;
    const __u64 rx_ns = stamp ? bpf_ktime_get_ns() : 0;

    if (!lr_steer_matches(cfg, data, data_end)) {
        c->passed++;
        return XDP_PASS;
    }
    __u64 hook_ns = 0;
    if ((cfg->flags & STEER_FLAG_HOOK) && steer_hook(ctx, cfg, &hook_ns)) {
        c->turned++;
        return XDP_TX;
    }
    if (stamp) put_rx_stamp(ctx, rx_ns, hook_ns);
    /* XDP_PASS as the fallback action: a queue without a socket hands the frame to the kernel. */
    int action = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
    if (action == XDP_REDIRECT)
        c->redirected++;
    else
        c->unclaimed++;
    return action;
}

char _license[] SEC("license") = "Dual BSD/GPL";
__uint(xsk_prog_version, 1) SEC("xdp_metadata");
