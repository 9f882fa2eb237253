// nfv on kernel-backed ports (net_af_xdp through --af-xdp, net_af_packet) in network namespaces
// the test creates, with traffic the kernel and ordinary sockets make:
// - one port: IPv4 frames from a raw socket, valid ones come back trimmed and MAC-swapped byte
//   for byte, bad ones are dropped and counted by reason;
// - inline (`--forward pair`): nfv between two namespaces as a bump in the wire; ping and a TCP
//   transfer cross it, IPv4 frames with bad headers do not and are counted by reason.
// Every run exits 0 with no mbuf in use (AF_XDP's kept fill ring apart) and rx + port drops ==
// what was sent.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <optional>

#include "frames.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;
using namespace linerate::test::nfv;

namespace {

const std::string kNfv = binary("apps/nfv/nfv");

enum class Kind { af_xdp, af_packet };

std::string kind_name(Kind k) {
    return k == Kind::af_xdp ? "af_xdp" : "af_packet";
}

// nfv's argv (inside namespace `ns`) on one port per interface, then `app_args`.
std::vector<std::string> nfv_argv(const NetNs& ns, Kind kind, const std::vector<std::string>& ifs,
                                  const std::string& json,
                                  const std::vector<std::string>& app_args) {
    std::vector<std::string> argv = {kNfv};
    if (kind == Kind::af_xdp) {
        for (const auto& i : ifs) argv.insert(argv.end(), {"--af-xdp", i});
        // Every frame to nfv: a bump in the wire forwards ARP too, and it counts non-IPv4.
        argv.insert(argv.end(), {"--xdp-steer", "all"});
    } else {
        auto eal = no_huge_eal("0");
        argv.insert(argv.end(), eal.begin(), eal.end());
        for (size_t p = 0; p < ifs.size(); ++p)
            argv.push_back("--vdev=net_af_packet" + std::to_string(p) + ",iface=" + ifs[p]);
        argv.push_back("--");
    }
    argv.insert(argv.end(), {"--json", json, "--stats-period", "0.5"});
    argv.insert(argv.end(), app_args.begin(), app_args.end());
    return ns.wrap(argv);
}

Frame with_macs(Frame f, const Frame& dst, const Frame& src) {
    std::copy(dst.begin(), dst.end(), f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    return f;
}

uint64_t port_drop_total(const nlohmann::json& j) {
    uint64_t n = 0;
    for (const auto& [port, d] : j["port_drops"].items()) n += d["total"].get<uint64_t>();
    return n;
}

// Exit 0, nothing leaked, every frame received accounted for, the port's drops reported.
void expect_clean_exit(Kind kind, const ProcessResult& r, const nlohmann::json& j, size_t ports) {
    EXPECT_EQ(r.exit_status, 0) << r.out;
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0) << r.out;
    EXPECT_EQ(j["pmd_held"], kind == Kind::af_xdp ? 2048 * ports : 0) << r.out;
    EXPECT_EQ(j["rx_packets"].get<uint64_t>(),
              j["tx_packets"].get<uint64_t>() + j["dropped"].get<uint64_t>())
        << j.dump();
    ASSERT_TRUE(j["port_drops"].is_object()) << j.dump();
    EXPECT_EQ(j["port_drops"].size(), ports) << j.dump();
    EXPECT_NE(r.out.find("port drops"), std::string::npos) << r.out;
}

class NfvKernelPort : public ::testing::TestWithParam<Kind> {};

}  // namespace

