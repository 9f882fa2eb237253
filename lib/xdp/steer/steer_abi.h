/* The interface between lib/xdp/steer/steer.bpf.c and the apps (steer_program): map names, the
 * config the app writes and the counters it reads. Plain C with kernel UAPI types, included by both
 * sides. */
#ifndef LINERATE_BPF_STEER_ABI_H
#define LINERATE_BPF_STEER_ABI_H

#include <linux/types.h>

/* What the program sends to the AF_XDP socket of the frame's RX queue; everything else goes to
 * the kernel (XDP_PASS). Written by the app into steer_config[0]; all zeros = STEER_NONE, so
 * the host keeps every frame until the app has said what it serves. */
enum steer_mode {
    STEER_NONE = 0,     /* nothing: every frame to the kernel */
    STEER_ALL = 1,      /* every frame */
    STEER_IPV4 = 2,     /* every IPv4 frame (EtherType 0x0800, no VLAN tag) */
    STEER_UDP_PORT = 3, /* unfragmented IPv4/UDP with destination port udp_port */
};

/* steer_config.flags */
enum steer_flag {
    /* Every frame the program claims carries its receive time in the XDP metadata ahead of it
     * (struct steer_rx_stamp): the kernel's CLOCK_MONOTONIC at the program's entry, the
     * earliest instant software on the host can stamp a frame. The AF_XDP socket copies the
     * metadata into the umem ahead of the frame (a driver without XDP metadata: no stamp). */
    STEER_FLAG_RX_STAMP = 1,
    /* A clocksync client's (lib/xdp/datapath/cs_wire.h): the master's echo of a warm-up frame
     * flagged LR_CS_FLAG_TURN is turned into the request of its seq and sent back by XDP_TX,
     * t1 stamped right before (steer_turn[seq % STEER_TURN_SLOTS]); the answer to that request
     * carries the t1 in its steer_rx_stamp. So the request leaves from the NAPI poll the echo
     * arrived in, the path the master's answer takes to the client: the two legs cross the same
     * kernel code (docs/clocksync.md, "--xdp-turn"). Only with STEER_FLAG_RX_STAMP. */
    STEER_FLAG_CS_TURN = 2,
};

struct steer_config {
    __u32 mode;     /* enum steer_mode */
    __u16 udp_port; /* host byte order */
    __u16 flags;    /* enum steer_flag bits; 0 before there were flags */
};

/* The XDP metadata STEER_FLAG_RX_STAMP puts right before the frame's first byte. magic tells it
 * from the bytes a umem chunk held before (the reader clears it after use). */
struct steer_rx_stamp {
    __u64 rx_ns;      /* bpf_ktime_get_ns() at the program's entry */
    __u64 turn_t1_ns; /* STEER_FLAG_CS_TURN: the t1 of the request this frame answers; 0: none */
    __u32 magic;      /* STEER_RX_STAMP_MAGIC */
    __u32 zero;       /* 0 */
};

/* STEER_FLAG_CS_TURN: the request of sequence `seq` left at `t1_ns` (bpf_ktime_get_ns() right
 * before XDP_TX), in slot seq % STEER_TURN_SLOTS of steer_turn. */
struct steer_turn_slot {
    __u64 seq;
    __u64 t1_ns;
};

#define STEER_TURN_SLOTS 64

#define STEER_RX_STAMP_MAGIC 0x4c525453u /* "LRTS" */

/* Per RX queue, per CPU (PERCPU_ARRAY indexed by rx_queue_index; queues at or above
 * STEER_MAX_QUEUES - 1 share the last slot). Frame counts. */
struct steer_counters {
    __u64 redirected; /* matched the filter and handed to the queue's AF_XDP socket */
    __u64 passed;     /* did not match: to the kernel */
    __u64 unclaimed;  /* matched, but no socket on that queue: to the kernel */
    __u64 turned;     /* STEER_FLAG_CS_TURN: a warm-up echo sent back as its request (XDP_TX) */
};

#define STEER_MAX_QUEUES 64

/* Map names (lib/xdp finds the maps of the attached program by these). The PMD's xdp_prog=
 * devarg requires the socket map to be called xsks_map. */
#define STEER_XSKS_MAP "xsks_map"
#define STEER_CONFIG_MAP "steer_config"
#define STEER_COUNTERS_MAP "steer_counters"

#endif
