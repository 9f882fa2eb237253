/* clocksync's master on the XDP datapath: a request becomes its response in the driver, before
 * any socket. The frame is judged as the C++ master's parse_cs_packet judges it
 * (apps/clocksync/cs_wire.cpp, layout from apps/clocksync/cs_wire.h): not an IPv4/UDP datagram to
 * the port (or too short to tell): XDP_PASS, the kernel's (ARP, ping, other ports). Then, counted
 * by reason and dropped: malformed, bad IP checksum, bad UDP checksum (one the sender left to TX
 * offload is taken unless strict), bad magic, bad version, a warm-up frame that asks for no echo,
 * not a request. A warm-up frame that asks for its echo goes back as make_warmup_echo sends it
 * (turned around as a response, type warm-up echo, no stamps). A request is answered as
 * make_response answers it: MACs, IPs and UDP ports swapped, type
 * response, t2 and t3 written, everything else echoed, the IPv4 checksum unchanged (swapping the
 * two address words leaves the sum), the UDP checksum 0 (none, allowed in IPv4: t2 and t3 change
 * the payload, and the two datapaths answer byte for byte alike). XDP_TX.
 *
 * The stamps: t2 is read first thing, t3 last before XDP_TX (only the frame's count comes
 * after it), both with bpf_ktime_get_ns(), the kernel's CLOCK_MONOTONIC (docs/clocksync.md: why
 * that clock, and why the bound stays sound).
 *
 * Before any of that, lib/xdp/datapath/datapath.bpf.h's dp_begin: a frame the app does not serve
 * (--xdp-steer) goes to the kernel, a multi-buffer one to the slow path (the C++ master behind the
 * queue's AF_XDP socket). A datagram longer than the clocksync header goes there too (its checksum
 * would cover bytes at offsets the program does not bound; the client never sends one). */
#include <linux/bpf.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "clocksync/xdp/cs_frame.bpf.h"
#include "clocksync/xdp/cs_xdp_abi.h"
#include "pkt/ipv4_checksum.h"
#include "xdp/datapath/datapath.bpf.h"

LR_BPF_MAP(cs_config, BPF_MAP_TYPE_ARRAY, 1, struct cs_xdp_config);

/* cs_judge's verdicts besides the drop reasons of enum lr_cs_drop. */
#define CS_ANSWER 100
#define CS_SLOW 101
#define CS_ECHO 102

/* A 32-bit one's-complement sum folded to 16 bits. */
static __always_inline __u32 cs_fold(__u32 sum) {
    sum = (sum & 0xFFFF) + (sum >> 16);
    return (sum & 0xFFFF) + (sum >> 16);
}

/* The UDP checksum of the CS_UDP_LEN-byte datagram at `udp` verifies, or is none (0), or (with
 * accept_offloaded) holds the pseudo-header sum alone: what a Linux sender with TX checksum
 * offload leaves (CHECKSUM_PARTIAL), which reaches us unfinished from a veth or a local socket
 * (pkt::udp_checksum_offloaded). Words are summed as they lie in memory (RFC 1071 2(B)); a
 * byte swap multiplies by 256 mod 0xFFFF, so equality mod 0xFFFF holds in either order. */
static __always_inline int cs_udp_checksum_ok(const __u8* ip, const __u8* udp, const __u8* data_end,
                                              int accept_offloaded) {
    if (udp + CS_UDP_LEN > data_end) return 0;
    const __u32 field = lr_load16(udp + 6);
    if (field == 0) return 1;
    const __u32 pseudo =
        cs_fold((__u32)lr_load16(ip + 12) + lr_load16(ip + 14) + lr_load16(ip + 16) +
                lr_load16(ip + 18) + bpf_htons(LR_IPPROTO_UDP) + lr_load16(udp + 4));
    __u32 sum = pseudo;
#pragma unroll
    for (int i = 0; i < CS_UDP_LEN; i += 2) sum += lr_load16(udp + i);
    if (cs_fold(sum) == 0xFFFF) return 1;
    return accept_offloaded && pseudo % 0xFFFF == field % 0xFFFF;
}

/* What a datagram to the port is: CS_ANSWER (a request), CS_ECHO (a warm-up frame asking for its
 * echo), CS_SLOW, or its drop reason, in the C++ master's order. */
