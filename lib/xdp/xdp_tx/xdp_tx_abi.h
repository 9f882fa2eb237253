/* The ABI between lib/xdp/xdp_tx/xdp_tx.bpf.c and user space (lib/xdp/xdp_tx/xdp_transmitter): a
 * frame user space hands to the program with BPF_PROG_TEST_RUN in live-frames mode leaves by
 * XDP_TX, out of the interface the run names, and the program's CLOCK_MONOTONIC reading right
 * before it returns is the frame's transmit stamp: early, never late (the frame leaves after the
 * program returns). */
#ifndef LINERATE_XDP_TX_ABI_H
#define LINERATE_XDP_TX_ABI_H

#include <linux/types.h>

#define XDP_TX_STAMP_MAP "xdp_tx_stamp"

/* The one slot of xdp_tx_stamp. One sender (the client's worker) runs the program at a time. */
struct xdp_tx_stamp {
    __u64 sent_ns; /* bpf_ktime_get_ns() of the last frame, right before XDP_TX */
    __u64 frames;  /* frames the program has sent (for bpftool map dump) */
};

#endif
