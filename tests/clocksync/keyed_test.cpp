// clocksync with --key end to end. The master on a pcap file answers exactly the requests that
// carry the key's MAC and counts the others as bad_auth. Across a hub (a Linux bridge that learns
// nothing, so every frame reaches every port), a forger beside the link answers each request it
// sees with the right seq and client id, t2 = t3 = the truth shifted by 200 µs, valid checksums
// and the master's addresses, but no valid MAC: a client without a key takes those answers (the
// control), a keyed client drops each one as bad_auth and its clock stays on the truth. And the
// combinations a key cannot go with exit 2 with one line.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "clocksync/cs_wire.hpp"
#include "pkt/build.hpp"
#include "support/clock.hpp"
#include "support/doc_table.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::clocksync;
using namespace linerate::test;

namespace {

const std::string kApp = binary("apps/clocksync/clocksync");
constexpr const char* kKeyHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
constexpr const char* kOtherHex =
    "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

auth::Key key(const char* hex) {
    return auth::parse_key_hex(hex, "test key");
}

// A key file holding `text`, with `mode`.
std::string key_file(const std::string& text, mode_t mode = 0600) {
    static int n = 0;
    const std::string path = scratch("cs" + std::to_string(n++) + ".key");
    std::ofstream(path) << text << "\n";
    ::chmod(path.c_str(), mode);
    return path;
}

pkt::UdpFrameSpec spec_for(unsigned i) {
    pkt::UdpFrameSpec s;
    s.src_mac = {0x02, 0, 0, 0, 0, uint8_t(i)};
    s.dst_mac = {0x02, 0, 0, 0, 0, 0x4D};
    s.src_ip = pkt::ipv4_addr(10, 0, 0, uint8_t(i));
    s.dst_ip = pkt::ipv4_addr(10, 1, 0, 1);
    s.src_port = s.dst_port = kCsUdpPort;
    return s;
}

// Request i, keyed (signed by `mac`) or not; with `warmup`, a warm-up asking for its echo.
std::vector<uint8_t> request(unsigned i, auth::MessageMac* mac, bool warmup = false) {
    const size_t trailer = mac ? auth::kTrailerLen : 0;
    std::vector<uint8_t> f(kCsFrameLen + trailer);
    if (warmup)
        build_warmup(f.data(), f.size(), spec_for(i), 100 + i, true, trailer);
    else
        build_request(f.data(), f.size(), spec_for(i), 100 + i, 1000 + i, 5000 + i, trailer);
    if (mac) sign_request(*mac, f.data());
    return f;
}

}  // namespace

// Keyed requests and warm-ups are answered, each answer signed (t3 covered); unkeyed, wrong-key
// and tampered ones (requests and echo-asking warm-ups) are counted as bad_auth, unanswered.
TEST(ClocksyncKeyed, MasterAnswersOnlyWhatCarriesTheKeysMac) {
    auth::MessageMac good(key(kKeyHex)), other(key(kOtherHex));
    std::vector<std::vector<uint8_t>> in;
    unsigned keyed = 0, refused = 0;
    for (unsigned i = 0; i < 120; ++i) {
        switch (i % 6) {
            case 0:
            case 1:
                in.push_back(request(i, &good, i % 12 == 1));
                ++keyed;
                break;
            case 2:
                in.push_back(request(i, nullptr, i % 12 == 2));
                ++refused;
                break;
            case 3:
                in.push_back(request(i, &other));
                ++refused;
                break;
            case 4: {
                std::vector<uint8_t> f = request(i, &good);
                f[pkt::kUdpPayloadOffset + kCsOffT1 + 7] ^= 1;  // after signing
                in.push_back(f);
                ++refused;
                break;
            }
            default:
                in.push_back(request(i, &good));
                ++keyed;
        }
    }
    const PcapRun r = run_pcap_app(kApp, in, {"master", "--key", key_file(kKeyHex)});
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_NE(r.proc.out.find("--key: only requests that carry the key's MAC are answered"),
              std::string::npos)
        << r.proc.out;
    expect_json_documented(r.json);
    EXPECT_EQ(r.json["drops"]["bad_auth"], refused);
    EXPECT_EQ(r.json["dropped"], refused);
    EXPECT_EQ(r.json["tx_packets"], keyed);
    EXPECT_EQ(r.json["clocksync"]["key"], true);
    ASSERT_EQ(r.out.size(), keyed);
    auth::MessageMac client(key(kKeyHex));
    unsigned echoes = 0;
    for (const std::vector<uint8_t>& a : r.out) {
        ASSERT_EQ(a.size(), kCsKeyedFrameLen);
        const CsPacket p = parse_cs_packet(a.data(), a.size(), kCsUdpPort, {}, &client);
        ASSERT_TRUE(p.ok) << drop_name(p.drop);
        echoes += p.type == CsType::warmup_echo;
        if (p.type == CsType::response) {
            EXPECT_EQ(p.seq - 1000, p.client_id - 100);
            EXPECT_LE(p.t2, p.t3);
        }
    }
    EXPECT_EQ(echoes, 10u);
}

