// --datapath xdp on a kernel interface (issue 24, items 1 and 2): nfv and l2reflect on a default
// veth in network namespaces the test creates, their XDP program attached to it, frames from a
// raw socket in the peer namespace. Every case runs on the DPDK datapath, on the XDP datapath,
// and on the XDP datapath with every served frame left to the slow path (the DPDK tier behind
// the AF_XDP socket: LINERATE_TEST_XDP_SLOW_PATH), with the same expectations: byte-exact
// replies, exact counts by reason, the same JSON counters. The kernel keeps answering ARP beside
// the app, and the interface has no XDP program once the app ended on SIGINT.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>

#include "nfv/frames.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;
using namespace linerate::test::nfv;

namespace {

enum class Tier { dpdk, xdp, xdp_slow_path };

std::string tier_name(Tier t) {
    return t == Tier::dpdk ? "dpdk" : t == Tier::xdp ? "xdp" : "xdp_slow_path";
}

// `app` on interfaces `ifaces` inside `ns` on datapath `tier`, with `args`.
std::vector<std::string> app_argv(const NetNs& ns, const std::string& app, Tier tier,
                                  const std::vector<std::string>& ifaces, const std::string& json,
                                  const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv = {"env"};
    if (tier == Tier::xdp_slow_path) argv.push_back("LINERATE_TEST_XDP_SLOW_PATH=1");
    argv.push_back(binary("apps/" + app + "/" + app));
    for (const std::string& i : ifaces) argv.insert(argv.end(), {"--af-xdp", i});
    argv.insert(argv.end(), {"--json", json, "--stats-period", "0.5", "--datapath",
                             tier == Tier::dpdk ? "dpdk" : "xdp"});
    argv.insert(argv.end(), args.begin(), args.end());
    return ns.wrap(argv);
}

Frame with_macs(Frame f, const Frame& dst, const Frame& src) {
    std::copy(dst.begin(), dst.end(), f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    return f;
}

// The interface's XDP program as `ip link` shows it ("" when none).
std::string xdp_on(const NetNs& ns, const std::string& iface) {
    const std::string out = ns.run("ip link show dev " + iface);
    return out.find("xdp") == std::string::npos ? "" : out;
}

// The peer (10.91.0.2) resolves the app's address (10.91.0.1) by ARP, which the app does not
// serve: the app's kernel answers it.
void expect_kernel_answers_arp(const NetNs& peer, const VethPair& veth) {
    peer.run("ip neigh flush dev " + veth.peer_if);
    peer.try_run("ping -c 1 -W 1 10.91.0.1");  // IPv4: the app's, so no echo reply
    const std::string neigh = peer.run("ip neigh show 10.91.0.1 dev " + veth.peer_if);
    EXPECT_NE(neigh.find(veth.app_mac), std::string::npos) << "no ARP answer: " << neigh;
}

using BadFrames = std::vector<std::pair<Frame, std::string>>;

// Stops the app with SIGINT and checks its end: exit 0, no XDP program left on `ifaces` (in
// `ns`); returns its JSON (not an object when it wrote none: the caller asserts).
nlohmann::json end_run(BackgroundProcess& proc, const NetNs& ns,
                       const std::vector<std::string>& ifaces, const std::string& json) {
    proc.signal(SIGINT);
    ProcessResult r = proc.finish(30);
    EXPECT_EQ(r.exit_status, 0) << r.out;
    for (const std::string& i : ifaces) EXPECT_EQ(xdp_on(ns, i), "") << "XDP program left on " << i;
    nlohmann::json j = read_json(json);
    EXPECT_TRUE(j.is_object()) << r.out;
    return j;
}

// The JSON's drops by reason equal the number of `bad` frames of each reason.
void expect_drops_by_reason(const nlohmann::json& j, const BadFrames& bad) {
    for (const char* reason : {"bad_length", "bad_checksum", "bad_source"}) {
        auto n = std::count_if(bad.begin(), bad.end(),
                               [&](const auto& b) { return b.second == reason; });
        EXPECT_EQ(j["drops"][reason], n) << reason << ": " << j["drops"].dump();
    }
}

// Checks of both tiers' accounting: the app's totals are the program's plus the DPDK tier's.
void expect_tiers(Tier tier, const nlohmann::json& j, uint64_t served) {
    EXPECT_EQ(j["datapath"], tier == Tier::dpdk ? "dpdk" : "xdp");
    EXPECT_EQ(j["rx_packets"].get<uint64_t>(),
              j["tx_packets"].get<uint64_t>() + j["dropped"].get<uint64_t>())
        << j.dump();
    if (tier == Tier::dpdk) return;
    const nlohmann::json& x = j["xdp"];
    EXPECT_EQ(x["mode"], "generic") << "auto on veth";
    for (const auto& [name, iface] : x["interfaces"].items())
        EXPECT_EQ(iface["multi_buffer"], false) << name << ": MTU 1500";
    const uint64_t xdp = tier == Tier::xdp ? served : 0;
    EXPECT_EQ(x["tiers"]["xdp"], xdp) << x.dump();
    EXPECT_EQ(x["tiers"]["slow_path"], served - xdp) << x.dump();
    EXPECT_EQ(x["program"]["tx"].get<uint64_t>() + x["program"]["drop"].get<uint64_t>() +
                  x["program"]["pass"].get<uint64_t>(),
              xdp)
        << x.dump();
    // The slow path's frames are the DPDK workers'.
    uint64_t workers_rx = 0;
    for (const auto& w : j["workers"]) workers_rx += w["rx_packets"].get<uint64_t>();
    EXPECT_EQ(workers_rx, served - xdp) << j.dump();
}

// `app` on a veth (10.91.0.1, the peer 10.91.0.2) on datapath `tier`, running.
struct AppOnVeth {
    AppOnVeth(const std::string& app_name, Tier tier)
        : app("xdp" + app_name.substr(0, 3)),
          peer("peer"),
          veth(app, peer),
          json(scratch("xdp_" + app_name + "_" + tier_name(tier) + ".json")),
          proc((app.run("ip addr add 10.91.0.1/24 dev " + veth.app_if),
                peer.run("ip addr add 10.91.0.2/24 dev " + veth.peer_if),
                app_argv(app, app_name, tier, {veth.app_if}, json))) {}
    NetNs app, peer;
    VethPair veth;
    std::string json;
    BackgroundProcess proc;
};

// `app` between namespaces A and B: its ports 0 and 1 are to_a.app_if and to_b.app_if in `mid`,
// default veths, on datapath `tier` with `args` (--forward pair: a bump in the wire).
struct AppBetweenTwoVeths {
    AppBetweenTwoVeths(const std::string& app_name, Tier tier, const std::vector<std::string>& args)
        : mid("xdp" + app_name.substr(0, 3) + "2"),
          a("a"),
          b("b"),
          to_a(mid, a),
          to_b(mid, b),
          json(scratch("xdp_two_" + app_name + "_" + tier_name(tier) + ".json")),
          proc(app_argv(mid, app_name, tier, {to_a.app_if, to_b.app_if}, json, args)) {}
    NetNs mid, a, b;
    VethPair to_a, to_b;
    std::string json;
    BackgroundProcess proc;
};

// Checks of a --forward pair run's end: exit 0, no XDP program left, the JSON's counters.
nlohmann::json expect_pair_run_ended(Tier tier, AppBetweenTwoVeths& run, uint64_t tx,
                                     uint64_t dropped) {
    nlohmann::json j = end_run(run.proc, run.mid, {run.to_a.app_if, run.to_b.app_if}, run.json);
    if (!j.is_object()) return j;
    EXPECT_EQ(j["tx_packets"], tx) << j.dump();
    EXPECT_EQ(j["dropped"], dropped) << j.dump();
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    expect_tiers(tier, j, tx + dropped);
    if (tier != Tier::dpdk) {
        EXPECT_EQ(j["xdp"]["forward"], "pair");
        EXPECT_EQ(j["xdp"]["interfaces"].size(), 2u) << j["xdp"].dump();
    }
    return j;
}

class NfvXdpDatapath : public ::testing::TestWithParam<Tier> {};
class L2reflectXdpDatapath : public ::testing::TestWithParam<Tier> {};

}  // namespace

TEST_P(NfvXdpDatapath, AnswersAndCountsAsTheDpdkDatapathWhileTheKernelKeepsArp) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const Tier tier = GetParam();
    AppOnVeth run("nfv", tier);
    const NetNs &app = run.app, &peer = run.peer;
    const VethPair& veth = run.veth;
    const std::string& json = run.json;
    BackgroundProcess& nfv = run.proc;
    ASSERT_TRUE(nfv.wait_for_output(": running", 30)) << nfv.output();
    if (tier != Tier::dpdk) {
        EXPECT_NE(xdp_on(app, veth.app_if), "");
        // A default veth's MTU (1500): the program takes single-buffer frames only.
        EXPECT_NE(nfv.output().find("generic mode, single-buffer frames"), std::string::npos)
            << nfv.output();
    }
    RawSocket sock(peer, veth.peer_if);
    const Frame to_app = veth.app_mac_bytes(), from_peer = veth.peer_mac_bytes();

