#pragma once
// --pcap IN[:OUT]: test mode on a file. The input is checked and counted before the EAL (so a
// bad file exits 2 at once, and the run knows when it is done), the net_pcap vdev and the
// test-mode EAL defaults are added, the run uses that one port, and the monitor stops the run
// once every frame of the file came in (or net_pcap stalled).
#include <cstdint>
#include <string>

#include "eal/eal.hpp"
#include "runtime/feature.hpp"

namespace linerate {

class PcapMode final : public Feature {
  public:
    // Throws std::invalid_argument for a bad spec or an unreadable or bad input file (a usage
    // error).
    PcapMode(const std::string& app, const std::string& spec);

    void add_eal_args(std::vector<std::string>& args, bool user_gave_eal_args) override;
    std::optional<std::vector<uint16_t>> make_ports(unsigned workers) override;
    std::chrono::milliseconds tick_period() const override { return std::chrono::milliseconds(1); }
    void tick(const MonitorTick& tick) override;

  private:
    bool input_drained(uint64_t rx_packets) const;

    std::string app_;
    eal::PcapSpec spec_;
    uint64_t frames_ = 0;  // in the input file
    uint16_t port_ = 0;
    uint64_t last_rx_ = 0;
    double last_progress_s_ = -1;
};

}  // namespace linerate
