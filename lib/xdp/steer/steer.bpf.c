/* linerate's XDP steering program: hands the frames the app serves to the AF_XDP socket of the
 * RX queue they arrived on and passes everything else (ARP, ICMP, ssh, other UDP ports...) to
 * the kernel, so an app shares the interface with the host's own stack. The app writes the
 * filter into steer_config and reads steer_counters (steer_program). */
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "xdp/bpf_map.h"
#include "xdp/datapath/cs_frame.bpf.h"
#include "xdp/steer/steer_abi.h"
#include "xdp/steer/steer_match.h"

LR_BPF_MAP(xsks_map, BPF_MAP_TYPE_XSKMAP, STEER_MAX_QUEUES, __u32);
LR_BPF_MAP(steer_config, BPF_MAP_TYPE_ARRAY, 1, struct steer_config);
LR_BPF_MAP(steer_counters, BPF_MAP_TYPE_PERCPU_ARRAY, STEER_MAX_QUEUES, struct steer_counters);
LR_BPF_MAP(steer_turn, BPF_MAP_TYPE_ARRAY, STEER_TURN_SLOTS, struct steer_turn_slot);

/* STEER_FLAG_RX_STAMP: `rx_ns` (and the turned request's t1 the frame answers, 0 if none) into
 * the metadata ahead of the frame. A driver without XDP metadata refuses the room, and the frame
 * goes on without a stamp. */
static __always_inline void put_rx_stamp(struct xdp_md* ctx, __u64 rx_ns, __u64 turn_t1) {
    if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct steer_rx_stamp))) return;
    struct steer_rx_stamp* s = (void*)(long)ctx->data_meta;
    if ((void*)(s + 1) > (void*)(long)ctx->data) return;
    s->rx_ns = rx_ns;
    s->turn_t1_ns = turn_t1;
    s->magic = STEER_RX_STAMP_MAGIC;
    s->zero = 0;
}

/* STEER_FLAG_CS_TURN, on a frame the filter claimed. A clocksync warm-up echo flagged
 * LR_CS_FLAG_TURN, to a unicast address, becomes the request of its seq, flags cleared, t1
 * stamped last (into the frame and the seq's slot): returns 1, the caller sends it by XDP_TX.
 * A response whose seq holds the slot gets that t1 in *turn_t1. Anything else: 0, untouched. */
static __always_inline int cs_turn(__u8* data, const __u8* data_end, __u16 port, __u64* turn_t1) {
    __u8* ip = 0;
    __u8* udp = cs_udp_to_port(data, data_end, port, &ip);
    if (!udp || udp + CS_UDP_LEN > data_end || lr_load_be16(udp + 4) != CS_UDP_LEN) return 0;
    __u8* cs = udp + CS_UDP_HLEN;
    if (lr_load_be16(cs + LR_CS_OFF_MAGIC) != LR_CS_MAGIC || cs[LR_CS_OFF_VERSION] != LR_CS_VERSION)
        return 0;
    const __u64 seq = cs_load_be64(cs + LR_CS_OFF_SEQ);
    const __u32 key = (__u32)(seq % STEER_TURN_SLOTS);
    struct steer_turn_slot* slot = bpf_map_lookup_elem(&steer_turn, &key);
    if (!slot) return 0; /* not reached: an array's entry */
    if (cs[LR_CS_OFF_TYPE] == LR_CS_RESPONSE) {
        if (slot->seq == seq) *turn_t1 = slot->t1_ns;
        return 0;
    }
    if (cs[LR_CS_OFF_TYPE] != LR_CS_WARMUP_ECHO || (data[0] & 1) ||
        !(lr_load_be16(cs + LR_CS_OFF_RESERVED) & LR_CS_FLAG_TURN))
        return 0;
    /* From the address the echo came to (unicast, checked above: `own_mac` is never read). */
    cs = cs_turn_around(data, data_end, ip, udp, data, LR_CS_REQUEST);
    if (!cs) return 0; /* not reached: the length was checked */
    cs[LR_CS_OFF_RESERVED] = cs[LR_CS_OFF_RESERVED + 1] = 0;
    /* Last: the frame leaves after this (an early transmit stamp is sound). */
    const __u64 t1 = bpf_ktime_get_ns();
    cs_store_be64(cs + LR_CS_OFF_T1, t1);
    slot->seq = seq;
    slot->t1_ns = t1;
    return 1;
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
    __u64 turn_t1 = 0;
    if ((cfg->flags & STEER_FLAG_CS_TURN) && stamp &&
        cs_turn(data, data_end, cfg->udp_port, &turn_t1)) {
        c->turned++;
        return XDP_TX;
    }
    if (stamp) put_rx_stamp(ctx, rx_ns, turn_t1);
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
