/* linerate's XDP steering program: hands the frames the app serves to the AF_XDP socket of the
 * RX queue they arrived on and passes everything else (ARP, ICMP, ssh, other UDP ports...) to
 * the kernel, so an app shares the interface with the host's own stack. The app writes the
 * filter into steer_config and reads steer_counters (lib/xdp). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "steer_abi.h"

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, STEER_MAX_QUEUES);
    __type(key, __u32);
    __type(value, __u32);
} xsks_map SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct steer_config);
} steer_config SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, STEER_MAX_QUEUES);
    __type(key, __u32);
    __type(value, struct steer_counters);
} steer_counters SEC(".maps");

static __always_inline int matches(const struct steer_config* cfg, void* data, void* data_end) {
    if (cfg->mode == STEER_ALL) return 1;
    if (cfg->mode != STEER_IPV4 && cfg->mode != STEER_UDP_PORT) return 0;

    struct ethhdr* eth = data;
    if ((void*)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP)) return 0;
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

/* Named xsk_def_prog with libxdp's version tag below: net_af_xdp vdevs that were not given
 * xdp_prog= (the further queues of an interface, one vdev each) then adopt this program as
 * libxdp's own and insert their sockets into xsks_map instead of failing to attach theirs.
 * No global variables: libxdp would take a .data/.bss map for its reference count. */
SEC("xdp")
int xsk_def_prog(struct xdp_md* ctx) {
    void* data = (void*)(long)ctx->data;
    void* data_end = (void*)(long)ctx->data_end;
    __u32 key = 0;
    __u32 queue = ctx->rx_queue_index;
    if (queue >= STEER_MAX_QUEUES) queue = STEER_MAX_QUEUES - 1;

    struct steer_counters* c = bpf_map_lookup_elem(&steer_counters, &queue);
    struct steer_config* cfg = bpf_map_lookup_elem(&steer_config, &key);
    if (!c || !cfg) return XDP_PASS;

    if (!matches(cfg, data, data_end)) {
        c->passed++;
        return XDP_PASS;
    }
    /* XDP_PASS as the fallback action: a queue without a socket hands the frame to the kernel. */
    int action = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
    if (action == XDP_REDIRECT)
        c->redirected++;
    else
        c->unclaimed++;
    return action;
}

char _license[] SEC("license") = "Dual BSD/GPL";
__uint(xsk_prog_version, 1) SEC("xdp_metadata");
