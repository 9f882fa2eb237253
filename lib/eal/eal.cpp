#include "eal/eal.hpp"

#include <rte_eal.h>
#include <rte_errno.h>

#include <stdexcept>

namespace linerate::eal {

Eal::Eal(const std::vector<std::string>& args) {
    std::vector<std::string> copy = args;  // rte_eal_init may permute argv
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (rte_eal_init(int(copy.size()), argv.data()) < 0)
        throw std::runtime_error(std::string("EAL init failed: ") + rte_strerror(rte_errno));
}

Eal::~Eal() {
    rte_eal_cleanup();
}

PcapSpec parse_pcap_spec(const std::string& spec) {
    PcapSpec p;
    auto colon = spec.find(':');
    p.in = spec.substr(0, colon);
    if (colon != std::string::npos) p.out = spec.substr(colon + 1);
    if (p.in.empty()) throw std::invalid_argument("--pcap needs IN[:OUT]");
    // net_pcap's vdev arguments are comma-separated key=value pairs.
    if (spec.find_first_of(",=") != std::string::npos)
        throw std::invalid_argument("--pcap paths may not contain ',' or '='");
    return p;
}

std::vector<std::string> pcap_mode_eal_args(const std::string& pcap_spec, bool user_gave_eal) {
    PcapSpec p = parse_pcap_spec(pcap_spec);
    std::string vdev = std::string("--vdev=") + kPcapVdevName + ",rx_pcap=" + p.in;
    // Without tx_pcap, net_pcap 22.11 would need an interface; /dev/null discards.
    vdev += ",tx_pcap=" + (p.out.empty() ? std::string("/dev/null") : p.out);
    std::vector<std::string> args;
    if (!user_gave_eal) {
        // No telemetry: without shared config every such process would contend for the one
        // default socket, and a test run has nobody to answer it.
        args = {"-l",
                "0",
                "--no-huge",
                "-m",
                "256",
                "--no-pci",
                "--no-shconf",
                "--no-telemetry",
                "--log-level=lib.eal:warning"};
    }
    args.push_back(vdev);
    return args;
}

}  // namespace linerate::eal
