/* clocksync frames in BPF, for the two programs that turn one around: the XDP master
 * (lib/xdp/datapath/clocksync.bpf.c: a request becomes its response, a warm-up its echo) and the
 * steering program (lib/xdp/steer/steer.bpf.c, STEER_FLAG_CS_TURN: a client's warm-up echo becomes
 * its request). Layout from cs_wire.h. BPF only. */
#ifndef LINERATE_XDP_CS_FRAME_BPF_H
#define LINERATE_XDP_CS_FRAME_BPF_H

#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "pkt/check_ipv4.h"
#include "pkt/mac_swap.h"
#include "xdp/datapath/cs_wire.h"

#define CS_UDP_HLEN 8
#define CS_UDP_LEN (CS_UDP_HLEN + LR_CS_HEADER_LEN)
#define CS_IPPROTO_UDP 17

/* The UDP header of a datagram to `port` in [data, data_end), with its IPv4 header in *ip_out;
 * 0 when the frame is no such datagram, read as pkt::locate_udp_payload reads up to the port:
 * IPv4 after up to two VLAN tags, version 4, IHL >= 5, UDP, not a non-first fragment, the UDP
 * header inside the frame. */
static __always_inline __u8* cs_udp_to_port(__u8* data, const __u8* data_end, __u16 port,
                                            __u8** ip_out) {
    __u16 type = 0;
    const __u32 l3 = lr_l3_offset(data, data_end, &type);
    if (l3 == 0 || type != LR_ETHERTYPE_IPV4) return 0;
    __u8* ip = data + l3;
    if (ip + LR_IPV4_MIN_HLEN > data_end) return 0;
    const __u32 ihl = (__u32)(ip[0] & 0x0F) * 4;
    if ((ip[0] >> 4) != 4 || ihl < LR_IPV4_MIN_HLEN || ip[9] != CS_IPPROTO_UDP ||
        (lr_load_be16(ip + 6) & 0x1FFF) != 0)
        return 0;
    __u8* udp = ip + ihl;
    if (udp + CS_UDP_HLEN > data_end || lr_load_be16(udp + 2) != port) return 0;
    *ip_out = ip;
    return udp;
}

static __always_inline void cs_store_be64(__u8* p, __u64 v) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    __builtin_memcpy(p, &v, 8);
}

static __always_inline __u64 cs_load_be64(const __u8* p) {
    __u64 v;
    __builtin_memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static __always_inline void cs_swap4(__u8* a, __u8* b) {
    __u8 t[4];
    __builtin_memcpy(t, a, 4);
    __builtin_memcpy(a, b, 4);
    __builtin_memcpy(b, t, 4);
}

/* The frame sent back whence it came as `type`, as apps/clocksync/cs_wire.cpp's turn_around does:
 * MACs, IPs and UDP ports swapped (the IPv4 checksum holds: the sum commutes), UDP checksum 0;
 * a frame that came to a group address goes back from `own_mac` (the master loop's
 * own_source_mac). Returns the clocksync header, 0 when the datagram is not all in the frame. */
static __always_inline __u8* cs_turn_around(__u8* data, const __u8* data_end, __u8* ip, __u8* udp,
                                            const __u8* own_mac, __u8 type) {
    if (udp + CS_UDP_LEN > data_end) return 0;
    lr_swap_macs(data, data_end);
    if (data[6] & 1) __builtin_memcpy(data + 6, own_mac, 6);
    cs_swap4(ip + 12, ip + 16);
    __u8 port[2];
    __builtin_memcpy(port, udp, 2);
    __builtin_memcpy(udp, udp + 2, 2);
    __builtin_memcpy(udp + 2, port, 2);
    udp[6] = udp[7] = 0;
    __u8* cs = udp + CS_UDP_HLEN;
    cs[LR_CS_OFF_TYPE] = type;
    return cs;
}

#endif
