#include "eal/port.hpp"

#include <fmt/core.h>
#include <rte_cycles.h>

#include <stdexcept>

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
    conf.txmode.offloads = tx_offloads_;
    // The port's IPv4/UDP checksum verdicts land in each mbuf's flags (rx_checksums()): the
    // apps that verify checksums skip the software sums for what the port checked.
    conf.rxmode.offloads =
        info.rx_offload_capa & (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM);
    if (int rc = rte_eth_dev_configure(id_, config_.queues, config_.queues, &conf); rc != 0)
        fail(id_, "configure", rc);
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
    for (uint16_t q = 0; q < config_.queues; ++q) {
        rte_eth_rxconf rxconf = info.default_rxconf;
        if (int rc =
                rte_eth_rx_queue_setup(id_, q, config_.rx_desc, unsigned(socket()), &rxconf, pool);
            rc != 0)
            fail(id_, "rx_queue_setup", rc);
        rte_eth_txconf txconf = info.default_txconf;
        txconf.offloads = tx_offloads_;
        if (int rc = rte_eth_tx_queue_setup(id_, q, config_.tx_desc, unsigned(socket()), &txconf);
            rc != 0)
            fail(id_, "tx_queue_setup", rc);
    }
    if (config_.promiscuous) {
        if (int rc = rte_eth_promiscuous_enable(id_); rc != 0 && rc != -ENOTSUP)
            fail(id_, "promiscuous_enable", rc);
    }
    if (int rc = rte_eth_dev_start(id_); rc != 0) fail(id_, "start", rc);
    started_ = true;
}

bool Port::wait_for_link(double timeout_s) const {
    uint64_t deadline = rte_get_timer_cycles() + uint64_t(timeout_s * double(rte_get_timer_hz()));
    for (;;) {
        rte_eth_link link{};
        if (rte_eth_link_get_nowait(id_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
            return true;
        if (rte_get_timer_cycles() >= deadline) return false;
        rte_delay_ms(100);
    }
}

void Port::stop() {
    if (!started_) return;
    rte_eth_dev_stop(id_);
    started_ = false;
}

std::string Port::describe() const {
    rte_ether_addr mac{};
    rte_eth_macaddr_get(id_, &mac);
    rte_eth_link link{};
    rte_eth_link_get_nowait(id_, &link);
    return fmt::format(
        "port {} ({}): {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}, socket {}, {} queue(s), "
        "{}/{} rx/tx desc{}{}, link {} {} Mb/s",
        id_, name(), mac.addr_bytes[0], mac.addr_bytes[1], mac.addr_bytes[2], mac.addr_bytes[3],
        mac.addr_bytes[4], mac.addr_bytes[5], socket(), config_.queues, config_.rx_desc,
        config_.tx_desc, rss_ ? ", RSS" : "", fast_free_ ? ", mbuf fast free" : "",
        link.link_status ? "up" : "down", link.link_speed);
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

}  // namespace linerate::eal
