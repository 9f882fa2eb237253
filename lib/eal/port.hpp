#pragma once
// Ethernet port setup: configure N RX/TX queue pairs (RSS when offered), adjust descriptor
// counts to the device limits, set up queues on a mempool, start, wait for link, stop, close.
#include <rte_ethdev.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace linerate::eal {

struct PortConfig {
    uint16_t queues = 1;
    uint16_t rx_desc = 1024;
    uint16_t tx_desc = 1024;
    bool promiscuous = false;
};

class Port {
  public:
    // Configures the device (queues, RSS, offloads) and adjusts descriptor counts. Throws.
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
    bool fast_free() const { return fast_free_; }

    // Sets up every queue on `pool` and starts the port. Throws.
    void start(rte_mempool* pool);
    // True when the link came up within the timeout (virtual ports report up at once).
    bool wait_for_link(double timeout_s) const;
    // Stops the port (net_pcap flushes its output here). Idempotent.
    void stop();
    std::string describe() const;

  private:
    uint16_t id_;
    PortConfig config_;
    rte_device* device_ = nullptr;
    uint64_t tx_offloads_ = 0;
    bool rss_ = false;
    bool fast_free_ = false;
    bool started_ = false;
};

// A port list the EAL's ports cannot satisfy (no ports at all, or an id that does not exist):
// the user's to fix, so a usage error.
struct PortChoiceError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// All probed ports, or the given ones after checking they exist. Throws.
std::vector<uint16_t> select_ports(const std::vector<uint16_t>& requested);

}  // namespace linerate::eal
