#include "eal/port.hpp"

#include "eal/af_xdp_ports.hpp"
#include "pkt/address.hpp"

#include <fmt/core.h>
#include <linux/if_packet.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "pcapio/pcap_file.hpp"

#include "worker/quiescence.hpp"

namespace linerate::eal {

namespace {

[[noreturn]] void fail(uint16_t port, const char* what, int rc) {
    throw std::runtime_error(fmt::format("port {}: {} failed: {}", port, what, rte_strerror(-rc)));
}

}  // namespace

Port::Port(uint16_t port_id, const PortConfig& config) : id_(port_id), config_(config) {
    rte_eth_dev_info info{};
    if (int rc = rte_eth_dev_info_get(id_, &info); rc != 0) fail(id_, "dev_info_get", rc);
    device_ = info.device;
    driver_ = info.driver_name ? info.driver_name : "";
    constexpr unsigned kAfXdpFillRing = 2048;  // XSK_RING_PROD__DEFAULT_NUM_DESCS
    if (driver_ == "net_af_xdp") mbufs_beyond_rings_ = kAfXdpFillRing * config_.queues;

    rte_eth_conf conf{};
    uint64_t rss_hf =
        info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP);
    if (config_.queues > 1 && rss_hf != 0) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
        rss_ = true;
    }
    // Every mbuf comes from one pool with refcnt 1, which is what fast free requires.
    if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE) {
        tx_offloads_ |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
        fast_free_ = true;
    }
    const MtuPlan mtu = plan_mtu(info);
    if (mtu.ethdev) conf.rxmode.mtu = config_.mtu;
    conf.txmode.offloads = tx_offloads_;
    // The port's IPv4/UDP checksum verdicts land in each mbuf's flags (rx_checksums()): the
    // apps that verify checksums skip the software sums for what the port checked.
    conf.rxmode.offloads =
        mtu.rx_offloads |
        (info.rx_offload_capa & (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM));
    configure(conf, mtu.ethdev);
}

// DPDK 22.11's net_af_packet caps its ethdev MTU at 1500 although the kernel interface behind it
// takes jumbo frames: its MTU is the interface's (ip link) and its ring's framesz=, and only the
// mbufs are sized here. (net_tap caps it too and also drops larger frames on TX: its cap is
// real.) A frame of the MTU that spans several mbufs needs RX scatter and multi-segment TX.
Port::MtuPlan Port::plan_mtu(const rte_eth_dev_info& info) {
    MtuPlan plan;
    if (!config_.mtu) return plan;
    const bool kernel_mtu = driver_ == "net_af_packet";
    plan.ethdev = !(kernel_mtu && (config_.mtu > info.max_mtu ||
                                   max_frame_len(config_.mtu) > info.max_rx_pktlen));
    if (!plan.ethdev)
        fmt::print(stderr,
                   "port {} ({}): the driver takes no frame above {} B itself: frames up to MTU "
                   "{} are received as the kernel interface's MTU allows and the vdev's framesz= "
                   "holds (larger ones are truncated by the kernel)\n",
                   id_, driver_, info.max_rx_pktlen, config_.mtu);
    if (plan.ethdev && (config_.mtu < info.min_mtu || config_.mtu > info.max_mtu))
        throw std::runtime_error(fmt::format("port {} ({}): MTU {} is out of its range {}..{}", id_,
                                             driver_, config_.mtu, info.min_mtu, info.max_mtu));
    const unsigned room = config_.mbuf_data_room - RTE_PKTMBUF_HEADROOM;
    if (max_frame_len(config_.mtu) <= room) return plan;
    if (!(info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER))
        throw std::runtime_error(fmt::format(
            "port {} ({}): a frame of MTU {} ({} B) does not fit one mbuf ({} B) and the port "
            "offers no RX scatter: raise --mbuf-size",
            id_, driver_, config_.mtu, max_frame_len(config_.mtu), room));
    plan.rx_offloads = RTE_ETH_RX_OFFLOAD_SCATTER;
    scatter_ = true;
    if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
        tx_offloads_ |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    return plan;
}

void Port::configure(const rte_eth_conf& conf, bool ethdev_mtu) {
    if (int rc = rte_eth_dev_configure(id_, config_.queues, config_.queues, &conf); rc != 0)
        fail(id_, "configure", rc);
    // configure records the MTU; set_mtu makes drivers that program a kernel interface
    // (af_packet, tap) apply it there too.
    if (ethdev_mtu) {
        if (int rc = rte_eth_dev_set_mtu(id_, uint16_t(config_.mtu)); rc != 0 && rc != -ENOTSUP)
            throw std::runtime_error(fmt::format(
                "port {} ({}): cannot set MTU {}: {}{}", id_, driver_, config_.mtu,
                rte_strerror(-rc),
                driver_ == "net_af_packet" ? " (give the vdev a larger framesz=)" : ""));
    }
    if (int rc = rte_eth_dev_adjust_nb_rx_tx_desc(id_, &config_.rx_desc, &config_.tx_desc); rc != 0)
        fail(id_, "adjust_nb_rx_tx_desc", rc);
}