    const IpSpec valid_specs[] = {
        {}, {.ip_total = 46, .padding = 10}, {.ver_ihl = 0x46, .ip_total = 52}, {.ip_total = 1500}};
    for (const IpSpec& s : valid_specs) {
        sock.send(with_macs(ip_frame(s), to_app, from_peer));
        auto back = sock.receive(5.0);
        ASSERT_TRUE(back) << ip_frame(s).size() << " B frame not answered\n" << nfv.output();
        Frame want = ip_frame(s);
        want.resize(l2_length(s) + s.ip_total);  // trimmed to the IP length
        EXPECT_EQ(*back, with_macs(want, from_peer, to_app));
    }
    // Served (IPv4, version 4, a whole header) but bad; then frames --xdp-steer app leaves to the
    // kernel on both datapaths (bad version, IHL < 5, a cut header, not IPv4); then a marker.
    const BadFrames bad = {
        {ip_frame({.ip_total = 46, .total_field = 47}), "bad_length"},
        {ip_frame({.break_checksum = true}), "bad_checksum"},
        {ip_frame({.break_checksum = true}), "bad_checksum"},
        {ip_frame({.src = ip(0, 0, 0, 0)}), "bad_source"},
        {ip_frame({.src = ip(255, 255, 255, 255)}), "bad_source"},
    };
    Frame cut = ip_frame({});
    cut.resize(14 + 19);
    const std::vector<Frame> not_served = {ip_frame({.ver_ihl = 0x65}), ip_frame({.ver_ihl = 0x44}),
                                           cut, other_frame(0x88B5, 60)};
    for (const auto& [frame, reason] : bad) sock.send(with_macs(frame, to_app, from_peer));
    for (const Frame& f : not_served) sock.send(with_macs(f, to_app, from_peer));
    const IpSpec marker{.ip_total = 100};
    sock.send(with_macs(ip_frame(marker), to_app, from_peer));
    auto back = sock.receive(5.0);
    ASSERT_TRUE(back) << nfv.output();
    EXPECT_EQ(*back, with_macs(ip_frame(marker), from_peer, to_app));
    expect_kernel_answers_arp(peer, veth);

