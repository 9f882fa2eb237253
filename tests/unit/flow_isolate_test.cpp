// --isolate's rte_flow patterns, built without EAL: the items, their order, and the UDP port in
// network byte order under a full mask.
#include <gtest/gtest.h>
#include <rte_byteorder.h>

#include "eal/flow_isolate.hpp"

using namespace linerate;
using namespace linerate::eal;

namespace {
std::vector<rte_flow_item_type> types(const FlowPattern& p) {
    std::vector<rte_flow_item_type> t;
    for (const rte_flow_item& item : p.items) t.push_back(item.type);
    return t;
}
}  // namespace

TEST(FlowPattern, AllFramesIsAnEmptyEthItem) {
    FlowPattern p(xdp::SteerFilter{xdp::SteerMode::all, 0});
    EXPECT_EQ(types(p), (std::vector{RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_END}));
    EXPECT_EQ(p.items[0].spec, &p.eth);
    EXPECT_EQ(p.items[0].mask, &p.eth_mask);
    EXPECT_EQ(p.eth_mask.hdr.ether_type, 0);  // matches any EtherType
    EXPECT_EQ(p.describe(), "eth / end");
}

TEST(FlowPattern, Ipv4) {
    FlowPattern p(xdp::SteerFilter{xdp::SteerMode::ipv4, 0});
    EXPECT_EQ(types(p), (std::vector{RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_IPV4,
                                     RTE_FLOW_ITEM_TYPE_END}));
    EXPECT_EQ(p.ipv4_mask.hdr.dst_addr, 0u);
    EXPECT_EQ(p.describe(), "eth / ipv4 / end");
}

TEST(FlowPattern, UdpDestinationPortInNetworkOrderUnderAFullMask) {
    FlowPattern p(xdp::SteerFilter{xdp::SteerMode::udp_port, 9000});
    EXPECT_EQ(types(p), (std::vector{RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_IPV4,
                                     RTE_FLOW_ITEM_TYPE_UDP, RTE_FLOW_ITEM_TYPE_END}));
    const auto* spec = static_cast<const rte_flow_item_udp*>(p.items[2].spec);
    const auto* mask = static_cast<const rte_flow_item_udp*>(p.items[2].mask);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&spec->hdr.dst_port);
    EXPECT_EQ(bytes[0], 0x23);  // 9000 = 0x2328, big-endian on the wire
    EXPECT_EQ(bytes[1], 0x28);
    EXPECT_EQ(mask->hdr.dst_port, 0xFFFF);
    EXPECT_EQ(mask->hdr.src_port, 0);
    EXPECT_EQ(p.items[2].last, nullptr);
    EXPECT_EQ(p.describe(), "eth / ipv4 / udp dst is 9000 / end");
}
