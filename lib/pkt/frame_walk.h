/* The one walk of a frame's headers, Ethernet (with VLAN/QinQ tags), IPv4 and UDP, written once in
 * C for every reader: the C++ parsers (pkt/headers.hpp's parse_l2, pkt/udp_payload.hpp, the apps'
 * kernels) include it, and `clang -target bpf` compiles it into every XDP program (the steering
 * filter, the apps' programs). Every function works on a byte range [data, data_end) and reads no
 * byte before LR_INSIDE proves it inside: on BPF a pointer compare against data_end, the form the
 * BPF verifier accepts, so the bounds checks are the same tests on both tiers.
 *
 * Where readers differ, the difference is a named parameter, policy at the call:
 * - max_tags: LR_MAX_VLAN_TAGS (up to two tags: the apps' parsers) or LR_UNTAGGED_ONLY (the
 *   steering filter, docs/xdp-steering.md);
 * - fragments: LR_FIRST_FRAGMENT_ALLOWED (only a non-first fragment is refused, it carries no UDP
 *   header; the caller judges a first one, e.g. malformed: no reassembly) or LR_NO_FRAGMENTS
 *   (any fragment refused: the steering filter leaves them to the kernel, which reassembles). */
#ifndef LINERATE_PKT_FRAME_WALK_H
#define LINERATE_PKT_FRAME_WALK_H

#include <linux/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LR_MAC_LEN 6
#define LR_ETH_HLEN 14
#define LR_VLAN_TAG_LEN 4
#define LR_IPV4_MIN_HLEN 20
#define LR_UDP_HLEN 8
#define LR_ETHERTYPE_IPV4 0x0800
#define LR_ETHERTYPE_VLAN 0x8100
#define LR_ETHERTYPE_QINQ 0x88A8
#define LR_IPPROTO_TCP 6
#define LR_IPPROTO_UDP 17

/* max_tags: how many VLAN/QinQ tags a walk skips. */
#define LR_MAX_VLAN_TAGS 2
#define LR_UNTAGGED_ONLY 0

/* fragments: the IPv4 flags/fragment-offset bits that refuse a datagram (the mask on that word). */
enum lr_fragment_rule {
    LR_FIRST_FRAGMENT_ALLOWED = 0x1FFF, /* fragment offset only: a non-first fragment */
    LR_NO_FRAGMENTS = 0x3FFF,           /* MF or an offset: any fragment (DF allowed) */
};
/* The MF bit: a first fragment, for a caller that allowed it and judges it itself. */
#define LR_IPV4_MORE_FRAGMENTS 0x2000

/* The 16-, 32- and 64-bit words the walks read, as they lie in memory (lr_load16, ...) and in
 * network order (lr_load_be16, ...). Off BPF a memcpy (any alignment). On BPF one load through
 * the word's own type, which claims the word's alignment: BPF's clang turns a memcpy into byte
 * loads, and splits a load it thinks unaligned into two, not knowing that the verifier takes
 * unaligned packet loads where the CPU does (x86-64, arm64). IP headers start at even offsets
 * from the frame; their 32-bit words lie at 2 mod 4 behind an untagged Ethernet header. */
#ifdef __bpf__
#define LR_LOAD_WORD(TYPE, p) return *(const TYPE*)(p)
#else
#define LR_LOAD_WORD(TYPE, p)          \
    TYPE v;                            \
    __builtin_memcpy(&v, p, sizeof v); \
    return v
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LR_BE_TO_HOST(BITS, word) __builtin_bswap##BITS(word)
#else
#define LR_BE_TO_HOST(BITS, word) (word)
#endif

