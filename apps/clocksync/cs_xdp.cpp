#include "clocksync/cs_xdp.hpp"

#include <cstring>

#include "clocksync/xdp/cs_xdp_abi.h"

namespace linerate::clocksync {

void set_xdp_master(xdp::DatapathProgram& program, uint16_t udp_port, bool accept_offloaded,
                    const std::array<uint8_t, 6>& mac) {
    cs_xdp_config config{};
    std::memcpy(config.mac, mac.data(), sizeof config.mac);
    config.udp_port = udp_port;
    config.accept_offloaded = accept_offloaded ? 1 : 0;
    const uint32_t key = 0;
    program.update_map(CS_CONFIG_MAP, &key, &config);
}

}  // namespace linerate::clocksync
