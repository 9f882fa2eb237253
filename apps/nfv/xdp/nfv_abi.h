/* nfv's XDP program (apps/nfv/xdp/nfv.bpf.c) and its user side (apps/nfv/nfv_xdp.cpp): the
 * address sets' maps and the source filter the program keeps in dp_config.app. Plain C with
 * kernel UAPI types, included by both sides. */
#ifndef LINERATE_NFV_ABI_H
#define LINERATE_NFV_ABI_H

#include <linux/types.h>

#include "xdp/datapath/datapath_abi.h"

/* The filter in front of the address sets, so that most traffic's source needs no hash lookup:
 * the widest range of addresses with no bad source in it (the default set, 0.0.0.0 and
 * 255.255.255.255, leaves every other address in it: one compare a frame), and outside it a bit
 * per bad source (nfv_src_filter_bit); and whether there are good destinations at all, so that a
 * bad source needs no second hash lookup when there are none (the default: a bad-source frame
 * 80 -> 60 ns, bench/run xdp-cost). In the config's entry (dp_config.app), not a map of its own:
 * one array lookup a frame less (0.x ns). */
struct nfv_src_filter {
    __u32 clear_first; /* [clear_first, clear_first + clear_span] holds no bad source */
    __u32 clear_span;
    __u64 bits[64]; /* 4096 bits */
    __u32 good_dst; /* nfv_good_dst has entries */
    __u32 reserved;
};
static inline __u32 nfv_src_filter_bit(__u32 addr) {
    return (__u32)(addr * 0x9E3779B1u) >> 20;
}

/* The address sets (host-order __u32 keys, __u8 values): Click's BADSRC and GOODDST. */
#define NFV_BAD_SRC_MAP "nfv_bad_src"
#define NFV_GOOD_DST_MAP "nfv_good_dst"
#define NFV_MAX_ADDRESSES 1024

#endif