TEST_P(NfvKernelPort, ChecksRawSocketFramesAndCountsEachReason) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const Kind kind = GetParam();
    NetNs app("nfv"), peer("peer");
    VethPair veth(app, peer);
    const std::string json = scratch("nfv_kernel.json");
    BackgroundProcess nfv(nfv_argv(app, kind, {veth.app_if}, json, {}));
    ASSERT_TRUE(nfv.wait_for_output(": running", 30)) << nfv.output();
    RawSocket sock(peer, veth.peer_if);
    const Frame to_app = veth.app_mac_bytes(), from_peer = veth.peer_mac_bytes();

    // Valid frames, one at a time: each comes back cut after the datagram, MACs swapped.
    const IpSpec valid_specs[] = {{},
                                  {.ip_total = 46, .padding = 10},
                                  {.ver_ihl = 0x46, .ip_total = 52},
                                  {.ip_total = 1000},
                                  {.ip_total = 1500},
                                  {.src = ip(10, 0, 0, 255)}};
    for (const IpSpec& s : valid_specs) {
        sock.send(with_macs(ip_frame(s), to_app, from_peer));
        auto back = sock.receive(5.0);
        ASSERT_TRUE(back) << "valid frame of " << ip_frame(s).size() << " B not sent back\n"
                          << nfv.output();
        Frame want = ip_frame(s);
        want.resize(l2_length(s) + s.ip_total);
        EXPECT_EQ(*back, with_macs(want, from_peer, to_app));
    }

    // Bad frames, then a valid marker: the marker is the next frame back (one queue keeps the
    // order), so none of the bad ones was sent on.
    Frame short_ip = ip_frame({});
    short_ip.resize(14 + 19);
    const std::vector<std::pair<Frame, std::string>> bad = {
        {short_ip, "tiny_packet"},
        {ip_frame({.ver_ihl = 0x65}), "bad_version"},
        {ip_frame({.ver_ihl = 0x44}), "bad_header_length"},
        {ip_frame({.ip_total = 46, .total_field = 47}), "bad_length"},
        {ip_frame({.ip_total = 46, .total_field = 19}), "bad_length"},
        {ip_frame({.break_checksum = true}), "bad_checksum"},
        {ip_frame({.break_checksum = true}), "bad_checksum"},
        {ip_frame({.src = ip(0, 0, 0, 0)}), "bad_source"},
        {ip_frame({.src = ip(255, 255, 255, 255)}), "bad_source"},
        {other_frame(0x88B5, 60), "not_ipv4"},
    };
    for (const auto& [frame, reason] : bad) sock.send(with_macs(frame, to_app, from_peer));
    const IpSpec marker{.ip_total = 100};
    sock.send(with_macs(ip_frame(marker), to_app, from_peer));
    auto back = sock.receive(5.0);
    ASSERT_TRUE(back) << nfv.output();
    EXPECT_EQ(*back, with_macs(ip_frame(marker), from_peer, to_app));

    nfv.signal(SIGINT);
    ProcessResult r = nfv.finish(30);
    nlohmann::json j = read_json(json);
    expect_clean_exit(kind, r, j, 1);
    const size_t sent = std::size(valid_specs) + bad.size() + 1;
    EXPECT_EQ(j["rx_packets"].get<uint64_t>() + port_drop_total(j), sent) << j.dump();
    EXPECT_EQ(j["tx_packets"], std::size(valid_specs) + 1);
    for (const char* reason : {"tiny_packet", "bad_version", "bad_header_length", "bad_length",
                               "bad_checksum", "bad_source", "not_ipv4"}) {
        auto n = std::count_if(bad.begin(), bad.end(),
                               [&](const auto& b) { return b.second == reason; });
        EXPECT_EQ(j["drops"][reason], n) << reason << ": " << j["drops"].dump();
    }
    EXPECT_EQ(j["dropped"], bad.size());
}