Port::~Port() {
    stop();
    rte_eth_dev_close(id_);
}

int Port::socket() const {
    int s = rte_eth_dev_socket_id(id_);
    return s < 0 ? 0 : s;
}

std::string Port::name() const {
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(id_, name);
    return name;
}

void Port::start(rte_mempool* pool) {
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(id_, &info);
    unsigned before = rte_mempool_in_use_count(pool);  // net_af_xdp fills its ring at setup
    // net_af_xdp opens its socket in the RX queue setup: the new AF_XDP fds are this port's.
    std::vector<int> sockets_before;
    if (driver_ == "net_af_xdp") sockets_before = af_xdp_socket_fds();
    for (uint16_t q = 0; q < config_.queues; ++q) {
        rte_eth_rxconf rxconf = info.default_rxconf;
        if (int rc =
                rte_eth_rx_queue_setup(id_, q, config_.rx_desc, unsigned(socket()), &rxconf, pool);
            rc != 0)
            throw std::runtime_error(rx_setup_refused(pool, rc));
        rte_eth_txconf txconf = info.default_txconf;
        txconf.offloads = tx_offloads_;
        if (int rc = rte_eth_tx_queue_setup(id_, q, config_.tx_desc, unsigned(socket()), &txconf);
            rc != 0)
            fail(id_, "tx_queue_setup", rc);
    }
    if (driver_ == "net_af_xdp")
        for (int fd : af_xdp_socket_fds())
            if (!std::binary_search(sockets_before.begin(), sockets_before.end(), fd))
                af_xdp_sockets_.push_back(fd);
    if (config_.promiscuous) {
        if (int rc = rte_eth_promiscuous_enable(id_); rc != 0 && rc != -ENOTSUP)
            fail(id_, "promiscuous_enable", rc);
    }
    if (int rc = rte_eth_dev_start(id_); rc != 0) fail(id_, "start", rc);
    started_ = true;
    if (driver_ == "net_af_xdp") held_after_close_ = rte_mempool_in_use_count(pool) - before;
}

std::string Port::rx_setup_refused(rte_mempool* pool, int rc) const {
    // The driver's own log line above says what it wanted; this one names the figures of the
    // pool and the flags that change them.
    std::string s = fmt::format(
        "port {} ({}): rx_queue_setup refused the pool ({} mbufs of {} B data room): {}: the "
        "driver's log above says what it needs; --mbufs N gives more mbufs, --mbuf-size N "
        "larger ones",
        id_, name(), pool->size, rte_pktmbuf_data_room_size(pool), rte_strerror(-rc));
    if (driver_ == "net_af_xdp")
        s += " (net_af_xdp also fails here when it cannot open its AF_XDP socket or attach its "
             "XDP program, e.g. an interface MTU above what XDP takes on it)";
    return s;
}

unsigned Port::mtu() const {
    uint16_t mtu = 0;
    rte_eth_dev_get_mtu(id_, &mtu);
    return mtu;
}

void Port::reclaim_tx() const {
    // net_af_xdp frees what its completion ring returned at the start of every TX burst; the
    // kernel may still be completing the last frames. These bursts, too, read port memory a
    // departing peer's unmap must wait for (worker/quiescence.hpp).
    worker::PollingThread poller(worker::kMainPoller);
    for (int round = 0; round < 3; ++round) {
        for (uint16_t q = 0; q < config_.queues; ++q) rte_eth_tx_burst(id_, q, nullptr, 0);
        worker::report_quiescent();
        rte_delay_ms(1);
    }
}

bool Port::wait_for_link(double timeout_s) const {
    uint64_t deadline = rte_get_timer_cycles() + uint64_t(timeout_s * double(rte_get_timer_hz()));
    for (;;) {
        rte_eth_link link{};
        if (rte_eth_link_get_nowait(id_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
            return true;
        if (rte_get_timer_cycles() >= deadline || worker::stop_requested()) return false;
        rte_delay_ms(100);
    }
}

std::optional<bool> Port::link_change() {
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(id_, &link) != 0) return std::nullopt;
    const bool up = link.link_status == RTE_ETH_LINK_UP;
    if (up == link_up_) return std::nullopt;
    if (link_up_) ++link_downs_;
    link_up_ = up;
    return up;
}

void Port::stop() {
    if (!started_) return;
    rte_eth_dev_stop(id_);
    started_ = false;
}

std::string Port::describe() const {
    rte_eth_link link{};
    rte_eth_link_get_nowait(id_, &link);
    return fmt::format(
        "port {} ({}): {}, socket {}, {} queue(s), {}/{} rx/tx desc, MTU {}{}{}{}, link {} {} Mb/s",
        id_, name(), pkt::format_mac(mac()), socket(), config_.queues, config_.rx_desc,
        config_.tx_desc, mtu(), scatter_ ? ", RX scatter" : "", rss_ ? ", RSS" : "",
        fast_free_ ? ", mbuf fast free" : "", link.link_status ? "up" : "down", link.link_speed);
}

std::vector<std::string> devarg_values(uint16_t port_id, std::string_view key) {
    std::vector<std::string> values;
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port_id, &info) != 0 || !info.device) return values;
    const rte_devargs* da = rte_dev_devargs(info.device);
    if (!da || !da->args) return values;
    std::string_view args = da->args;
    for (size_t pos = 0; pos <= args.size();) {
        size_t end = std::min(args.find(',', pos), args.size());
        std::string_view kv = args.substr(pos, end - pos);
        if (kv.size() > key.size() && kv.substr(0, key.size()) == key && kv[key.size()] == '=')
            values.emplace_back(kv.substr(key.size() + 1));
        pos = end + 1;
    }
    return values;
}