    nlohmann::json j = end_run(nfv, app, {veth.app_if}, json);
    ASSERT_TRUE(j.is_object());
    // The ping's echo request is IPv4: served and sent back (MACs swapped) on every datapath.
    const uint64_t valid = std::size(valid_specs) + 2;
    EXPECT_EQ(j["tx_packets"], valid) << j.dump();
    EXPECT_EQ(j["dropped"], bad.size()) << j.dump();
    expect_drops_by_reason(j, bad);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    expect_tiers(tier, j, valid + bad.size());
    if (tier != Tier::dpdk) {
        EXPECT_GE(j["xdp"]["program"]["not_served"].get<uint64_t>(), not_served.size() + 1)
            << "+ the ARP request";
    }
}

TEST_P(L2reflectXdpDatapath, ReflectsIpv4AndLeavesArpToTheKernel) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const Tier tier = GetParam();
    AppOnVeth run("l2reflect", tier);
    const NetNs &app = run.app, &peer = run.peer;
    const VethPair& veth = run.veth;
    const std::string& json = run.json;
    BackgroundProcess& l2 = run.proc;
    ASSERT_TRUE(l2.wait_for_output(": running", 30)) << l2.output();
    RawSocket sock(peer, veth.peer_if);
    const Frame to_app = veth.app_mac_bytes(), from_peer = veth.peer_mac_bytes();
    // Padding stays: l2reflect sends back what came, MACs swapped.
    const IpSpec specs[] = {{}, {.ip_total = 46, .padding = 10}, {.ip_total = 1500}};
    for (const IpSpec& s : specs) {
        sock.send(with_macs(ip_frame(s), to_app, from_peer));
        auto back = sock.receive(5.0);
        ASSERT_TRUE(back) << l2.output();
        EXPECT_EQ(*back, with_macs(ip_frame(s), from_peer, to_app));
    }
    expect_kernel_answers_arp(peer, veth);

    nlohmann::json j = end_run(l2, app, {veth.app_if}, json);
    ASSERT_TRUE(j.is_object());
    const uint64_t served = std::size(specs) + 1;  // + the ping's echo request
    EXPECT_EQ(j["tx_packets"], served) << j.dump();
    EXPECT_EQ(j["dropped"], 0) << j.dump();
    expect_tiers(tier, j, served);
}

