/* clocksync frames in BPF, for the two programs that turn one around: the XDP master
 * (apps/clocksync/xdp/clocksync.bpf.c: a request becomes its response, a warm-up its echo) and the
 * client's steering hook (apps/clocksync/xdp/cs_steer_hook.h, --xdp-turn: a client's warm-up echo
 * becomes its request). Layout from apps/clocksync/cs_wire.h. BPF only. */
#ifndef LINERATE_CLOCKSYNC_CS_FRAME_BPF_H
#define LINERATE_CLOCKSYNC_CS_FRAME_BPF_H

#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "clocksync/cs_wire.h"
#include "pkt/frame_walk.h"
#include "pkt/mac_swap.h"

#define CS_UDP_LEN (LR_UDP_HLEN + LR_CS_HEADER_LEN)

/* The UDP header of a datagram to `port` in [data, data_end), with its IPv4 header in *ip_out;
 * 0 when the frame is no such datagram, walked as pkt::locate_udp_payload walks up to the port
 * (lib/pkt/frame_walk.h: up to two VLAN tags, a first fragment allowed, judged by the caller). */
static __always_inline __u8* cs_udp_to_port(__u8* data, const __u8* data_end, __u16 port,
                                            __u8** ip_out) {
    __u8* ip = (__u8*)lr_walk_ipv4(data, data_end, LR_MAX_VLAN_TAGS);
    if (!ip) return 0;
    __u8* udp = (__u8*)lr_walk_udp(ip, data_end, LR_FIRST_FRAGMENT_ALLOWED);
    if (!udp || lr_load_be16(udp + 2) != port) return 0;
    *ip_out = ip;
    return udp;
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
    __u8* cs = udp + LR_UDP_HLEN;
    cs[LR_CS_OFF_TYPE] = type;
    return cs;
}

#endif
