/* Whether a frame is one the app serves (enum steer_mode of steer_abi.h): the steering program's
 * filter (lib/xdp/steer/steer.bpf.c), and the apps' XDP datapath programs'
 * (lib/xdp/datapath/datapath.bpf.h), so that
 * `--xdp-steer` decides the same on both datapaths. BPF only. */
#ifndef LINERATE_BPF_STEER_MATCH_H
#define LINERATE_BPF_STEER_MATCH_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "xdp/steer/steer_abi.h"

static __always_inline int lr_steer_matches(const struct steer_config* cfg, void* data,
                                            void* data_end) {
    if (cfg->mode == STEER_ALL) return 1;
    if (cfg->mode != STEER_IPV4 && cfg->mode != STEER_UDP_PORT) return 0;

    struct ethhdr* eth = data;
    if ((void*)(eth + 1) > data_end) return 0;
    /* One 16-bit load: ethhdr is packed, so eth->h_proto would be read a byte at a time. */
    if (*(const __u16*)((const __u8*)data + 12) != bpf_htons(ETH_P_IP)) return 0;
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > data_end) return 0;
    /* Version and IHL from the first byte (iphdr's bitfields follow the host's bit order). */
    __u8 version_ihl = *(__u8*)ip;
    __u32 ihl = version_ihl & 0x0F;
    if ((version_ihl >> 4) != 4 || ihl < 5) return 0;
    if (cfg->mode == STEER_IPV4) return 1;

    /* Fragments carry no UDP header past the first; the kernel reassembles them. */
    if (ip->protocol != IPPROTO_UDP || (ip->frag_off & bpf_htons(0x3FFF)) != 0) return 0;
    struct udphdr* udp = (void*)ip + ihl * 4;
    if ((void*)(udp + 1) > data_end) return 0;
    return udp->dest == bpf_htons(cfg->udp_port);
}

#endif