// nfv as a bump in the wire between A and B (--forward pair): what A sends B comes out at B
// trimmed to the IP length, MACs unchanged (pair mode's default), and the bad frames do not; the
// same bytes and counts on every datapath (on XDP: bpf_redirect_map to the paired interface).
TEST_P(NfvXdpDatapath, ForwardPairSendsValidFramesAcrossTrimmedAndDropsBadOnes) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const Tier tier = GetParam();
    AppBetweenTwoVeths run("nfv", tier, {"--forward", "pair"});
    ASSERT_TRUE(run.proc.wait_for_output(": running", 30)) << run.proc.output();
    RawSocket from_a(run.a, run.to_a.peer_if), at_b(run.b, run.to_b.peer_if);
    const Frame a_mac = run.to_a.peer_mac_bytes(), b_mac = run.to_b.peer_mac_bytes();

    const IpSpec valid_specs[] = {{},
                                  {.ip_total = 46, .padding = 10},
                                  {.ver_ihl = 0x46, .ip_total = 52},
                                  {.ip_total = 1500},
                                  {.ip_total = 100}};
    const BadFrames bad = {
        {ip_frame({.ip_total = 46, .total_field = 47}), "bad_length"},
        {ip_frame({.break_checksum = true}), "bad_checksum"},
        {ip_frame({.break_checksum = true}), "bad_checksum"},
        {ip_frame({.src = ip(0, 0, 0, 0)}), "bad_source"},
    };
    std::vector<Frame> want;
    for (const auto& [frame, reason] : bad) from_a.send(with_macs(frame, b_mac, a_mac));
    for (const IpSpec& s : valid_specs) {
        from_a.send(with_macs(ip_frame(s), b_mac, a_mac));
        Frame trimmed = ip_frame(s);
        trimmed.resize(l2_length(s) + s.ip_total);
        want.push_back(with_macs(trimmed, b_mac, a_mac));
    }
    EXPECT_EQ(at_b.receive_frames(want.size() + 1, 1.0), want) << run.proc.output();
    // And the other way, B to A.
    RawSocket from_b(run.b, run.to_b.peer_if), at_a(run.a, run.to_a.peer_if);
    from_b.send(with_macs(ip_frame({.ip_total = 60, .padding = 4}), a_mac, b_mac));
    auto back = at_a.receive(5.0);
    ASSERT_TRUE(back) << run.proc.output();
    EXPECT_EQ(*back, with_macs(ip_frame({.ip_total = 60}), a_mac, b_mac));

    nlohmann::json j = expect_pair_run_ended(tier, run, want.size() + 1, bad.size());
    expect_drops_by_reason(j, bad);
}