static __always_inline int cs_judge(const __u8* ip, const __u8* udp, const __u8* data_end,
                                    __u32 flags, const struct cs_xdp_config* config) {
    const __u32 ihl = (__u32)(ip[0] & 0x0F) * 4;
    const __u32 total = lr_load_be16(ip + 2), udp_len = lr_load_be16(udp + 4);
    /* total < room is fine: Ethernet pads short frames. A first fragment: no reassembly. */
    if ((lr_load_be16(ip + 6) & LR_IPV4_MORE_FRAGMENTS) != 0 || total < ihl + LR_UDP_HLEN ||
        total > (__u32)(data_end - ip) || udp_len < CS_UDP_LEN || udp_len > total - ihl)
        return LR_CS_MALFORMED;
    if (udp_len != CS_UDP_LEN) return CS_SLOW;
    if (udp + CS_UDP_LEN > data_end) return LR_CS_MALFORMED; /* not reached: udp_len fits */
    if (flags & DP_VERIFY_CHECKSUM) {
        if (!lr_ipv4_checksum_ok(ip, data_end, ihl)) return LR_CS_BAD_IP_CHECKSUM;
        if (!cs_udp_checksum_ok(ip, udp, data_end, config->accept_offloaded))
            return LR_CS_BAD_UDP_CHECKSUM;
    }
    const __u8* cs = udp + LR_UDP_HLEN;
    if (lr_load_be16(cs + LR_CS_OFF_MAGIC) != LR_CS_MAGIC) return LR_CS_BAD_MAGIC;
    if (cs[LR_CS_OFF_VERSION] != LR_CS_VERSION) return LR_CS_BAD_VERSION;
    /* A response (or any other type) is no request: the C++ master's bad_type too. */
    if (cs[LR_CS_OFF_TYPE] == LR_CS_WARMUP)
        return (lr_load_be16(cs + LR_CS_OFF_RESERVED) & LR_CS_FLAG_ECHO) ? CS_ECHO
                                                                         : LR_CS_DROP_WARMUP;
    if (cs[LR_CS_OFF_TYPE] != LR_CS_REQUEST) return LR_CS_BAD_TYPE;
    return CS_ANSWER;
}

SEC("xdp.frags")
int xsk_def_prog(struct xdp_md* ctx) {
    /* First: the frame is here (and was a little earlier: a late receive stamp is sound). */
    const __u64 t2 = bpf_ktime_get_ns();
    const struct dp_start start = dp_begin(ctx);
    const __u32 flags = start.flags;
    if (start.route != DP_SLOTS) return dp_finish(ctx, flags, start.route);
    __u32 key = 0;
    const struct cs_xdp_config* config = bpf_map_lookup_elem(&cs_config, &key);
    if (!config) return dp_finish(ctx, flags, DP_PASSED); /* not reached: an array's entry */
    __u8* data = (__u8*)(long)ctx->data;
    const __u8* data_end = (const __u8*)(long)ctx->data_end;
    __u8* ip = 0;
    __u8* udp = cs_udp_to_port(data, data_end, config->udp_port, &ip);
    if (!udp) return dp_finish(ctx, flags, DP_PASSED);
    const int verdict = cs_judge(ip, udp, data_end, flags, config);
    if (verdict == CS_SLOW) return dp_finish(ctx, flags, DP_SLOW_PATH);
    if (verdict == CS_ECHO) {
        cs_turn_around(data, data_end, ip, udp, config->mac, LR_CS_WARMUP_ECHO);
        return dp_finish(ctx, flags, DP_TX);
    }
    if (verdict != CS_ANSWER) return dp_finish(ctx, flags, DP_DROP_FIRST + verdict);
    __u8* cs = cs_turn_around(data, data_end, ip, udp, config->mac, LR_CS_RESPONSE);
    if (!cs) return dp_finish(ctx, flags, DP_TX); /* not reached: judged */
    lr_store_be64(cs + LR_CS_OFF_T2, t2);
    /* Last but the count: the frame leaves after this (an early transmit stamp is sound). */
    lr_store_be64(cs + LR_CS_OFF_T3, bpf_ktime_get_ns());
    return dp_finish(ctx, flags, DP_TX);
}