// nfv inline between namespaces A and B (10.77.0.1 and .2 on one subnet): what A and B's kernels
// send each other crosses nfv's two ports.
TEST_P(NfvKernelPort, InlineBetweenTwoNamespacesPassesPingAndTcpButNotBadHeaders) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const Kind kind = GetParam();
    NetNs mid("nfv"), a("a"), b("b");
    // app_if ends in `mid`, nfv's ports 0 and 1; veths as users get them, except that on
    // net_af_packet the hosts' segmentation offload is off, as the README tells users.
    const VethOptions veth{.peer_tso_off = kind == Kind::af_packet};
    VethPair to_a(mid, a, veth), to_b(mid, b, veth);
    a.run("ip addr add 10.77.0.1/24 dev " + to_a.peer_if);
    b.run("ip addr add 10.77.0.2/24 dev " + to_b.peer_if);
    const std::string json = scratch("nfv_inline.json");
    // ARP is not IPv4: --pass-non-ip forwards it, or A and B could not resolve each other.
    BackgroundProcess nfv(nfv_argv(mid, kind, {to_a.app_if, to_b.app_if}, json,
                                   {"--forward", "pair", "--pass-non-ip"}));
    ASSERT_TRUE(nfv.wait_for_output(": running", 30)) << nfv.output();

    ShellResult ping = a.try_run("ping -c 3 -i 0.2 -W 2 10.77.0.2");
    ASSERT_EQ(ping.status, 0) << ping.out << nfv.output();

    // 1 MiB over TCP from A to B; B reports the length and SHA-256 of what it read.
    BackgroundProcess server(
        b.wrap({"python3", "-c",
                "import hashlib, socket\n"
                "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                "s.bind(('10.77.0.2', 5001)); s.listen(1); print('listening', flush=True)\n"
                "c, _ = s.accept(); h = hashlib.sha256(); n = 0\n"
                "while True:\n"
                "    d = c.recv(65536)\n"
                "    if not d: break\n"
                "    h.update(d); n += len(d)\n"
                "print('received', n, h.hexdigest(), flush=True)\n"}));
    ASSERT_TRUE(server.wait_for_output("listening", 20)) << server.output();
    std::string sent = a.run(
        "python3 -c \"import hashlib, os, socket\n"
        "data = os.urandom(1 << 20)\n"
        "s = socket.create_connection(('10.77.0.2', 5001), timeout=20); s.sendall(data); "
        "s.close()\n"
        "print('received', len(data), hashlib.sha256(data).hexdigest())\"");
    ProcessResult got = server.finish(30);
    EXPECT_EQ(got.exit_status, 0) << got.out;
    EXPECT_NE(got.out.find(sent.substr(0, sent.find('\n'))), std::string::npos)
        << "sent: " << sent << "server: " << got.out;

    // IPv4 frames with bad headers from a raw socket in A, addressed to B, then a valid marker:
    // B sees the marker (unchanged: pair mode keeps the MACs) and none of the bad ones.
    RawSocket from_a(a, to_a.peer_if), at_b(b, to_b.peer_if);
    const Frame a_mac = to_a.peer_mac_bytes(), b_mac = to_b.peer_mac_bytes();
    auto addressed = [&](IpSpec s) {
        s.src = ip(10, 77, 0, 1);
        s.dst = ip(10, 77, 0, 2);
        return with_macs(ip_frame(s), b_mac, a_mac);
    };
    const std::vector<std::pair<Frame, std::string>> bad = {
        {addressed({.ver_ihl = 0x65}), "bad_version"},
        {addressed({.ver_ihl = 0x44}), "bad_header_length"},
        {addressed({.ip_total = 46, .total_field = 60}), "bad_length"},
        {addressed({.break_checksum = true}), "bad_checksum"},
        {with_macs(ip_frame({.src = ip(0, 0, 0, 0), .dst = ip(10, 77, 0, 2)}), b_mac, a_mac),
         "bad_source"},
    };
    for (const auto& [frame, reason] : bad) from_a.send(frame);
    const Frame marker = addressed({.ip_total = 64});
    from_a.send(marker);
    bool marker_seen = false;
    for (const Frame& f : at_b.receive_frames(100, 1.0)) {
        for (const auto& [frame, reason] : bad)
            EXPECT_NE(f, frame) << reason << " frame crossed nfv";
        marker_seen = marker_seen || f == marker;
    }
    EXPECT_TRUE(marker_seen) << nfv.output();

    nfv.signal(SIGINT);
    ProcessResult r = nfv.finish(30);
    nlohmann::json j = read_json(json);
    expect_clean_exit(kind, r, j, 2);
    for (const auto& [frame, reason] : bad) EXPECT_EQ(j["drops"][reason], 1) << j["drops"].dump();
    EXPECT_EQ(j["dropped"], bad.size()) << j["drops"].dump();
    // Ping (3 requests, 3 replies), ARP, the TCP transfer (~1 MiB in 1500 B frames) and the marker.
    EXPECT_GT(j["tx_packets"].get<uint64_t>(), 700u) << j.dump();
}

INSTANTIATE_TEST_SUITE_P(All, NfvKernelPort, ::testing::Values(Kind::af_xdp, Kind::af_packet),
                         [](const auto& p) { return kind_name(p.param); });
