#pragma once
// gen's own command-line options (beside the common ones of lib/cli), and what they mean for
// the traffic model and the sender. No EAL: --write-pcap runs on these alone.
#include <CLI/CLI.hpp>

#include <array>
#include <cstdint>
#include <string>

#include "gen/traffic.hpp"

namespace linerate::gen {

struct GenOptions {
    TrafficConfig traffic;
    uint64_t count = 0;  // frames in all, 0 = until --duration or a signal
    double rate_pps = 0;
    double rate_gbps = 0;
    double drain_s = 0.2;
    double catch_up_s = 0.01;
    std::string write_pcap;
    std::string expect_path;

    // Raw values that finish_gen_options() turns into `traffic`.
    std::string kind = "udp";
    std::string dist = "uniform";
    std::string src_mac, dst_mac, src_ip, dst_ip;
    double bad_all = 0;
    std::array<double, kBadClassCount> bad{};
};

void add_gen_options(CLI::App& app, GenOptions& o);

// Checks and converts what was parsed; throws std::invalid_argument with a one-line message.
void finish_gen_options(const CLI::App& app, GenOptions& o);

// The frame rate the options ask for: --rate-pps, or --rate-gbps over the normal frame plus
// 24 bytes of wire overhead; 0 for full rate.
double target_pps(const GenOptions& o);

// "02:00:00:00:00:01"; throws std::invalid_argument.
pkt::MacAddr parse_mac(const std::string& text);
// "192.168.0.1" in host order; throws std::invalid_argument.
uint32_t parse_ip(const std::string& text);

}  // namespace linerate::gen
