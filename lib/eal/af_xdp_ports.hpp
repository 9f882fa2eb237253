#pragma once
// `--af-xdp IFACE[,queues=N]`: the net_af_xdp ports for an interface's queues, one vdev per queue
// (`start_queue=i,queue_count=1`), created after EAL init so that the default queue count can be
// the number of workers. One vdev per queue works on every interface, including those (veth) whose
// queues cannot be taken together (no "combined" channels), and lets queue i go to worker i.
#include <cstdint>
#include <string>
#include <vector>

namespace linerate::eal {

struct AfXdpSpec {
    std::string iface;
    unsigned queues = 0;  // 0: one per worker
    // Extra `key=value` devargs appended to every vdev of the interface. No xdp_prog=: the PMD
    // would attach that program through netlink, where it outlives a killed process; the vdevs
    // adopt the program the app attached beforehand with a BPF link (AfXdpSteering, XdpDatapath).
    std::vector<std::string> devargs;
};

// "IFACE[,queues=N]". Throws std::invalid_argument.
AfXdpSpec parse_af_xdp_spec(const std::string& spec);

// Throws std::invalid_argument (a usage error, before the EAL) when spec.iface is no interface
// of this network namespace: the vdev would only say its socket could not be opened.
void check_af_xdp_interface(const AfXdpSpec& spec);

// The devargs of the vdev that takes queue `queue` of spec.iface: the one place they are built.
std::string af_xdp_devargs(const AfXdpSpec& spec, unsigned queue);

// EAL args when the user gave none (default_eal_args): one worker lcore per queue of the widest
// interface (queues=N, else 1), spread over the CPUs this process may run on.
std::vector<std::string> af_xdp_mode_eal_args(const std::vector<AfXdpSpec>& specs);

// A port made for one queue of an interface; `queue` is the interface's queue index, and the
// worker that polls it.
struct AfXdpPort {
    uint16_t port;
    unsigned queue;
    std::string iface;
};

// Creates the vdevs of every spec (rte_vdev_init), `workers` queues each unless the spec says how
// many. Throws std::runtime_error naming the interface and queue that failed. libxdp's warning
// that program refcounts are off (our steering program has none: a BPF link of this process
// holds it, see runtime/xdp_steer_feature.cpp) is left out; its other lines are not.
std::vector<AfXdpPort> create_af_xdp_ports(const std::vector<AfXdpSpec>& specs, unsigned workers);

// The kernel interface behind a net_af_xdp port (its iface= devarg), or "" for other ports: the
// one way to tell a port's interface once the ports exist.
std::string af_xdp_interface(uint16_t port_id);

// The AF_XDP sockets this process has open (fds), to tell which ones a queue setup created.
std::vector<int> af_xdp_socket_fds();

// Frames the kernel dropped inside AF_XDP sockets (XDP_STATISTICS). DPDK 22.11's net_af_xdp
// reports only rx_dropped (as imissed): a full RX ring and invalid descriptors appear nowhere else.
struct AfXdpSocketDrops {
    uint64_t rx_ring_full = 0;  // the socket's RX ring was full: the app did not poll fast enough
    uint64_t rx_invalid = 0;    // received frames that did not fit a descriptor
    uint64_t tx_invalid = 0;    // frames handed to the kernel with an invalid descriptor
};
AfXdpSocketDrops af_xdp_socket_drops(const std::vector<int>& fds);

}  // namespace linerate::eal