TEST(ClocksyncKeyed, WhatCannotComputeTheMacAndBadKeyFilesExit2) {
    const std::string good = key_file(kKeyHex);
    expect_usage_error(kApp, {"master", "--key", good, "--datapath", "xdp"},
                       "--key with --datapath xdp: the XDP program cannot compute the MAC");
    expect_usage_error(kApp, {"client", "--key", good, "--master-clock", "monotonic", "--xdp-turn"},
                       "--key with --xdp-turn: the steering program rewrites the signed request");
    const std::string open = key_file(kKeyHex, 0644);
    expect_usage_error(kApp, {"client", "--key", open},
                       "is accessible by group or others (mode 0644): chmod 600 " + open);
    expect_usage_error(kApp, {"master", "--key", key_file("0011")},
                       "does not hold a key: it must be 64 hex digits");
    expect_usage_error(kApp, {"master", "--key", scratch("none.key")}, "cannot open key file");
}

namespace {

// Answers every clocksync request it sees on its port of the hub before the master can: the
// request turned around (the master's addresses as source, the IPv4 checksum valid, UDP checksum
// none), t2 = t3 = CLOCK_MONOTONIC_RAW + 200 µs (the master's clock shifted). A keyed request's
// trailer is left as it came (the request's tag: wrong now) or, every other one, replaced by a
// tag under another key.
class Forger {
  public:
    Forger(const NetNs& ns, const std::string& ifname)
        : sock_(ns, ifname), other_(key(kOtherHex)), thread_([this] { run(); }) {}
    ~Forger() { stop(); }

    uint64_t stop() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
        return sent_;
    }

  private:
    void run() {
        while (!stop_) {
            std::optional<std::vector<uint8_t>> f = sock_.receive(0.02);
            if (!f) continue;
            const CsPacket p = parse_cs_packet(f->data(), f->size(), kCsUdpPort, {.verify = false});
            if (!p.ok || p.type != CsType::request) continue;
            const uint64_t shifted = test::monotonic_raw_ns() + 200'000;
            make_response(f->data(), p, shifted, shifted);
            if (p.payload_len > kCsHeaderLen && p.seq % 2 == 0) sign_answer(other_, f->data(), p);
            sock_.send(*f);
            ++sent_;
        }
    }

    RawSocket sock_;
    auth::MessageMac other_;
    std::atomic<bool> stop_{false};
    uint64_t sent_ = 0;
    std::thread thread_;  // last: starts once the rest is made
};

struct HubRun {
    ProcessResult master, client;
    nlohmann::json master_json, client_json;
    uint64_t forged = 0;
};

// Master (unless `with_master` is false), client and forger, each in its own namespace, on three
// ports of a hub; both apps on --af-xdp, the client in verification mode (5 ms off, 8 ppm fast)
// for 4 s at a 10 ms sync period. `key_args` go to both apps.
HubRun run_hub(const std::vector<std::string>& key_args, bool with_master = true) {
    NetNs hub("csh"), master_ns("csm"), client_ns("csc"), forger_ns("csf");
    VethPair m(master_ns, hub), c(client_ns, hub), f(forger_ns, hub);
    hub.run("ip link add name br0 type bridge && ip link set br0 up");
    for (const std::string& port : {m.peer_if, c.peer_if, f.peer_if})
        hub.run("ip link set " + port + " master br0 && bridge link set dev " + port +
                " learning off");
    const std::string id = std::to_string(getpid());
    const std::string master_prefix = "cskm" + id, client_prefix = "cskc" + id;
    const std::string master_json = scratch("master.json"), client_json = scratch("client.json");
    const std::string client_lcore = std::thread::hardware_concurrency() > 1 ? "1" : "0";
    auto app = [&](const std::string& lcore, const std::string& prefix, const std::string& iface,
                   const std::string& role, const std::string& json) {
        std::vector<std::string> argv = eal_command(kApp, lcore, prefix);
        argv.insert(argv.end(),
                    {"--", role, "--af-xdp", iface, "--stats-period", "0", "--json", json});
        argv.insert(argv.end(), key_args.begin(), key_args.end());
        return argv;
    };
    std::vector<std::string> client =
        app(client_lcore, client_prefix, c.app_if, "client", client_json);
    client.insert(client.end(), {"--duration", "4", "--sync-period-ms", "10", "--master-mac",
                                 m.app_mac, "--sim-offset-ns", "5000000", "--sim-drift-ppm", "8",
                                 "--probe-timeout-ms", "80"});
    HubRun r;
    std::optional<BackgroundProcess> master_run;
    if (with_master) {
        master_run.emplace(
            master_ns.wrap(app("0", master_prefix, m.app_if, "master", master_json)));
        if (!master_run->wait_for_output(": running", 60)) {
            r.master = master_run->finish(1);
            return r;
        }
    }
    {
        Forger forger(forger_ns, f.app_if);
        r.client = run_process(client_ns.wrap(client), {.timeout_s = 60});
        r.forged = forger.stop();
    }
    r.client_json = read_json(client_json);
    if (master_run) {
        // The master has received everything: the client's frames and the forged answers (the
        // hub floods them to it too).
        const uint64_t sent =
            r.client_json.is_object() ? r.client_json.value("tx_packets", uint64_t(0)) : 0;
        wait_for_stats_total(master_prefix, "rx_packets", sent + r.forged, 30);
        master_run->signal(SIGINT);
        r.master = master_run->finish(30);
        r.master_json = read_json(master_json);
    }
    std::error_code ec;
    for (const std::string& prefix : {master_prefix, client_prefix})
        std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);
    return r;
}

