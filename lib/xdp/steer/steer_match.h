/* Whether a frame is one the app serves (enum steer_mode of steer_abi.h): the steering program's
 * filter (lib/xdp/steer/steer.bpf.c), and the apps' XDP datapath programs'
 * (lib/xdp/datapath/datapath.bpf.h), so that
 * `--xdp-steer` decides the same on both datapaths. BPF only. */
#ifndef LINERATE_BPF_STEER_MATCH_H
#define LINERATE_BPF_STEER_MATCH_H

#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

#include "pkt/frame_walk.h"
#include "xdp/steer/steer_abi.h"

/* The walk is lib/pkt/frame_walk.h's with the filter's policy: untagged frames only (a tagged
 * frame is the kernel's: docs/xdp-steering.md), and no fragment of any kind (the kernel
 * reassembles them; the apps' own parsers allow a first fragment and count it malformed). */
static __always_inline int lr_steer_matches(const struct steer_config* cfg, void* data,
                                            void* data_end) {
    if (cfg->mode == STEER_ALL) return 1;
    if (cfg->mode != STEER_IPV4 && cfg->mode != STEER_UDP_PORT) return 0;
    const __u8* ip = lr_walk_ipv4(data, data_end, LR_UNTAGGED_ONLY);
    if (!ip) return 0;
    if (cfg->mode == STEER_IPV4) return 1;
    const __u8* udp = lr_walk_udp(ip, data_end, LR_NO_FRAGMENTS);
    return udp && lr_load_be16(udp + 2) == cfg->udp_port;
}

#endif
