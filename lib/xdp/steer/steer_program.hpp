#pragma once
// The app's side of linerate's XDP steering program (lib/xdp/steer/steer.bpf.c), with libbpf: find
// the program attached to an interface, write the filter into its config map, read its per-queue
// counters. Plain libbpf, no EAL.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace linerate::xdp {

inline constexpr const char* kSteerObjectName = "steer.bpf.o";

// The id of the XDP program attached (any mode) to interface `ifname`, 0 when none. Throws
// std::runtime_error when the interface does not exist or libbpf fails.
uint32_t xdp_program_id(const std::string& ifname);

// Why interface `ifname` cannot take an app's XDP program, "" when it has none: "IFACE has an
// XDP program already (id N)" and whose it is as far as the kernel tells: held by a running
// process through a BPF link (it goes when that process ends), or attached without a link
// (netlink: it stays after its process ended; linerate's steering program so attached is what a
// linerate before its BPF links, or a vdev's xdp_prog=, left), with the command that removes it.
// Throws as xdp_program_id.
std::string xdp_program_in_the_way(const std::string& ifname);

// Values of lib/xdp/steer/steer_abi.h's enum steer_mode.
enum class SteerMode : uint32_t { none = 0, all = 1, ipv4 = 2, udp_port = 3 };

struct SteerFilter {
    SteerMode mode = SteerMode::none;
    uint16_t udp_port = 0;  // for udp_port
    // Each claimed frame carries its receive time ahead of it (STEER_FLAG_RX_STAMP, read with
    // take_rx_stamp): the app's wish, kept whatever --xdp-steer says is steered.
    bool rx_stamp = false;
    // The app's steering hook runs (STEER_FLAG_HOOK; the program is the app's steering object,
    // SteerHook::object): it may send a frame back by XDP_TX (turned) or put a word into its
    // stamp (RxStamp::hook_ns); e.g. a client that turns an answer into its next request.
    bool hook = false;
    std::string describe() const;  // "IPv4/UDP to port 5000", "all IPv4", ...
    bool operator==(const SteerFilter&) const = default;
};

// An app's steering hook (lib/xdp/steer/steer.bpf.c's STEER_HOOK_HEADER, built into the app's own
// steering object by linerate_bpf_programs' STEER_HOOK) and how the runtime names what it does.
struct SteerHook {
    std::string object = kSteerObjectName;  // the steering object: "<app>_steer.bpf.o"
    std::string does;      // the stats line's words while it is on: "warm-up echoes ..."
    std::string json_key;  // the xdp JSON's key of SteerFilter::hook ("cs_turn"); "": none
};

// The --xdp-steer values: "app" is what the app serves (`app_filter`), "ipv4" and "all" as
// named, "udp:PORT" one UDP destination port; `app_filter`'s rx_stamp in each. Throws
// std::invalid_argument.
SteerFilter parse_steer_filter(const std::string& value, const SteerFilter& app_filter);

struct SteerCounters {
    uint64_t redirected = 0;  // to the queue's AF_XDP socket
    uint64_t passed = 0;      // not matched: to the kernel
    uint64_t unclaimed = 0;   // matched, no socket on that queue: to the kernel
    uint64_t turned = 0;      // hook: sent back by the app's steering hook (XDP_TX)
    SteerCounters& operator+=(const SteerCounters& o);
    nlohmann::json json() const;
};

class SteerProgram {
  public:
    // The steering program attached (XDP, any mode) to interface `ifname`; nullptr when the
    // interface has no XDP program or one without the steering maps. Throws std::runtime_error
    // when the interface does not exist or libbpf fails.
    static std::unique_ptr<SteerProgram> attached_to(const std::string& ifname);
    // The steering program with kernel id `prog_id` (nullptr when it lacks the maps). Throws.
    static std::unique_ptr<SteerProgram> from_id(uint32_t prog_id);
    ~SteerProgram();
    SteerProgram(const SteerProgram&) = delete;
    SteerProgram& operator=(const SteerProgram&) = delete;

    uint32_t prog_id() const { return prog_id_; }
    void set_filter(const SteerFilter& filter);  // throws
    SteerFilter filter() const;                  // throws
    // Counters per RX queue (index = queue; the last slot also holds higher queues), summed
    // over CPUs, up to the highest queue that saw a frame (at least one entry).
    std::vector<SteerCounters> queues() const;
    SteerCounters total() const;

  private:
    SteerProgram(uint32_t prog_id, int config_fd, int counters_fd)
        : prog_id_(prog_id), config_fd_(config_fd), counters_fd_(counters_fd) {}
    uint32_t prog_id_;
    int config_fd_;
    int counters_fd_;
};

}  // namespace linerate::xdp
