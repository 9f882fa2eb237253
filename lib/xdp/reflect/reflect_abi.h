/* Counters of lib/xdp/reflect/reflect.bpf.c (one PERCPU_ARRAY slot), read by bench/xdp_reflect. */
#ifndef LINERATE_BPF_REFLECT_ABI_H
#define LINERATE_BPF_REFLECT_ABI_H

#include <linux/types.h>

struct reflect_counters {
    __u64 reflected; /* sent back with XDP_TX */
    __u64 bytes;     /* of the reflected frames */
    __u64 too_short; /* shorter than an Ethernet header: dropped */
};

#define REFLECT_COUNTERS_MAP "reflect_counters"

#endif
