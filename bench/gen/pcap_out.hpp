#pragma once
// --write-pcap: the frames worker 0 of 1 would send, written to a pcap, without EAL or ports.
#include <array>
#include <cstdint>
#include <string>

#include "gen/expected.hpp"
#include "gen/traffic.hpp"

namespace linerate::gen {

struct PcapSummary {
    uint64_t frames = 0;
    uint64_t bytes = 0;  // frame bytes, without FCS
    uint64_t expects_return = 0;
    std::array<uint64_t, size_t(FrameClass::kv_malformed) + 1> classes{};
    ExpectedSums expected;  // kvagg with track_expected
};

// Writes `count` frames; record i gets timestamp i * 1e9 / pps ns (pps 0: all 0).
// Throws std::runtime_error when the file cannot be written.
PcapSummary write_traffic_pcap(const TrafficPlan& plan, uint64_t count, const std::string& path,
                               double pps);

}  // namespace linerate::gen