static inline __u16 lr_load16(const __u8* p) {
    LR_LOAD_WORD(__u16, p);
}
static inline __u32 lr_load32(const __u8* p) {
    LR_LOAD_WORD(__u32, p);
}
static inline __u64 lr_load64(const __u8* p) {
    LR_LOAD_WORD(__u64, p);
}
static inline __u16 lr_load_be16(const __u8* p) {
    return LR_BE_TO_HOST(16, lr_load16(p));
}
static inline __u32 lr_load_be32(const __u8* p) {
    return LR_BE_TO_HOST(32, lr_load32(p));
}
static inline __u64 lr_load_be64(const __u8* p) {
    return LR_BE_TO_HOST(64, lr_load64(p));
}
static inline void lr_store_be64(__u8* p, __u64 v) {
    v = LR_BE_TO_HOST(64, v);
    __builtin_memcpy(p, &v, 8);
}
#undef LR_LOAD_WORD
#undef LR_BE_TO_HOST

/* Whether the `n` bytes at p lie inside the frame that ends at data_end. On BPF a pointer compare,
 * the form the verifier proves a packet range from; off BPF the bytes left, a signed compare the
 * compiler folds with the caller's own length tests (a pointer compare costs a lea each). */
#ifdef __bpf__
#define LR_INSIDE(p, n, data_end) ((p) + (n) <= (data_end))
#else
#define LR_INSIDE(p, n, data_end) ((data_end) - (p) >= (long)(n))
#endif

/* Where the frame's L3 header starts after up to `max_tags` VLAN/QinQ tags, with the ethertype
 * after them in *type; 0 when the frame ends inside the Ethernet or tag headers. */
static inline __attribute__((always_inline)) __u32 lr_l3_offset(const __u8* data,
                                                                const __u8* data_end,
                                                                __u32 max_tags, __u16* type) {
    __u32 off = 2 * LR_MAC_LEN;
    if (!LR_INSIDE(data, LR_ETH_HLEN, data_end)) return 0;
    __u16 t = lr_load_be16(data + off);
#ifdef __bpf__
#pragma unroll
#endif
    for (__u32 tags = 0; tags < max_tags; ++tags) {
        if (t != LR_ETHERTYPE_VLAN && t != LR_ETHERTYPE_QINQ) break;
        off += LR_VLAN_TAG_LEN;
        if (!LR_INSIDE(data, off + 2, data_end)) return 0;
        t = lr_load_be16(data + off);
    }
    *type = t;
    return off + 2;
}

/* The IPv4 header of the frame after up to `max_tags` tags: ethertype IPv4, its first 20 bytes
 * inside the frame, version 4, IHL at least 5. 0 when the frame is no such thing. */
static inline __attribute__((always_inline)) const __u8* lr_walk_ipv4(const __u8* data,
                                                                      const __u8* data_end,
                                                                      __u32 max_tags) {
    __u16 type = 0;
    const __u32 l3 = lr_l3_offset(data, data_end, max_tags, &type);
    if (l3 == 0 || type != LR_ETHERTYPE_IPV4) return 0;
    const __u8* ip = data + l3;
    if (!LR_INSIDE(ip, LR_IPV4_MIN_HLEN, data_end)) return 0;
    if ((ip[0] >> 4) != 4 || (ip[0] & 0x0F) < LR_IPV4_MIN_HLEN / 4) return 0;
    return ip;
}

/* The UDP header of the IPv4 datagram at `ip` (lr_walk_ipv4's): protocol UDP, not refused by the
 * `fragments` rule, the 8-byte header inside the frame. 0 otherwise. */
static inline __attribute__((always_inline)) const __u8* lr_walk_udp(
    const __u8* ip, const __u8* data_end, enum lr_fragment_rule fragments) {
    if (ip[9] != LR_IPPROTO_UDP || (lr_load_be16(ip + 6) & fragments) != 0) return 0;
    const __u8* udp = ip + (__u32)(ip[0] & 0x0F) * 4;
    if (!LR_INSIDE(udp, LR_UDP_HLEN, data_end)) return 0;
    return udp;
}

#ifdef __cplusplus
}
#endif

#endif