namespace {

// Raises the data room the port needs to `room` (headroom included), for `reason`.
void require_room(PoolNeeds& needs, unsigned room, std::string reason) {
    if (room <= needs.data_room) return;
    needs.data_room = room;
    needs.data_room_reason = std::move(reason);
}

// net_af_packet copies each frame of its ring into one mbuf and refuses the queue when a ring
// frame (framesz=, less the tpacket2 header the kernel writes in front) exceeds the data room.
void af_packet_needs(uint16_t port_id, PoolNeeds& needs) {
    constexpr unsigned kDefaultFrameSize = 2048;  // the PMD's DFLT_FRAME_SIZE
    std::vector<std::string> framesz = devarg_values(port_id, "framesz");
    unsigned frame = framesz.empty() ? kDefaultFrameSize : unsigned(std::atoi(framesz[0].c_str()));
    constexpr unsigned kRingHeader = TPACKET2_HDRLEN - sizeof(sockaddr_ll);
    if (frame <= kRingHeader) return;  // the PMD refuses the vdev itself
    require_room(needs, frame - kRingHeader + RTE_PKTMBUF_HEADROOM,
                 fmt::format("its ring's framesz={}", frame));
}

// net_pcap's infinite_rx reads each rx_pcap= file (one per RX queue) into mbufs at queue setup,
// one unchained mbuf per frame, and keeps them to replay.
void pcap_needs(uint16_t port_id, PoolNeeds& needs) {
    std::vector<std::string> infinite = devarg_values(port_id, "infinite_rx");
    if (infinite.size() != 1 || std::atoi(infinite[0].c_str()) <= 0) return;
    size_t longest = 0;
    for (const std::string& file : devarg_values(port_id, "rx_pcap")) {
        pcapio::FrameCount c = pcapio::measure_frames(file);
        needs.kept_mbufs += unsigned(c.frames);
        needs.kept_reason +=
            fmt::format("{}{} frames of {}", needs.kept_reason.empty() ? "" : ", ", c.frames, file);
        longest = std::max(longest, c.longest);
    }
    if (needs.kept_mbufs == 0) return;
    needs.kept_reason = "infinite_rx holds the " + needs.kept_reason;
    require_room(needs, unsigned(longest) + RTE_PKTMBUF_HEADROOM,
                 fmt::format("infinite_rx (no mbuf chains) and a {} B frame", longest));
}

}  // namespace

PoolNeeds pool_needs(uint16_t port_id) {
    PoolNeeds needs;
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port_id, &info) != 0 || !info.driver_name) return needs;
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(port_id, name);
    needs.port = fmt::format("port {} ({})", port_id, name);
    // rte_eth_rx_queue_setup refuses mbufs below the driver's minimum, headroom apart.
    if (info.min_rx_bufsize)
        require_room(needs, info.min_rx_bufsize + RTE_PKTMBUF_HEADROOM,
                     fmt::format("its least RX buffer (min_rx_bufsize {})", info.min_rx_bufsize));
    const std::string_view driver = info.driver_name;
    if (driver == "net_af_packet") af_packet_needs(port_id, needs);
    if (driver == "net_pcap") pcap_needs(port_id, needs);
    return needs;
}

std::vector<uint16_t> select_ports(const std::vector<uint16_t>& requested) {
    std::vector<uint16_t> ports;
    if (requested.empty()) {
        uint16_t p;
        RTE_ETH_FOREACH_DEV(p) ports.push_back(p);
        if (ports.empty())
            throw PortChoiceError(
                "no ethdev ports: give devices to the EAL (e.g. -a PCI or --vdev=net_null0 before "
                "`--`), or use --pcap IN[:OUT]");
        return ports;
    }
    for (uint16_t p : requested) {
        if (!rte_eth_dev_is_valid_port(p))
            throw PortChoiceError(fmt::format("port {} does not exist ({} ports probed)", p,
                                              rte_eth_dev_count_avail()));
        ports.push_back(p);
    }
    return ports;
}

pkt::MacAddr Port::mac() const {
    rte_ether_addr ether{};
    rte_eth_macaddr_get(id_, &ether);
    pkt::MacAddr mac;
    std::copy(std::begin(ether.addr_bytes), std::end(ether.addr_bytes), mac.begin());
    return mac;
}

}  // namespace linerate::eal
