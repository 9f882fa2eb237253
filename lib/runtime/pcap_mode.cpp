#include "runtime/pcap_mode.hpp"

#include <fmt/core.h>
#include <rte_ethdev.h>

#include <stdexcept>

#include "pcapio/pcap_file.hpp"
#include "worker/stop.hpp"

namespace linerate {

namespace {
constexpr double kStallS = 2.0;  // no frame for this long: net_pcap delivers no more
}  // namespace

PcapMode::PcapMode(const std::string& app, const std::string& spec)
    : app_(app), spec_(eal::parse_pcap_spec(spec)) {
    std::string warning;
    pcapio::TestInput input;
    try {
        input = pcapio::test_mode_input(spec_.in, warning);
    } catch (const std::exception& e) {  // an unreadable input is the user's to fix: exit 2
        throw std::invalid_argument(e.what());
    }
    if (!warning.empty()) fmt::print(stderr, "{}: warning: {}\n", app_, warning);
    frames_ = input.frames;
    spec_.in = input.path;
}

void PcapMode::add_eal_args(std::vector<std::string>& args, bool user_gave_eal_args) {
    const std::vector<std::string> more = eal::pcap_mode_eal_args(spec_, user_gave_eal_args);
    args.insert(args.end(), more.begin(), more.end());
}

std::optional<std::vector<uint16_t>> PcapMode::make_ports(unsigned /*workers*/) {
    if (rte_eth_dev_get_port_by_name(eal::kPcapVdevName, &port_) != 0)
        throw std::runtime_error("the net_pcap port of --pcap was not created");
    return std::vector<uint16_t>{port_};
}

bool PcapMode::input_drained(uint64_t rx_packets) const {
    // net_pcap returns 0 at end of file forever; knowing the frame count tells "done" from
    // "slow". Frames the PMD itself rejected (e.g. larger than an mbuf chain) count as seen.
    rte_eth_stats st{};
    rte_eth_stats_get(port_, &st);
    return rx_packets + st.ierrors >= frames_;
}

void PcapMode::tick(const MonitorTick& tick) {
    if (last_progress_s_ < 0) last_progress_s_ = tick.now_s;
    if (input_drained(tick.rx_packets)) worker::request_stop();
    if (tick.rx_packets != last_rx_) {
        last_rx_ = tick.rx_packets;
        last_progress_s_ = tick.now_s;
    } else if (tick.now_s - last_progress_s_ > kStallS) {
        fmt::print(stderr, "{}: warning: net_pcap delivered {} of {} frames, stopping\n", app_,
                   tick.rx_packets, frames_);
        worker::request_stop();
    }
}

}  // namespace linerate
