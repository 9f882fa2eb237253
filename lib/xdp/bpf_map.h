/* How linerate's XDP programs declare their maps, once for all of them (steer/,
 * datapath/, reflect/, xdp_tx/): every map is keyed by a __u32 (an array index, a queue, an
 * IPv4 address, an ifindex). BPF side only: include it from *.bpf.c and *.bpf.h files. */
#ifndef LINERATE_XDP_BPF_MAP_H
#define LINERATE_XDP_BPF_MAP_H

#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

/* A map in libbpf's BTF-defined form (section .maps) named NAME: KIND (BPF_MAP_TYPE_*), at most
 * ENTRIES entries of VALUE (a type) under a __u32 key. The user side finds it by NAME. */
#define LR_BPF_MAP(NAME, KIND, ENTRIES, VALUE) \
    struct {                                   \
        __uint(type, KIND);                    \
        __uint(max_entries, ENTRIES);          \
        __type(key, __u32);                    \
        __type(value, VALUE);                  \
    } NAME SEC(".maps")

#endif
