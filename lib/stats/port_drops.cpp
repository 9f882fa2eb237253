#include "stats/port_drops.hpp"

#include <fmt/core.h>
#include <rte_ethdev.h>

namespace linerate::stats {

PortDrops read_port_drops(uint16_t port, const std::string& name) {
    PortDrops d;
    d.port = port;
    d.name = name;
    rte_eth_stats st{};
    if (rte_eth_stats_get(port, &st) == 0) {
        d.ierrors = st.ierrors;
        d.imissed = st.imissed;
        d.rx_nombuf = st.rx_nombuf;
        d.oerrors = st.oerrors;
    }
    return d;
}

uint64_t total(const std::vector<PortDrops>& ports) {
    uint64_t n = 0;
    for (const auto& p : ports) n += p.total();
    return n;
}

nlohmann::json port_drops_json(const std::vector<PortDrops>& ports) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& p : ports)
        j[std::to_string(p.port)] = {{"name", p.name},
                                     {"ierrors", p.ierrors},
                                     {"imissed", p.imissed},
                                     {"rx_nombuf", p.rx_nombuf},
                                     {"oerrors", p.oerrors},
                                     {"rx_ring_full", p.rx_ring_full},
                                     {"rx_invalid", p.rx_invalid},
                                     {"tx_invalid", p.tx_invalid},
                                     {"total", p.total()}};
    return j;
}

std::string port_drops_summary(const std::vector<PortDrops>& ports) {
    std::string s = fmt::format("  port drops {}", total(ports));
    for (const auto& p : ports) {
        s += fmt::format("\n    port {} ({}): ierrors {} imissed {} rx_nombuf {} oerrors {}",
                         p.port, p.name, p.ierrors, p.imissed, p.rx_nombuf, p.oerrors);
        if (p.rx_ring_full + p.rx_invalid + p.tx_invalid)
            s += fmt::format(" af_xdp rx_ring_full {} rx_invalid {} tx_invalid {}", p.rx_ring_full,
                             p.rx_invalid, p.tx_invalid);
    }
    return s;
}

}  // namespace linerate::stats
