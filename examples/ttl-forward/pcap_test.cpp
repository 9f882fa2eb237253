// The installed runtime end to end: ttl-forward on a pcap (test mode, no NIC, no hugepages).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "pcapio/pcap_file.hpp"

namespace {

using linerate::pcapio::Frame;

Frame ipv4_frame(uint8_t ttl, uint16_t checksum) {
    Frame f(60, 0x5A);
    const uint8_t head[34] = {2,
                              0,
                              0,
                              0,
                              0,
                              2,
                              2,
                              0,
                              0,
                              0,
                              0,
                              1,
                              0x08,
                              0x00,  // Ethernet
                              0x45,
                              0,
                              0,
                              46,
                              0x12,
                              0x34,
                              0,
                              0,
                              ttl,
                              17,  // IPv4 ...
                              uint8_t(checksum >> 8),
                              uint8_t(checksum),
                              10,
                              0,
                              0,
                              1,
                              10,
                              0,
                              0,
                              2};
    std::copy(head, head + 34, f.begin());
    f.resize(14 + 46);
    return f;
}

}  // namespace

TEST(TtlForwardPcap, ForwardsWithTheTtlLoweredAndCountsEachDrop) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("ttl-forward-" + std::to_string(getpid()));
    fs::create_directories(dir);
    const std::string in = dir / "in.pcap", out = dir / "out.pcap", json = dir / "out.json";
    // Header checksums computed apart (RFC 1071) for these headers, TTL 64: 0x5489, 63: 0x5589.
    Frame arp(60, 0);
    arp[12] = 0x08;
    arp[13] = 0x06;
    Frame truncated = ipv4_frame(64, 0x5489);
    truncated.resize(30);
    linerate::pcapio::write_frames(
        in, {ipv4_frame(64, 0x5489), ipv4_frame(2, 0x9289), ipv4_frame(1, 0x9389), arp, truncated,
             ipv4_frame(0, 0x9489)});
    const std::string cmd = std::string(TTL_FORWARD_BIN) + " --pcap " + in + ":" + out +
                            " --json " + json + " > " + (dir / "log").string() + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << std::ifstream(dir / "log").rdbuf();

    const std::vector<Frame> want = {ipv4_frame(63, 0x5589), ipv4_frame(1, 0x9389)};
    EXPECT_EQ(linerate::pcapio::read_frames(out), want);
    nlohmann::json j;
    std::ifstream(json) >> j;
    EXPECT_EQ(j["rx_packets"], 6);
    EXPECT_EQ(j["tx_packets"], 2);
    EXPECT_EQ(j["drops"]["ttl_expired"], 2);
    EXPECT_EQ(j["drops"]["not_ipv4"], 1);
    EXPECT_EQ(j["drops"]["truncated"], 1);
    EXPECT_EQ(j["drops"]["tx_full"], 0);
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    fs::remove_all(dir);
}
