/* The interface between the apps' XDP programs (lib/xdp/datapath/nfv.bpf.c,
 * lib/xdp/datapath/l2reflect.bpf.c) and user space (lib/xdp/datapath/datapath_program): map names,
 * the config the app writes and the counter slots it reads. Plain C with kernel UAPI types,
 * included by both sides. */
#ifndef LINERATE_BPF_DATAPATH_ABI_H
#define LINERATE_BPF_DATAPATH_ABI_H

#include <linux/types.h>

#include "stats/drop_list.h"
#include "xdp/steer/steer_abi.h"

/* l2reflect's program's drop reasons (l2reflect.bpf.c), X(C_NAME, l2reflect's board key), after
 * DP_DROP_FIRST, in the order of LINERATE_L2REFLECT_DROPS (apps/l2reflect/reflect.hpp checks it
 * at compile time, lib/stats/drop_list.h): the runt; split_header is the C++ kernel's only (a
 * chained mbuf). */
#define LR_L2REFLECT_DROPS(X) X(LR_L2REFLECT_RUNT, runt)
enum lr_l2reflect_drop { LR_L2REFLECT_DROPS(LR_DROP_ENUM_ITEM) };

/* nfv's filter in front of its address sets (dp_config.nfv_sources), so that most traffic's
 * source needs no hash lookup: the widest range of addresses with no bad source in it (the
 * default set, 0.0.0.0 and 255.255.255.255, leaves every other address in it: one compare a
 * frame), and outside it a bit per bad source (dp_src_filter_bit); and whether there are good
 * destinations at all, so that a bad source needs no second hash lookup when there are none (the
 * default: a bad-source frame 80 -> 60 ns, bench/run xdp-cost). In the config's entry, not a map
 * of its own: one array lookup a frame less (0.x ns). */
struct dp_src_filter {
    __u32 clear_first; /* [clear_first, clear_first + clear_span] holds no bad source */
    __u32 clear_span;
    __u64 bits[64]; /* 4096 bits */
    __u32 good_dst; /* nfv_good_dst has entries */
    __u32 reserved;
};
static inline __u32 dp_src_filter_bit(__u32 addr) {
    return (__u32)(addr * 0x9E3779B1u) >> 20;
}

/* dp_config[0].flags: the app's options. */
enum dp_flag {
    DP_MAC_SWAP = 1u << 0,        /* swap source and destination MAC of what is sent back */
    DP_VERIFY_CHECKSUM = 1u << 1, /* nfv: check the IPv4 header checksum (not --no-checksum) */
    DP_PASS_NON_IP = 1u << 2,     /* nfv: a non-IPv4 frame is valid (--pass-non-ip) */
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

/* The flags that can send a served frame to the slow path before the app's kernel sees it. */
#define DP_ROUTE_FLAGS (DP_SLOW_PATH_ALL | DP_MULTI_BUFFER)

struct dp_config {
    __u32 flags; /* enum dp_flag */
    /* The frames the app serves (--xdp-steer, as the steering program decides); the others go
     * to the kernel (XDP_PASS), counted DP_NOT_SERVED. All zeros (STEER_NONE, a program not
     * configured yet): every frame to the kernel. */
    struct steer_config serve;
    struct dp_src_filter nfv_sources; /* nfv only */
};

/* Counter slots (a PERCPU_ARRAY of struct dp_count, DP_SLOTS entries): what became of each
 * frame. A drop is DP_DROP_FIRST + the app's reason index (nfv: enum lr_ipv4_verdict of
 * lib/pkt/check_ipv4.h; l2reflect: 0 = runt). */
enum dp_slot {
    DP_TX = 0,         /* sent: back out (XDP_TX) or to the paired interface; bytes as sent */
    DP_PASSED = 1,     /* the app's verdict "not mine": to the kernel (XDP_PASS); nfv: not IPv4 */
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
/* nfv's address sets (host-order __u32 keys, __u8 values): Click's BADSRC and GOODDST. */
#define DP_NFV_BAD_SRC_MAP "nfv_bad_src"
#define DP_NFV_GOOD_DST_MAP "nfv_good_dst"
#define DP_NFV_MAX_ADDRESSES 1024
/* clocksync's master (lib/xdp/datapath/clocksync.bpf.c): cs_config[0]. */
#define DP_CS_CONFIG_MAP "cs_config"
struct dp_cs_config {
    /* The interface's MAC: the source of answers to requests sent to a group address (a client
     * learning the master's MAC broadcasts), as the C++ master answers from its port's. */
    __u8 mac[6];
    __u16 udp_port; /* host order: the port requests come to (--udp-port) */
    /* A UDP checksum left to the sender's TX offload is taken (not --strict-checksums); checksums
     * are checked at all with DP_VERIFY_CHECKSUM (not --no-verify-checksums). */
    __u8 accept_offloaded;
    __u8 pad[3];
};

#endif
