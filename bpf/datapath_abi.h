/* The interface between the apps' XDP programs (bpf/nfv.bpf.c, bpf/l2reflect.bpf.c) and user
 * space (lib/xdp/datapath): map names, the config the app writes and the counter slots it reads.
 * Plain C with kernel UAPI types, included by both sides. */
#ifndef LINERATE_BPF_DATAPATH_ABI_H
#define LINERATE_BPF_DATAPATH_ABI_H

#include <linux/types.h>

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
};

struct dp_config {
    __u32 flags; /* enum dp_flag */
};

/* Counter slots (a PERCPU_ARRAY of __u64 frame counts, DP_SLOTS entries): what became of each
 * frame. A drop is DP_DROP_FIRST + the app's reason index (nfv: enum lr_ipv4_verdict of
 * bpf/check_ipv4.h; l2reflect: 0 = runt). */
enum dp_slot {
    DP_TX = 0,        /* sent back out (XDP_TX) */
    DP_PASSED = 1,    /* not the app's: to the kernel (XDP_PASS); nfv: not IPv4 */
    DP_SLOW_PATH = 2, /* left to the DPDK kernel (multi-buffer frames): to the AF_XDP queue */
    DP_DROP_FIRST = 3,
    DP_SLOTS = 16,
};

/* The AF_XDP sockets of the slow path, by RX queue. */
#define DP_MAX_QUEUES 64

#define DP_CONFIG_MAP "dp_config"
#define DP_COUNTERS_MAP "dp_counters"
#define DP_LAST_MAP "dp_last"
#define DP_SLOW_PATH_MAP "dp_xsks"
/* nfv's address sets (host-order __u32 keys, __u8 values): Click's BADSRC and GOODDST. */
#define DP_NFV_BAD_SRC_MAP "nfv_bad_src"
#define DP_NFV_GOOD_DST_MAP "nfv_good_dst"
#define DP_NFV_MAX_ADDRESSES 1024
/* nfv_src_filter[0]: a bit per bad source (dp_src_filter_bit), so that a source whose bit is
 * clear needs no hash lookup: most traffic's. */
#define DP_NFV_SRC_FILTER_MAP "nfv_src_filter"
struct dp_src_filter {
    __u64 bits[64]; /* 4096 bits */
};
static inline __u32 dp_src_filter_bit(__u32 addr) {
    return (__u32)(addr * 0x9E3779B1u) >> 20;
}

#endif
