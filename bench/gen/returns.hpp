#pragma once
// What gen makes of the frames that come back: stamped udp/nfv-mix frames (stamp.hpp) and
// clocksync responses give a round-trip time into a log histogram, and a sequence number lower
// than the highest seen on the same flow counts as reordered. Anything else is foreign.
// No EAL: the sender passes TSC values, tests pass made-up ones.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gen/traffic.hpp"
#include "stats/histogram.hpp"

namespace linerate::gen {

// TSC cycles to ns since a base, for latencies and clocksync's t1.
struct TscClock {
    uint64_t base = 0;
    double ns_per_cycle = 1;
    uint64_t ns(uint64_t tsc) const { return uint64_t(double(tsc - base) * ns_per_cycle); }
};

enum class Return : uint8_t { foreign, in_order, reordered };

class ReturnTracker {
  public:
    ReturnTracker(const TrafficConfig& config, TscClock clock);

    Return on_frame(const uint8_t* frame, size_t len, uint64_t now_tsc);

    const stats::LogHistogram& latency_ns() const { return latency_; }

  private:
    Return account(uint32_t flow, uint64_t seq, uint64_t rtt_ns);

    Kind kind_;
    uint16_t src_port_;
    uint32_t flows_;
    TscClock clock_;
    std::vector<uint64_t> high_;  // per flow: highest sequence seen + 1 (0: none yet)
    stats::LogHistogram latency_;
};

}  // namespace linerate::gen