// l2reflect as a bump in the wire: every frame across unchanged (padding and MACs kept).
TEST_P(L2reflectXdpDatapath, ForwardPairSendsEveryFrameAcrossUnchanged) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const Tier tier = GetParam();
    AppBetweenTwoVeths run("l2reflect", tier, {"--forward", "pair"});
    ASSERT_TRUE(run.proc.wait_for_output(": running", 30)) << run.proc.output();
    RawSocket from_a(run.a, run.to_a.peer_if), at_b(run.b, run.to_b.peer_if);
    RawSocket from_b(run.b, run.to_b.peer_if), at_a(run.a, run.to_a.peer_if);
    const Frame a_mac = run.to_a.peer_mac_bytes(), b_mac = run.to_b.peer_mac_bytes();
    const IpSpec specs[] = {{}, {.ip_total = 46, .padding = 10}, {.ip_total = 1500}};
    std::vector<Frame> want;
    for (const IpSpec& s : specs) {
        want.push_back(with_macs(ip_frame(s), b_mac, a_mac));
        from_a.send(want.back());
    }
    EXPECT_EQ(at_b.receive_frames(want.size() + 1, 1.0), want) << run.proc.output();
    const Frame to_a = with_macs(ip_frame({.ip_total = 60}), a_mac, b_mac);
    from_b.send(to_a);
    auto back = at_a.receive(5.0);
    ASSERT_TRUE(back) << run.proc.output();
    EXPECT_EQ(*back, to_a);
    expect_pair_run_ended(tier, run, want.size() + 1, 0);
}

// Two interfaces without --forward pair: each interface's program reflects on its own.
TEST(L2reflectXdpDatapathTwoInterfaces, EachInterfaceReflectsItsOwnFrames) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    AppBetweenTwoVeths run("l2reflect", Tier::xdp, {});
    ASSERT_TRUE(run.proc.wait_for_output(": running", 30)) << run.proc.output();
    RawSocket at_a(run.a, run.to_a.peer_if), at_b(run.b, run.to_b.peer_if);
    const Frame a_mac = run.to_a.peer_mac_bytes(), b_mac = run.to_b.peer_mac_bytes();
    const Frame from_a = with_macs(ip_frame({}), run.to_a.app_mac_bytes(), a_mac);
    const Frame from_b = with_macs(ip_frame({.ip_total = 80}), run.to_b.app_mac_bytes(), b_mac);
    at_a.send(from_a);
    at_b.send(from_b);
    auto back_a = at_a.receive(5.0), back_b = at_b.receive(5.0);
    ASSERT_TRUE(back_a && back_b) << run.proc.output();
    EXPECT_EQ(*back_a, with_macs(from_a, a_mac, run.to_a.app_mac_bytes()));
    EXPECT_EQ(*back_b, with_macs(from_b, b_mac, run.to_b.app_mac_bytes()));
    nlohmann::json j = end_run(run.proc, run.mid, {run.to_a.app_if, run.to_b.app_if}, run.json);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["tx_packets"], 2) << j.dump();
    EXPECT_EQ(j["xdp"]["program"]["tx"], 2) << j["xdp"].dump();
    EXPECT_EQ(j["xdp"]["forward"], "reflect");
}

INSTANTIATE_TEST_SUITE_P(All, NfvXdpDatapath,
                         ::testing::Values(Tier::dpdk, Tier::xdp, Tier::xdp_slow_path),
                         [](const auto& p) { return tier_name(p.param); });
INSTANTIATE_TEST_SUITE_P(All, L2reflectXdpDatapath,
                         ::testing::Values(Tier::dpdk, Tier::xdp, Tier::xdp_slow_path),
                         [](const auto& p) { return tier_name(p.param); });

