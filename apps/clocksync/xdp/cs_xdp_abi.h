/* clocksync's XDP programs and their user side: the master's config map (clocksync.bpf.c, written
 * by apps/clocksync/main.cpp's configure) and the client's turn slots (the steering hook,
 * cs_steer_hook.h). Plain C with kernel UAPI types, included by both sides. */
#ifndef LINERATE_CLOCKSYNC_XDP_ABI_H
#define LINERATE_CLOCKSYNC_XDP_ABI_H

#include <linux/types.h>

/* The master (clocksync.bpf.c): cs_config[0]. */
#define CS_CONFIG_MAP "cs_config"
struct cs_xdp_config {
    /* The interface's MAC: the source of answers to requests sent to a group address (a client
     * learning the master's MAC broadcasts), as the C++ master answers from its port's. */
    __u8 mac[6];
    __u16 udp_port; /* host order: the port requests come to (--udp-port) */
    /* A UDP checksum left to the sender's TX offload is taken (not --strict-checksums); checksums
     * are checked at all with DP_VERIFY_CHECKSUM (not --no-verify-checksums). */
    __u8 accept_offloaded;
    __u8 pad[3];
};

/* The client's turn (--xdp-turn, cs_steer_hook.h): the request of sequence `seq` left at `t1_ns`
 * (bpf_ktime_get_ns() right before XDP_TX), in slot seq % CS_TURN_SLOTS of cs_turn. */
struct cs_turn_slot {
    __u64 seq;
    __u64 t1_ns;
};
#define CS_TURN_SLOTS 64

#endif
