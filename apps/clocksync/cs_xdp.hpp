#pragma once
// clocksync's XDP master's user side (apps/clocksync/xdp/clocksync.bpf.c, ABI
// apps/clocksync/xdp/cs_xdp_abi.h): its config map, through DatapathProgram's generic update_map.
#include <array>
#include <cstdint>

#include "xdp/datapath/datapath_program.hpp"

namespace linerate::clocksync {

// cs_config[0] of `program` (clocksync.bpf.o): the UDP port it answers (host order), whether a
// UDP checksum left to TX offload is taken, the interface's MAC. Throws.
void set_xdp_master(xdp::DatapathProgram& program, uint16_t udp_port, bool accept_offloaded,
                    const std::array<uint8_t, 6>& mac);

}  // namespace linerate::clocksync