TEST(XdpDatapathOption, RunsItCannotServeAreRefusedInOneLine) {
    const std::string nfv = binary("apps/nfv/nfv");
    const std::string l2 = binary("apps/l2reflect/l2reflect");
    auto eal = no_huge_eal("0");
    std::vector<std::string> null_port = eal;
    null_port.insert(null_port.end(), {"--vdev=net_null0", "--", "--datapath", "xdp"});
    expect_usage_error(nfv, null_port, "--datapath xdp runs on --af-xdp interfaces");
    expect_usage_error(l2, null_port, "--datapath xdp runs on --af-xdp interfaces");
    expect_usage_error(nfv, {"--af-xdp", "lrnone0", "--datapath", "xdp", "--bad-port", "0"},
                       "--bad-port is the DPDK datapath's only");
    expect_usage_error(nfv, {"--af-xdp", "a0", "--datapath", "xdp", "--xdp-mode", "fast"},
                       "--xdp-mode");
    // Refused before anything is attached (no such interface is needed to say so).
    expect_usage_error(l2, {"--af-xdp", "lrnone0", "--datapath", "xdp", "--forward", "pair"},
                       "--forward pair needs an even number of ports, 1 in use");
}

TEST(XdpDatapathOption, InterfaceWithAnXdpProgramIsRefusedNamingIt) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs app("xdpbusy"), peer("peer");
    VethPair veth(app, peer);
    const std::string obj = std::string(LINERATE_BIN_DIR) + "/bpf/steer.bpf.o";
    app.run("ip link set dev " + veth.app_if + " xdpgeneric obj " + obj + " sec xdp");
    ProcessResult r = run_process(
        app.wrap({binary("apps/nfv/nfv"), "--af-xdp", veth.app_if, "--datapath", "xdp"}));
    EXPECT_EQ(r.exit_status, 1) << r.out;
    EXPECT_NE(r.out.find(veth.app_if + " has an XDP program already (id "), std::string::npos)
        << r.out;
    EXPECT_NE(xdp_on(app, veth.app_if), "") << "the other program stays";
}

// What a linerate before BPF links left after a SIGKILL: its steering program attached through
// netlink (the PMD's xdp_prog=), which outlived the process. Both paths refuse the interface in
// one line that says so and how to remove it; once removed, the same command line runs.
TEST(XdpDatapathOption, SteeringProgramLeftWithoutALinkIsNamedWithItsRemedy) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    NetNs app("xdpleft"), peer("peer");
    VethPair veth(app, peer);
    const std::string obj = std::string(LINERATE_BIN_DIR) + "/bpf/steer.bpf.o";
    app.run("ip link set dev " + veth.app_if + " xdp obj " + obj + " sec xdp");
    const std::string remedy =
        ": linerate's steering program attached without a BPF link, which "
        "outlives its process (left by a linerate older than this one or "
        "by a vdev's xdp_prog=): `ip link set dev " +
        veth.app_if + " xdp off` removes it";
    const std::string nfv = binary("apps/nfv/nfv");
    for (const char* datapath : {"dpdk", "xdp"}) {
        ProcessResult r = run_process(
            app.wrap({nfv, "--af-xdp", veth.app_if, "--datapath", datapath, "--duration", "0.2"}));
        EXPECT_EQ(r.exit_status, 1) << r.out;
        EXPECT_NE(r.out.find(veth.app_if + " has an XDP program already (id "), std::string::npos)
            << r.out;
        EXPECT_NE(r.out.find(remedy), std::string::npos) << r.out;
    }
    app.run("ip link set dev " + veth.app_if + " xdp off");
    ProcessResult r = run_process(
        app.wrap({nfv, "--af-xdp", veth.app_if, "--duration", "0.2", "--stats-period", "0"}));
    EXPECT_EQ(r.exit_status, 0) << r.out;
    EXPECT_EQ(xdp_on(app, veth.app_if), "") << "the app's program goes with it";
}
