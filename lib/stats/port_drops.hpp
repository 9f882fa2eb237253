#pragma once
// Frames a port itself dropped or failed to send, from rte_eth_stats: they never reach a worker,
// so the workers' counters cannot show them (rx + port drops == what arrived at the port).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace linerate::stats {

struct PortDrops {
    uint16_t port = 0;
    std::string name;
    uint64_t ierrors = 0;    // erroneous frames the port rejected (e.g. larger than it takes)
    uint64_t imissed = 0;    // frames lost because the RX ring (or the kernel's queue) was full
    uint64_t rx_nombuf = 0;  // receive failures for want of an mbuf
    uint64_t oerrors = 0;    // frames the port failed to transmit
    // AF_XDP ports only: drops inside the kernel's sockets that rte_eth_stats leaves out.
    uint64_t rx_ring_full = 0;  // the socket's RX ring was full
    uint64_t rx_invalid = 0;    // received frames that did not fit a descriptor
    uint64_t tx_invalid = 0;    // frames sent with an invalid descriptor
    uint64_t total() const {
        return ierrors + imissed + rx_nombuf + oerrors + rx_ring_full + rx_invalid + tx_invalid;
    }
};

// The port's counters now (zeros if the driver gives none).
PortDrops read_port_drops(uint16_t port, const std::string& name);
uint64_t total(const std::vector<PortDrops>& ports);

// {"0": {"name": ..., "ierrors": ..., "imissed": ..., "rx_nombuf": ..., "oerrors": ...,
// "rx_ring_full": ..., "rx_invalid": ..., "tx_invalid": ..., "total": ...}, ...}: one object per
// port, keyed by port id (also the telemetry answer).
nlohmann::json port_drops_json(const std::vector<PortDrops>& ports);
// "  port drops 3\n    port 0 (net_tap0): ierrors 3 imissed 0 rx_nombuf 0 oerrors 0"
std::string port_drops_summary(const std::vector<PortDrops>& ports);

}  // namespace linerate::stats
