// The namespace test support itself: a veth pair between two namespaces carries raw frames both
// ways byte-exact (9000 B at MTU 9000), a socket does not receive its own sends, a command run with
// wrap() sees only its namespace's interfaces, and everything is gone afterwards.
#include <gtest/gtest.h>

#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

namespace {

std::vector<uint8_t> frame_to(const std::vector<uint8_t>& dst, const std::vector<uint8_t>& src,
                              size_t len, uint8_t seed) {
    std::vector<uint8_t> f(len);
    for (size_t i = 0; i < len; ++i) f[i] = uint8_t(seed + i * 7);
    std::copy(dst.begin(), dst.end(), f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    f[12] = 0x88;  // local experimental ethertype: nothing in the kernel answers it
    f[13] = 0xB5;
    return f;
}

}  // namespace

TEST(NetnsSupport, VethCarriesRawFramesExactlyBothWays) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    std::string app_if;
    std::string ns_name;
    {
        NetNs app("app"), peer("peer");
        ns_name = app.name();
        VethPair veth(app, peer, {.mtu = 9000});
        app_if = veth.app_if;
        RawSocket a(app, veth.app_if), b(peer, veth.peer_if);
        for (size_t len : {60, 1514, 9014}) {
            auto f = frame_to(veth.app_mac_bytes(), veth.peer_mac_bytes(), len, uint8_t(len));
            b.send(f);
            auto got = a.receive(2.0);
            ASSERT_TRUE(got) << len;
            EXPECT_EQ(*got, f) << len;
            auto back = frame_to(veth.peer_mac_bytes(), veth.app_mac_bytes(), len, 3);
            a.send(back);
            got = b.receive(2.0);
            ASSERT_TRUE(got) << len;
            EXPECT_EQ(*got, back) << len;
        }
        EXPECT_FALSE(b.receive(0.2)) << "a socket must not see its own frames";
        // A frame over the MTU is refused by the sender's kernel.
        EXPECT_THROW(b.send(frame_to(veth.app_mac_bytes(), veth.peer_mac_bytes(), 9100, 1)),
                     std::runtime_error);

        ProcessResult r = run_process(app.wrap({"/bin/sh", "-c", "ls /sys/class/net"}));
        EXPECT_EQ(r.exit_status, 0);
        EXPECT_NE(r.out.find(veth.app_if), std::string::npos) << r.out;
        EXPECT_EQ(r.out.find(veth.peer_if), std::string::npos) << r.out;
    }
    EXPECT_EQ(shell("ip netns list").out.find(ns_name), std::string::npos);
    EXPECT_NE(shell("ip link show " + app_if).status, 0);
}
