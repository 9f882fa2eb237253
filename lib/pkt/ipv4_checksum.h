/* The IPv4 header checksum test, written once in C: the C++ checks (pkt/checksum.hpp) and every
 * XDP program that verifies a header (an app's header check, a time master's answer) compile
 * it. As pkt/frame_walk.h, it reads no byte before a pointer compare against data_end. */
#ifndef LINERATE_PKT_IPV4_CHECKSUM_H
#define LINERATE_PKT_IPV4_CHECKSUM_H

#include <linux/types.h>

#include "pkt/frame_walk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a sum of 16-bit words (any order of bytes, any grouping into wider words; not 0) is a
 * multiple of 0xFFFF, i.e. folds to the one's-complement 0xFFFF a valid checksum gives, without
 * folding it: for an odd d, x is a multiple of d iff x times d's inverse mod 2^64 is at most
 * (2^64 - 1) / d (Granlund and Montgomery, PLDI 1994, section 9). One multiply and a compare
 * where folds take eight operations, and where `% 0xFFFF` may be a 64-bit division (GCC emitted
 * one in an app's burst loop). lib/pkt/checksum.hpp's word_sum_verifies is this. */
static inline int lr_word_sum_verifies(__u64 sum) {
    return sum * 0xFFFEFFFEFFFEFFFFull <= 0x0001000100010001ull;
}

/* The IPv4 header checksum over `hlen` bytes (20..60, all inside the frame; the caller has proven
 * the first 20 inside with a compare against data_end) verifies: the one's-complement sum of its
 * words is 0xFFFF, i.e. their plain sum is a non-zero multiple of 0xFFFF (2^16 = 1 mod 0xFFFF,
 * and the first word, version and IHL, is not zero, so neither is the sum). One's-complement sums
 * don't depend on byte order (RFC 1071 2(B)), and 0xFFFF reads the same both ways, so the words are
 * added as loaded, unswapped. The 20 bytes every header has are summed without a compare each (the
 * verifier knows them inside from the caller's; clang does not fold the compares: 4 of them, a
 * nanosecond of a header check's XDP program, bench/run xdp-cost); the options in a loop of constant trip
 * count with no early exit: clang unrolls it for BPF, so every bounds check is a constant offset
 * from `ip` (a loop counter in the compare makes clang move pkt_end instead, which the verifier
 * rejects). Always inlined: clang may otherwise make it a BPF-to-BPF call, 8 ns on a header check's program.
 */
static inline __attribute__((always_inline)) int lr_ipv4_checksum_ok(const __u8* ip,
                                                                     const __u8* data_end,
                                                                     __u32 hlen) {
    __u64 sum = 0;
    int inside = 1;
#ifdef __bpf__
#pragma unroll
#endif
    for (__u32 i = 0; i < LR_IPV4_MIN_HLEN; i += 4) sum += lr_load32(ip + i);
#ifdef __bpf__
#pragma unroll
#endif
    for (__u32 i = LR_IPV4_MIN_HLEN; i < 60; i += 4) {
        if (i < hlen) {
            if (ip + i + 4 > data_end) /* not reached: total >= hlen was checked */
                inside = 0;
            else
                sum += (__u32)lr_load16(ip + i) + lr_load16(ip + i + 2);
        }
    }
    return inside && lr_word_sum_verifies(sum);
}

#ifdef __cplusplus
}
#endif

#endif
