#pragma once
// Where the master reads t2 and t3: the NIC's clock through rte_eth_timesync_* when the PMD
// supports it (read right after RX and right before TX, so no host-side clock conversion sits
// between the stamp and the port), otherwise the system clock of local_clock.hpp.
#include <rte_ethdev.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "clocksync/local_clock.hpp"
#include "clocksync/options.hpp"

namespace linerate::clocksync {

class MasterClock {
  public:
    // Enables timesync on every port for hw/auto. auto falls back to the system clock when a
    // port refuses (virtual PMDs do); hw throws std::runtime_error naming the port instead.
    // `sw_clock`: the system clock sw mode reads (CLOCK_MONOTONIC_RAW; CLOCK_REALTIME to serve
    // Unix time, e.g. to feed chronyd through a client's --chrony-shm; CLOCK_MONOTONIC, the XDP
    // datapath's).
    static MasterClock setup(const std::vector<uint16_t>& ports, TimestampMode mode,
                             SystemClock sw_clock = SystemClock::raw);

    uint64_t now(uint16_t port) const {
        if (!nic_) return clock_ns(clock_id(sw_clock_));
        timespec ts{};
        rte_eth_timesync_read_time(port, &ts);
        return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
    }
    bool nic() const { return nic_; }
    // The system clock as a LocalClock, to convert the steering program's receive stamps
    // (CLOCK_MONOTONIC) into t2: CLOCK_MONOTONIC_RAW or CLOCK_MONOTONIC only (a NIC clock, or
    // CLOCK_REALTIME that may step between the stamp and its conversion, has none).
    std::optional<LocalClock> stamp_clock() const {
        if (nic_ || sw_clock_ == SystemClock::realtime) return std::nullopt;
        return LocalClock{std::nullopt, clock_id(sw_clock_)};
    }
    std::string describe() const;

  private:
    MasterClock(bool nic, SystemClock sw_clock) : nic_(nic), sw_clock_(sw_clock) {}
    bool nic_;
    SystemClock sw_clock_;
};

}  // namespace linerate::clocksync
