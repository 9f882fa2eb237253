#include "clocksync/master_clock.hpp"

#include <fmt/core.h>
#include <rte_errno.h>

#include <stdexcept>

namespace linerate::clocksync {

MasterClock MasterClock::setup(const std::vector<uint16_t>& ports, TimestampMode mode,
                               SystemClock sw_clock) {
    if (mode == TimestampMode::software) return MasterClock(false, sw_clock);
    std::vector<uint16_t> enabled;
    for (uint16_t port : ports) {
        int rc = rte_eth_timesync_enable(port);
        timespec ts{};
        if (rc == 0) rc = rte_eth_timesync_read_time(port, &ts);
        if (rc == 0) {
            enabled.push_back(port);
            continue;
        }
        for (uint16_t p : enabled) rte_eth_timesync_disable(p);
        if (mode == TimestampMode::hardware)
            throw std::runtime_error("--timestamps hw: port " + std::to_string(port) +
                                     " has no timesync support (" + rte_strerror(-rc) + ")");
        return MasterClock(false, sw_clock);
    }
    return MasterClock(!ports.empty(), sw_clock);
}

std::string MasterClock::describe() const {
    if (nic_) return "hw: NIC clock (rte_eth_timesync_read_time) after RX and before TX";
    return fmt::format("sw: clock_gettime({}) after RX and before TX", clock_name(sw_clock_));
}

}  // namespace linerate::clocksync
