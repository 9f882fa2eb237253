/* clocksync's client hook in the steering program (STEER_HOOK of clocksync_steer.bpf.o, built by
 * apps/clocksync/CMakeLists.txt's linerate_bpf_programs; lib/xdp/steer/steer.bpf.c says what a
 * hook is): --xdp-turn. The master's echo of a warm-up frame flagged LR_CS_FLAG_TURN is turned
 * into the request of its seq and sent back by XDP_TX, t1 stamped right before (into the frame
 * and cs_turn[seq % CS_TURN_SLOTS]); the answer to that request carries the t1 in its
 * steer_rx_stamp (hook_ns). So the request leaves from the NAPI poll the echo arrived in, the path
 * the master's answer takes to the client: the two legs cross the same kernel code
 * (docs/clocksync.md, "--xdp-turn"). Only with STEER_FLAG_RX_STAMP. BPF only. */
#ifndef LINERATE_CLOCKSYNC_CS_STEER_HOOK_H
#define LINERATE_CLOCKSYNC_CS_STEER_HOOK_H

#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "clocksync/xdp/cs_frame.bpf.h"
#include "clocksync/xdp/cs_xdp_abi.h"
#include "xdp/bpf_map.h"
#include "xdp/steer/steer_abi.h"

LR_BPF_MAP(cs_turn, BPF_MAP_TYPE_ARRAY, CS_TURN_SLOTS, struct cs_turn_slot);

/* A clocksync warm-up echo flagged LR_CS_FLAG_TURN, to a unicast address, becomes the request of
 * its seq, flags cleared, t1 stamped last (into the frame and the seq's slot): returns 1, the
 * steering program sends it by XDP_TX. A response whose seq holds the slot gets that t1 in
 * *turn_t1. Anything else: 0, untouched. */
static __always_inline int cs_turn_echo(__u8* data, const __u8* data_end, __u16 port,
                                        __u64* turn_t1) {
    __u8* ip = 0;
    __u8* udp = cs_udp_to_port(data, data_end, port, &ip);
    if (!udp || udp + CS_UDP_LEN > data_end || lr_load_be16(udp + 4) != CS_UDP_LEN) return 0;
    __u8* cs = udp + LR_UDP_HLEN;
    if (lr_load_be16(cs + LR_CS_OFF_MAGIC) != LR_CS_MAGIC || cs[LR_CS_OFF_VERSION] != LR_CS_VERSION)
        return 0;
    const __u64 seq = lr_load_be64(cs + LR_CS_OFF_SEQ);
    const __u32 key = (__u32)(seq % CS_TURN_SLOTS);
    struct cs_turn_slot* slot = bpf_map_lookup_elem(&cs_turn, &key);
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
    lr_store_be64(cs + LR_CS_OFF_T1, t1);
    slot->seq = seq;
    slot->t1_ns = t1;
    return 1;
}

static __always_inline int steer_hook(struct xdp_md* ctx, const struct steer_config* cfg,
                                      __u64* hook_ns) {
    if (!(cfg->flags & STEER_FLAG_RX_STAMP)) return 0;
    return cs_turn_echo((__u8*)(long)ctx->data, (const __u8*)(long)ctx->data_end, cfg->udp_port,
                        hook_ns);
}

#endif
