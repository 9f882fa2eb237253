#pragma once
// --isolate: the port in rte_flow isolated mode with one rule that steers what the app serves to
// its queues; everything else stays with the kernel (on a BlueField-3 / mlx5 port, the DPU's or
// host's own stack). Only PMDs with rte_flow offer it (mlx5 does; no virtual PMD here does).
#include <rte_flow.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "xdp/steer/steer_program.hpp"

namespace linerate::eal {

// The rte_flow pattern of what an app serves (the same description its XDP steering uses). Its
// items point at the specs and masks it holds, so it does not move.
struct FlowPattern {
    explicit FlowPattern(const xdp::SteerFilter& served);
    FlowPattern(const FlowPattern&) = delete;
    FlowPattern& operator=(const FlowPattern&) = delete;

    rte_flow_item_eth eth{}, eth_mask{};
    rte_flow_item_ipv4 ipv4{}, ipv4_mask{};
    rte_flow_item_udp udp{}, udp_mask{};
    std::vector<rte_flow_item> items;  // ends with RTE_FLOW_ITEM_TYPE_END
    std::string describe() const;      // testpmd's syntax: "eth / ipv4 / udp dst is 9000 / end"
};

// --isolate asked for something the port cannot do: the app exits 2 with this message.
struct IsolateError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Puts the port in isolated mode; must come before rte_eth_dev_configure. Throws IsolateError.
void isolate_port(uint16_t port);
// After the port started: validates and creates the rule that sends `served` to queues
// [0, queues) (RSS over them, or queue 0). Returns what was installed. Throws IsolateError.
std::string install_served_rule(uint16_t port, const xdp::SteerFilter& served, uint16_t queues);

}  // namespace linerate::eal
