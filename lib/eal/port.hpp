#pragma once
// Ethernet port setup: configure N RX/TX queue pairs (RSS when offered), adjust descriptor
// counts to the device limits, set up queues on a mempool, start, wait for link, stop, close.
#include <rte_ethdev.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pkt/build.hpp"  // MacAddr

namespace linerate::eal {

struct PortConfig {
    uint16_t queues = 1;
    uint16_t rx_desc = 1024;
    uint16_t tx_desc = 1024;
    bool promiscuous = false;
    unsigned mtu = 0;                // 0: leave the port's default
    unsigned mbuf_data_room = 2176;  // of the pool the queues will use (RTE_MBUF_DEFAULT_BUF_SIZE)
};

// Bytes on the wire (no FCS) of the largest frame an MTU allows: Ethernet header, two VLAN tags.
inline unsigned max_frame_len(unsigned mtu) {
    return mtu + 14 + 2 * 4;
}

class Port {
  public:
    // Configures the device (queues, RSS, offloads, MTU: RX scatter and multi-segment TX when a
    // frame of the MTU does not fit one mbuf) and adjusts descriptor counts. Throws.
    Port(uint16_t port_id, const PortConfig& config);
    ~Port();  // stops and closes
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;

    uint16_t id() const { return id_; }
    uint16_t queues() const { return config_.queues; }
    uint16_t rx_desc() const { return config_.rx_desc; }
    uint16_t tx_desc() const { return config_.tx_desc; }
    int socket() const;
    std::string name() const;
    rte_device* device() const { return device_; }
    bool rss() const { return rss_; }
    bool scatter() const { return scatter_; }
    unsigned mtu() const;
    bool fast_free() const { return fast_free_; }

    // Mbufs the driver takes from the pool beyond its RX descriptors (to size the pool):
    // net_af_xdp fills the kernel's fill ring, 2048 per queue.
    unsigned mbufs_beyond_rings() const { return mbufs_beyond_rings_; }
    const std::string& driver() const { return driver_; }
    // A kernel interface backs the port (AF_XDP, AF_PACKET, TAP): its frames come as the host's
    // stack sent them, TCP/UDP checksums possibly left to a TX offload no NIC will perform.
    bool kernel_backed() const {
        return driver_ == "net_af_xdp" || driver_ == "net_af_packet" || driver_ == "net_tap";
    }
    // The AF_XDP sockets the driver opened for this port's queues (net_af_xdp; else empty): the
    // kernel's drop counters of those sockets belong to this port.
    const std::vector<int>& af_xdp_sockets() const { return af_xdp_sockets_; }

    // Sets up every queue on `pool` and starts the port. Throws.
    void start(rte_mempool* pool);
    // Mbufs of the pool the port keeps after it is closed, which no one can hand back: DPDK
    // 22.11's net_af_xdp keeps its kernel fill ring (what it took from the pool at queue setup,
    // 2048 per queue; its completion ring is emptied by reclaim_tx). 0 for every other driver:
    // closing returns everything.
    unsigned held_after_close() const { return held_after_close_; }
    // Asks the driver to reclaim transmitted mbufs (an empty TX burst per queue): call after the
    // workers stopped, before closing.
    void reclaim_tx() const;
    // True when the link came up within the timeout (virtual ports report up at once); gives up
    // at once when a stop is requested.
    bool wait_for_link(double timeout_s) const;
    // Polls the link (no wait): its state now when it changed since the last call (or since the
    // port started), else nothing. A peer that vanished (vhost-user, memif) shows here as down.
    std::optional<bool> link_change();
    // Also read by the metrics endpoint's thread while the monitor updates them.
    bool link_up() const { return link_up_.load(std::memory_order_relaxed); }
    unsigned link_downs() const { return link_downs_.load(std::memory_order_relaxed); }
    // Stops the port (net_pcap flushes its output here). Idempotent.
    void stop();
    std::string describe() const;
    // The port's MAC address (the source of the frames the app sends).
    pkt::MacAddr mac() const;

  private:
    std::string rx_setup_refused(rte_mempool* pool, int rc) const;  // the one-line error
    // What the MTU asks of the port: whether the ethdev takes it (not net_af_packet above its
    // cap), and the RX offloads (scatter) it needs. Throws when the port cannot.
    struct MtuPlan {
        bool ethdev = false;
        uint64_t rx_offloads = 0;
    };
    MtuPlan plan_mtu(const rte_eth_dev_info& info);
    void configure(const rte_eth_conf& conf, bool ethdev_mtu);

    uint16_t id_;
    PortConfig config_;
    rte_device* device_ = nullptr;
    uint64_t tx_offloads_ = 0;
    bool rss_ = false;
    bool fast_free_ = false;
    bool scatter_ = false;
    bool started_ = false;
    unsigned held_after_close_ = 0;
    unsigned mbufs_beyond_rings_ = 0;
    std::string driver_;
    std::vector<int> af_xdp_sockets_;
    std::atomic<bool> link_up_ = false;
    std::atomic<unsigned> link_downs_ = 0;  // up -> down changes seen
};

// Every value of `key` among a port's devargs (a vdev's `--vdev=NAME,key=value,...`), in order;
// none for a key it was not given or a port without devargs.
std::vector<std::string> devarg_values(uint16_t port_id, std::string_view key);

// What a port's RX queues take from the pool, known from its driver and devargs before the pool
// exists: the pool is sized to it, or the app stops naming the figure and the flag.
struct PoolNeeds {
    std::string port;              // "port 0 (net_af_packet0)"
    unsigned data_room = 0;        // least mbuf data room, headroom included; 0: no need
    std::string data_room_reason;  // why, e.g. "its ring's framesz=16384"
    unsigned kept_mbufs = 0;       // mbufs the queues hold for the whole run
    std::string kept_reason;       // why, e.g. "infinite_rx holds the 4096 frames of F"
};
// Any driver: its min_rx_bufsize; net_af_packet: its ring's framesz= (default 2048) must fit
// one mbuf, less the frame header it keeps; net_pcap with infinite_rx: every frame of each
// rx_pcap= file in an mbuf of its own (no chains), for the whole run. Throws
// std::runtime_error when a file cannot be read.
PoolNeeds pool_needs(uint16_t port_id);

// A port list the EAL's ports cannot satisfy (no ports at all, or an id that does not exist):
// the user's to fix, so a usage error.
struct PortChoiceError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// All probed ports, or the given ones after checking they exist. Throws.
std::vector<uint16_t> select_ports(const std::vector<uint16_t>& requested);

}  // namespace linerate::eal
