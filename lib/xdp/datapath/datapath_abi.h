/* The interface between the apps' XDP programs (apps/<app>/xdp/, built with
 * linerate_bpf_programs) and user space (lib/xdp/datapath/datapath_program): map names, the
 * config the app writes and the counter slots it reads. Plain C with kernel UAPI types, included
 * by both sides. What one app's program has more (its own maps, its part of the config: app) is
 * in that app's own ABI header beside its program. */
#ifndef LINERATE_BPF_DATAPATH_ABI_H
#define LINERATE_BPF_DATAPATH_ABI_H

#include <linux/types.h>

#include "xdp/steer/steer_abi.h"

/* dp_config[0].flags: the app's options. */
enum dp_flag {
    DP_MAC_SWAP = 1u << 0,        /* swap source and destination MAC of what is sent back */
    DP_VERIFY_CHECKSUM = 1u << 1, /* check the IPv4 header checksum (e.g. not --no-checksum) */
    DP_PASS_NON_IP = 1u << 2,     /* a non-IPv4 frame is valid (e.g. a --pass-non-ip) */
    /* Write each frame's slot into dp_last[0]: the pcap test mode (BPF_PROG_TEST_RUN, one frame
     * at a time) reads it to learn the frame's drop reason. Off on an interface. */
    DP_RECORD_LAST = 1u << 3,
    /* Frames may come in several buffers (an interface whose MTU exceeds one page's linear room,
     * and the pcap test mode's long frames): ask the kernel for every frame's whole length
     * (bpf_xdp_get_buff_len, a helper call: ~6 ns) and leave multi-buffer frames to the slow
     * path. Off, no frame is taken for one. */
    DP_MULTI_BUFFER = 1u << 4,
    /* Every frame the app serves to the slow path: the two tiers compared on live traffic
     * (LINERATE_TEST_XDP_SLOW_PATH, a test hook; lib/runtime/xdp_datapath_feature). */
    DP_SLOW_PATH_ALL = 1u << 5,
    /* --forward pair: what the app sends goes out of the paired interface (dp_pair_port[0], a
     * DEVMAP entry written before the program is attached) with bpf_redirect_map, not back out
     * (XDP_TX). Counted DP_TX all the same: the DPDK datapath counts a paired frame as tx. */
    DP_FORWARD_PAIR = 1u << 6,
    /* Set by user space (lib/xdp/datapath/datapath_program's set_config), never by an app: every
     * IPv4 frame is served and none goes to the slow path wholesale, so an app kernel's own test of
     * a frame's kind is its route too (dp_serves_every_ipv4). One bit test a frame instead of
     * three. */
    DP_SERVES_EVERY_IPV4 = 1u << 7,
};

/* The room for the app's part of the config (dp_config.app), in 64-bit words. */
#define DP_APP_CONFIG_WORDS 66

/* The flags that can send a served frame to the slow path before the app's kernel sees it. */
#define DP_ROUTE_FLAGS (DP_SLOW_PATH_ALL | DP_MULTI_BUFFER)

struct dp_config {
    __u32 flags; /* enum dp_flag */
    /* The frames the app serves (--xdp-steer, as the steering program decides); the others go
     * to the kernel (XDP_PASS), counted DP_NOT_SERVED. All zeros (STEER_NONE, a program not
     * configured yet): every frame to the kernel. */
    struct steer_config serve;
    /* The app's own part of the config, its layout the app's (e.g. a source filter,
     * in apps/<app>/xdp/'s ABI header): in this entry rather than a map of the app's, so that a
     * frame costs one array lookup, not two. Written with DatapathProgram::set_app_config. */
    __u64 app[DP_APP_CONFIG_WORDS];
};

/* Counter slots (a PERCPU_ARRAY of struct dp_count, DP_SLOTS entries): what became of each
 * frame. A drop is DP_DROP_FIRST + the app's reason index (its X-macro drop list beside its
 * program in apps/<app>/xdp/). */
enum dp_slot {
    DP_TX = 0,         /* sent: back out (XDP_TX) or to the paired interface; bytes as sent */
    DP_PASSED = 1,     /* the app's verdict "not mine": to the kernel (XDP_PASS) */
    DP_SLOW_PATH = 2,  /* left to the DPDK kernel (multi-buffer frames): to the AF_XDP queue */
    DP_NOT_SERVED = 3, /* outside dp_config.serve: to the kernel (XDP_PASS), never the app's */
    DP_TRIMMED = 4,    /* not an outcome: frames trimmed before DP_TX, bytes cut off */
    DP_DROP_FIRST = 5,
    DP_SLOTS = 16,
};

struct dp_count {
    __u64 packets;
    __u64 bytes; /* of the frames as they left the program (received, trimmed for DP_TX) */
};

/* The program's function name and its libxdp version tag (lib/xdp/datapath/datapath.bpf.h): a
 * net_af_xdp vdev made without xdp_prog= finds the program the app attached by them, as it finds
 * libxdp's own default program, and inserts its AF_XDP socket into DP_SLOW_PATH_MAP. */
#define DP_PROGRAM "xsk_def_prog"

/* The AF_XDP sockets of the slow path, by RX queue. */
#define DP_MAX_QUEUES 64

#define DP_CONFIG_MAP "dp_config"
#define DP_COUNTERS_MAP "dp_counters"
#define DP_LAST_MAP "dp_last"
#define DP_SLOW_PATH_MAP "xsks_map" /* the name net_af_xdp looks for */
#define DP_PAIR_MAP "dp_pair_port"  /* DP_FORWARD_PAIR's interface, entry 0 (its ifindex) */

#endif