void print_client(const char* label, const HubRun& r) {
    const nlohmann::json& j = r.client_json;
    if (!j.is_object()) return;
    std::printf(
        "%s: forged %llu syncs %s responses %s violations %s max_abs_error_ns %s "
        "epsilon_ns %s drops %s\n",
        label, (unsigned long long)r.forged, j["syncs"].dump().c_str(),
        j["responses"].dump().c_str(), j["violations"].dump().c_str(),
        j["max_abs_error_ns"].dump().c_str(), j["epsilon_ns"].dump().c_str(),
        j["drops"].dump().c_str());
}

}  // namespace

// The control: without a key the client takes the forger's answers (no master on the hub), and
// its clock is moved 200 µs off the truth while it reports a bound below that.
TEST(ClocksyncKeyed, WithoutAKeyTheForgersAnswersMoveTheClock) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const HubRun r = run_hub({}, false);
    print_client("no key, forger only", r);
    ASSERT_EQ(r.client.exit_status, 0) << r.client.out;
    const nlohmann::json& j = r.client_json;
    EXPECT_GT(r.forged, 50u);
    EXPECT_GT(j["responses"].get<uint64_t>(), 50u);
    EXPECT_GT(j["violations"].get<uint64_t>(), 0u);
    EXPECT_GT(j["max_abs_error_ns"].get<int64_t>(), 150'000);
    EXPECT_EQ(j["drops"]["bad_auth"], 0);
}

// With the key on both ends every forged answer is dropped as bad_auth, by the client and by the
// master (which the hub floods them to), and the client's clock stays within its bound of the
// truth at every sample (no violation; the control's forged answers gave thousands).
TEST(ClocksyncKeyed, KeyedClientIgnoresForgedAnswers) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const HubRun r = run_hub({"--key", key_file(kKeyHex)});
    print_client("key, master and forger", r);
    ASSERT_EQ(r.client.exit_status, 0) << r.client.out;
    ASSERT_EQ(r.master.exit_status, 0) << r.master.out;
    const nlohmann::json &j = r.client_json, &mj = r.master_json;
    expect_json_documented(j);
    EXPECT_NE(r.client.out.find("--key: requests signed"), std::string::npos) << r.client.out;
    EXPECT_GT(r.forged, 50u);
    EXPECT_GE(j["syncs"].get<uint64_t>(), 20u);
    EXPECT_EQ(j["violations"], 0);
    // Every answer taken was the master's: a probe is answered once, by it, or times out (the
    // last one may still be waiting when the client stops).
    const uint64_t resolved = j["responses"].get<uint64_t>() + j["timeouts"].get<uint64_t>();
    EXPECT_LE(resolved, j["probes_sent"].get<uint64_t>());
    EXPECT_GE(resolved + 1, j["probes_sent"].get<uint64_t>());
    // Each forged answer that reached the client while it ran (all but the answers to its last
    // requests) is a bad_auth; nothing else is.
    const uint64_t bad = j["drops"]["bad_auth"];
    EXPECT_LE(bad, r.forged);
    EXPECT_GE(bad + 2, r.forged);
    // The master's echoes come signed and are taken (on a loaded machine not each one in time).
    EXPECT_GT(j["warmup_echoes"].get<uint64_t>(), 0u);
    EXPECT_LE(j["warmup_echoes"].get<uint64_t>(), j["warmups_sent"].get<uint64_t>());
    EXPECT_EQ(mj["drops"]["bad_auth"], r.forged);
    EXPECT_EQ(mj["dropped"], r.forged);
}
