#include "eal/flow_isolate.hpp"

#include <fmt/core.h>
#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include <cstring>
#include <numeric>

namespace linerate::eal {

namespace {

std::string port_name(uint16_t port) {
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(port, name);
    return name;
}

std::string flow_error(int rc, const rte_flow_error& e) {
    const char* errno_text = std::strerror(rc < 0 ? -rc : rc);
    if (!e.message || std::strcmp(e.message, errno_text) == 0) return errno_text;
    return fmt::format("{} ({})", e.message, errno_text);
}

}  // namespace

FlowPattern::FlowPattern(const xdp::SteerFilter& served) {
    // Empty spec and mask: the item only says the header is there. none (serve nothing) is
    // never asked for: every app serves something.
    items.push_back({RTE_FLOW_ITEM_TYPE_ETH, &eth, nullptr, &eth_mask});
    if (served.mode == xdp::SteerMode::ipv4 || served.mode == xdp::SteerMode::udp_port)
        items.push_back({RTE_FLOW_ITEM_TYPE_IPV4, &ipv4, nullptr, &ipv4_mask});
    if (served.mode == xdp::SteerMode::udp_port) {
        udp.hdr.dst_port = rte_cpu_to_be_16(served.udp_port);
        udp_mask.hdr.dst_port = RTE_BE16(0xFFFF);
        items.push_back({RTE_FLOW_ITEM_TYPE_UDP, &udp, nullptr, &udp_mask});
    }
    items.push_back({RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr});
}

std::string FlowPattern::describe() const {
    std::string s;
    for (const rte_flow_item& item : items) {
        switch (item.type) {
            case RTE_FLOW_ITEM_TYPE_ETH:
                s += "eth / ";
                break;
            case RTE_FLOW_ITEM_TYPE_IPV4:
                s += "ipv4 / ";
                break;
            case RTE_FLOW_ITEM_TYPE_UDP:
                s += fmt::format(
                    "udp dst is {} / ",
                    rte_be_to_cpu_16(
                        static_cast<const rte_flow_item_udp*>(item.spec)->hdr.dst_port));
                break;
            case RTE_FLOW_ITEM_TYPE_END:
                s += "end";
                break;
            default:
                s += "? / ";
                break;
        }
    }
    return s;
}

void isolate_port(uint16_t port) {
    rte_flow_error error{};
    if (int rc = rte_flow_isolate(port, 1, &error); rc != 0)
        throw IsolateError(fmt::format(
            "--isolate: port {} ({}) cannot be put in flow isolated mode: {}; without --isolate "
            "it takes all the port's traffic",
            port, port_name(port), flow_error(rc, error)));
}

std::string install_served_rule(uint16_t port, const xdp::SteerFilter& served, uint16_t queues) {
    const FlowPattern pattern(served);
    std::vector<uint16_t> queue_ids(queues);
    std::iota(queue_ids.begin(), queue_ids.end(), uint16_t(0));
    rte_flow_action_queue queue{0};
    rte_flow_action_rss rss{};
    rss.func = RTE_ETH_HASH_FUNCTION_DEFAULT;
    rss.types = RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP;
    rss.queue_num = queues;
    rss.queue = queue_ids.data();
    const rte_flow_action actions[] = {queues > 1
                                           ? rte_flow_action{RTE_FLOW_ACTION_TYPE_RSS, &rss}
                                           : rte_flow_action{RTE_FLOW_ACTION_TYPE_QUEUE, &queue},
                                       {RTE_FLOW_ACTION_TYPE_END, nullptr}};
    const rte_flow_attr attr{.group = 0, .priority = 0, .ingress = 1};
    const std::string what =
        fmt::format("{} -> {}", pattern.describe(),
                    queues > 1 ? fmt::format("rss queues 0-{}", queues - 1) : "queue 0");

    rte_flow_error error{};
    if (int rc = rte_flow_validate(port, &attr, pattern.items.data(), actions, &error); rc != 0)
        throw IsolateError(fmt::format("--isolate: port {} ({}) refuses the rule for {} ({}): {}",
                                       port, port_name(port), served.describe(), what,
                                       flow_error(rc, error)));
    if (!rte_flow_create(port, &attr, pattern.items.data(), actions, &error))
        throw IsolateError(fmt::format("--isolate: port {} ({}): creating the rule {} failed: {}",
                                       port, port_name(port), what, flow_error(-rte_errno, error)));
    return fmt::format("isolated, rule for {}: {}", served.describe(), what);
}

}  // namespace linerate::eal
