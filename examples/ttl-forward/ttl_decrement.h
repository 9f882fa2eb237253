/* ttl-forward's kernel, written once in C for both tiers: ttl.hpp's decrement_ttl (C++, the DPDK
 * path) and xdp/ttl.bpf.c (`clang -target bpf`) call it, as linerate's own kernels share
 * pkt/frame_walk.h and pkt/mac_swap.h. An untagged IPv4 frame with its TTL above 1 gets the TTL
 * one lower and the header checksum patched (RFC 1624, incremental), as a router's forwarding
 * path does; anything else is a reason, in the order of ttl.hpp's TTL_FORWARD_DROPS. */
#ifndef TTL_FORWARD_TTL_DECREMENT_H
#define TTL_FORWARD_TTL_DECREMENT_H

#include "pkt/frame_walk.h"

/* The reasons in TTL_FORWARD_DROPS' order (ttl.hpp checks it), then the frame to send on. */
enum ttl_verdict { TTL_NOT_IPV4, TTL_TRUNCATED, TTL_EXPIRED, TTL_FORWARD };

/* The frame [data, data_end), its first bytes contiguous. */
static inline __attribute__((always_inline)) enum ttl_verdict ttl_decrement(__u8* data,
                                                                            const __u8* data_end) {
    __u16 type = 0;
    if (lr_l3_offset(data, data_end, LR_UNTAGGED_ONLY, &type) == 0) return TTL_TRUNCATED;
    if (type != LR_ETHERTYPE_IPV4) return TTL_NOT_IPV4;
    __u8* ip = data + LR_ETH_HLEN;
    if (!LR_INSIDE(ip, LR_IPV4_MIN_HLEN, data_end)) return TTL_TRUNCATED;
    if (ip[8] <= 1) return TTL_EXPIRED;
    /* HC' = ~(~HC + ~m + m') over the 16-bit word holding TTL and protocol: m' = m - 0x0100. */
    const __u32 old_word = (__u32)ip[8] << 8 | ip[9];
    const __u32 new_word = (old_word - 0x0100) & 0xFFFF;
    __u32 sum = (~(__u32)lr_load_be16(ip + 10) & 0xFFFF) + (~old_word & 0xFFFF) + new_word;
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    ip[8] -= 1;
    ip[10] = (__u8)(~sum >> 8);
    ip[11] = (__u8)~sum;
    return TTL_FORWARD;
}

#endif /* TTL_FORWARD_TTL_DECREMENT_H */
