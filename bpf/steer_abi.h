/* The interface between bpf/steer.bpf.c and the apps (lib/xdp): map names, the config the app
 * writes and the counters it reads. Plain C with kernel UAPI types, included by both sides. */
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

struct steer_config {
    __u32 mode;     /* enum steer_mode */
    __u16 udp_port; /* host byte order */
    __u16 reserved;
};

/* Per RX queue, per CPU (PERCPU_ARRAY indexed by rx_queue_index; queues at or above
 * STEER_MAX_QUEUES - 1 share the last slot). Frame counts. */
struct steer_counters {
    __u64 redirected; /* matched the filter and handed to the queue's AF_XDP socket */
    __u64 passed;     /* did not match: to the kernel */
    __u64 unclaimed;  /* matched, but no socket on that queue: to the kernel */
};

#define STEER_MAX_QUEUES 64

/* Map names (lib/xdp finds the maps of the attached program by these). The PMD's xdp_prog=
 * devarg requires the socket map to be called xsks_map. */
#define STEER_XSKS_MAP "xsks_map"
#define STEER_CONFIG_MAP "steer_config"
#define STEER_COUNTERS_MAP "steer_counters"

#endif
