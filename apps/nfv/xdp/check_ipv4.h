/* nfv's per-frame IPv4 check, written once in C for both datapaths: the C++ kernel
 * (apps/nfv/check_ip_header.cpp) includes it, and `clang -target bpf` compiles it into
 * apps/nfv/xdp/nfv.bpf.c. The walk to the header is lib/pkt/frame_walk.h's (up to two tags), the
 * header checksum lib/pkt/ipv4_checksum.h's. Every function works on a byte range
 * [data, data_end) and reads no byte before proving it lies inside with a pointer compare
 * against data_end: that is the form the BPF verifier accepts, so the bounds checks are the
 * same code on both tiers, not a second copy.
 *
 * lr_check_ipv4_header() is Click's CheckIPHeader (elements/ip/checkipheader.cc) in Click's
 * order: tiny, version, header length, length, checksum; the source test needs the sets of bad
 * sources and good destinations, which each tier keeps in its own structure (sorted vectors,
 * BPF hash maps), so the check stops with LR_IPV4_TEST_SOURCE and lr_ipv4_source_verdict()
 * turns the two lookups into the verdict. */
#ifndef LINERATE_NFV_CHECK_IPV4_H
#define LINERATE_NFV_CHECK_IPV4_H

#include <linux/types.h>

#include "pkt/frame_walk.h"
#include "pkt/ipv4_checksum.h"
#include "stats/drop_list.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The check's drop reasons, X(C_NAME, nfv's board key): LINERATE_NFV_DROPS
 * (apps/nfv/check_ip_header.hpp) in its order, which check_ip_header.hpp checks at compile time
 * (lib/stats/drop_list.h). */
#define LR_IPV4_DROPS(X)                            \
    X(LR_IPV4_NOT_IPV4, not_ipv4)                   \
    X(LR_IPV4_TINY_PACKET, tiny_packet)             \
    X(LR_IPV4_BAD_VERSION, bad_version)             \
    X(LR_IPV4_BAD_HEADER_LENGTH, bad_header_length) \
    X(LR_IPV4_BAD_LENGTH, bad_length)               \
    X(LR_IPV4_BAD_CHECKSUM, bad_checksum)           \
    X(LR_IPV4_BAD_SOURCE, bad_source)

/* The verdicts: the drop reasons from 0, then ok. */
enum lr_ipv4_verdict {
    LR_IPV4_DROPS(LR_DROP_ENUM_ITEM)
    /* A valid frame, to send on. */
    LR_IPV4_OK,
    /* Not a final verdict: the header is valid, the source test decides (src, dst are set). */
    LR_IPV4_TEST_SOURCE,
};

struct lr_ipv4_check {
    __u32 verdict; /* enum lr_ipv4_verdict */
    /* Valid IPv4: L2 header (with tags) + IP total length, i.e. Ethernet padding trimmed.
     * Passed non-IP frames and drops: the frame length. */
    __u32 out_len;
    /* Set with LR_IPV4_TEST_SOURCE: the addresses (host order) and the out_len if valid. */
    __u32 src, dst;
    __u32 ip_end;
};

/* The check from the IP header's length on: the header at `l3` is IPv4, its first 20 bytes are
 * inside the frame, its length `hlen` is at least 20. Always inlined, so that the common frame's
 * constants (l3 14, hlen 20) fold through it. */
static inline __attribute__((always_inline)) struct lr_ipv4_check lr_check_ipv4_at(
    const __u8* data, const __u8* data_end, __u32 l3, __u32 hlen, int verify_checksum) {
    struct lr_ipv4_check r = {LR_IPV4_BAD_LENGTH, (__u32)(data_end - data), 0, 0, 0};
    const __u8* ip = data + l3;
    const __u32 total = lr_load_be16(ip + 2);
    if (total > (__u32)(data_end - ip) || total < hlen) return r;
    if (verify_checksum && !lr_ipv4_checksum_ok(ip, data_end, hlen)) {
        r.verdict = LR_IPV4_BAD_CHECKSUM;
        return r;
    }
    r.verdict = LR_IPV4_TEST_SOURCE;
    r.ip_end = l3 + total;
    r.src = lr_load_be32(ip + 12);
    r.dst = lr_load_be32(ip + 16);
    return r;
}

/* The frame most traffic is: untagged IPv4 with a 20-byte header (version and IHL byte 0x45),
 * the header inside the frame. */
static inline __attribute__((always_inline)) int lr_ipv4_plain(const __u8* data,
                                                               const __u8* data_end) {
    return data + LR_ETH_HLEN + LR_IPV4_MIN_HLEN <= data_end &&
           lr_load_be16(data + 12) == LR_ETHERTYPE_IPV4 && data[LR_ETH_HLEN] == 0x45;
}

/* lr_check_ipv4_header of a frame lr_ipv4_plain holds for. */
static inline __attribute__((always_inline)) struct lr_ipv4_check lr_check_ipv4_plain(
    const __u8* data, const __u8* data_end, int verify_checksum) {
    return lr_check_ipv4_at(data, data_end, LR_ETH_HLEN, LR_IPV4_MIN_HLEN, verify_checksum);
}

/* CheckIPHeader on the frame [data, data_end), up to the source test. verify_checksum off is
 * Click's CHECKSUM false (CheckIPHeader2); pass_non_ip makes a non-IPv4 frame ok, whole. The
 * frame most traffic is (untagged, a 20-byte header: version and IHL byte 0x45) is tested first
 * and checked with the general path's own steps at constant offsets: no tag loop, no options
 * (about 2 ns of nfv's XDP program, bench/run xdp-cost). */
static inline __attribute__((always_inline)) struct lr_ipv4_check lr_check_ipv4_header(
    const __u8* data, const __u8* data_end, int verify_checksum, int pass_non_ip) {
    if (lr_ipv4_plain(data, data_end)) return lr_check_ipv4_plain(data, data_end, verify_checksum);
    struct lr_ipv4_check r = {LR_IPV4_TINY_PACKET, (__u32)(data_end - data), 0, 0, 0};
    __u16 type = 0;
    const __u32 l3 = lr_l3_offset(data, data_end, LR_MAX_VLAN_TAGS, &type);
    if (l3 == 0) return r;
    if (type != LR_ETHERTYPE_IPV4) {
        r.verdict = pass_non_ip ? LR_IPV4_OK : LR_IPV4_NOT_IPV4;
        return r;
    }
    const __u8* ip = data + l3;
    if (ip + LR_IPV4_MIN_HLEN > data_end) return r;
    if ((ip[0] >> 4) != 4) {
        r.verdict = LR_IPV4_BAD_VERSION;
        return r;
    }
    const __u32 hlen = (__u32)(ip[0] & 0x0F) * 4;
    if (hlen < LR_IPV4_MIN_HLEN) {
        r.verdict = LR_IPV4_BAD_HEADER_LENGTH;
        return r;
    }
    return lr_check_ipv4_at(data, data_end, l3, hlen, verify_checksum);
}

/* The final verdict of a check that stopped at LR_IPV4_TEST_SOURCE, from the caller's two
 * lookups. RFC 1812 5.3.7, as Click: a bad source is fine when the packet is for us (a good
 * destination). A valid frame's out_len drops the Ethernet padding. */
static inline void lr_ipv4_test_source(struct lr_ipv4_check* r, int src_is_bad, int dst_is_good) {
    if (src_is_bad && !dst_is_good) {
        r->verdict = LR_IPV4_BAD_SOURCE;
        return;
    }
    r->verdict = LR_IPV4_OK;
    r->out_len = r->ip_end;
}

#ifdef __cplusplus
}
#endif

#endif
