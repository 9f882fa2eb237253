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
    /* The app's hook runs on every frame the filter claimed (steer_hook, compiled into the app's
     * own steering object from its STEER_HOOK_HEADER by linerate_bpf_programs' STEER_HOOK; the
     * plain steer.bpf.o has none): it may send the frame back by XDP_TX (counted turned) or put
     * a word into the frame's steer_rx_stamp (hook_ns). E.g. a time client turns the
     * master's warm-up echo into its request (apps/<app>/xdp/'s steering hook). */
    STEER_FLAG_HOOK = 2,
};

struct steer_config {
    __u32 mode;     /* enum steer_mode */
    __u16 udp_port; /* host byte order */
    __u16 flags;    /* enum steer_flag bits; 0 before there were flags */
};

/* The XDP metadata STEER_FLAG_RX_STAMP puts right before the frame's first byte. magic tells it
 * from the bytes a umem chunk held before (the reader clears it after use). */
struct steer_rx_stamp {
    __u64 rx_ns;   /* bpf_ktime_get_ns() at the program's entry */
    __u64 hook_ns; /* STEER_FLAG_HOOK: the app's hook's word for this frame (a time); 0: none */
    __u32 magic;   /* STEER_RX_STAMP_MAGIC */
    __u32 zero;    /* 0 */
};

#define STEER_RX_STAMP_MAGIC 0x4c525453u /* "LRTS" */

/* Per RX queue, per CPU (PERCPU_ARRAY indexed by rx_queue_index; queues at or above
 * STEER_MAX_QUEUES - 1 share the last slot). Frame counts. */
struct steer_counters {
    __u64 redirected; /* matched the filter and handed to the queue's AF_XDP socket */
    __u64 passed;     /* did not match: to the kernel */
    __u64 unclaimed;  /* matched, but no socket on that queue: to the kernel */
    __u64 turned;     /* STEER_FLAG_HOOK: sent back by the app's hook (XDP_TX) */
};

#define STEER_MAX_QUEUES 64

/* Map names (lib/xdp finds the maps of the attached program by these). The PMD's xdp_prog=
 * devarg requires the socket map to be called xsks_map. */
#define STEER_XSKS_MAP "xsks_map"
#define STEER_CONFIG_MAP "steer_config"
#define STEER_COUNTERS_MAP "steer_counters"

#endif
