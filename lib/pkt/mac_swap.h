/* The MAC swap of every app that sends a frame back where it came from, written once in C for
 * both datapaths: the apps' C++ kernels include it, and `clang -target bpf` compiles it into
 * their XDP programs (apps/<app>/xdp/). As
 * lib/pkt/frame_walk.h, it reads no byte before a pointer compare against data_end proves it
 * lies inside the frame, the form the BPF verifier accepts. */
#ifndef LINERATE_PKT_MAC_SWAP_H
#define LINERATE_PKT_MAC_SWAP_H

#include <linux/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Swaps source and destination MAC of the frame [data, data_end); 0 (nothing done) when it is
 * shorter than the two addresses. Off BPF, a frame with 16 bytes takes one 16-byte load, a byte
 * shuffle and a store (pshufb on x86, tbl on Arm); BPF has no vector registers, so the program
 * moves the addresses as words. */
static inline int lr_swap_macs(__u8* data, const __u8* data_end) {
#ifndef __bpf__
    /* The length as an integer, and first: a caller that has tested its frame's length
     * (a reflector's len >= 16) lets the compiler drop this test and the pointer compare below
     * (which it cannot fold: 4 instructions a frame in a reflector's loop, callgrind). */
    if (data_end - data >= 16) {
        typedef __u8 lr_bytes16 __attribute__((vector_size(16)));
        lr_bytes16 v;
        __builtin_memcpy(&v, data, sizeof v);
        v = __builtin_shufflevector(v, v, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 12, 13, 14, 15);
        __builtin_memcpy(data, &v, sizeof v);
        return 1;
    }
#endif
    if (data + 12 > data_end) return 0;
#ifdef __bpf__
    /* As six 16-bit words (the frame starts at an even address): BPF's clang turns the memcpy
     * form into byte loads and stores, 36 instructions instead of 12. */
    typedef __u16 lr_u16_even __attribute__((aligned(2)));
    lr_u16_even* w = (lr_u16_even*)data;
    const __u16 d0 = w[0], d1 = w[1], d2 = w[2];
    w[0] = w[3];
    w[1] = w[4];
    w[2] = w[5];
    w[3] = d0;
    w[4] = d1;
    w[5] = d2;
#else
    __u8 dst[6];
    __builtin_memcpy(dst, data, 6);
    __builtin_memmove(data, data + 6, 6);
    __builtin_memcpy(data + 6, dst, 6);
#endif
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif
