#pragma once
// EAL lifetime as an RAII object: rte_eal_init in the constructor, rte_eal_cleanup at the end.
#include <string>
#include <vector>

namespace linerate::eal {

class Eal {
  public:
    // args[0] is the program name. Throws std::runtime_error with rte_strerror on failure.
    // DPDK's lines go to stderr only (not syslog too), unless args have --syslog.
    explicit Eal(const std::vector<std::string>& args);
    ~Eal();
    Eal(const Eal&) = delete;
    Eal& operator=(const Eal&) = delete;
};

// A primary process cannot start on a runtime directory (--file-prefix, default "rte") another
// primary holds; the EAL then says only "Cannot init config". Throws std::invalid_argument naming
// the prefix and the pid holding it. Nothing to check without shared config (--no-shconf,
// --in-memory) or for a secondary process.
void check_file_prefix_free(const std::vector<std::string>& eal_args);
// A net_memif server vdev with socket-abstract=no binds a socket file (socket=, default
// /run/memif.sock) that a killed server leaves behind, and binding it again fails ("Address
// already in use"): removes each such file that nobody listens on any more (connect refused), so
// the same command line starts again. A file a running server listens on is left to the PMD's
// error. Abstract sockets (DPDK's default) leave nothing. Call before the EAL makes the vdevs.
void remove_stale_memif_sockets(const std::vector<std::string>& eal_args);
// The EAL args a shortcut (--pcap, --af-xdp) uses when the user gave none: these lcores, no
// hugepages (memory_mb of ordinary memory), no PCI, no shared config, no telemetry.
std::vector<std::string> default_eal_args(const std::string& lcores, unsigned memory_mb);

// EAL args for test mode `--pcap IN[:OUT]`: a net_pcap vdev, plus (when the user gave no EAL
// args) one lcore, no hugepages, no PCI and no shared config so tests can run side by side.

// The vdev name test mode gives its port.
inline constexpr const char* kPcapVdevName = "net_pcap_linerate";

struct PcapSpec {
    std::string in;
    std::string out;  // empty: transmitted frames are discarded
};
PcapSpec parse_pcap_spec(const std::string& spec);  // throws std::invalid_argument

// EAL args for test mode `--pcap IN[:OUT]`: a net_pcap vdev, plus (when the user gave no EAL
// args) one lcore, no hugepages, no PCI and no shared config so tests can run side by side.
std::vector<std::string> pcap_mode_eal_args(const PcapSpec& spec, bool user_gave_eal);
std::vector<std::string> pcap_mode_eal_args(const std::string& pcap_spec, bool user_gave_eal);

}  // namespace linerate::eal
