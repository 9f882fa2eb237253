#pragma once
// The steering programs (lib/xdp/steer) on the interfaces of an app's net_af_xdp ports: found
// after the ports started (the program the app attached, or a vdev's xdp_prog=), given the app's
// filter, and read for the summary, the JSON `xdp` object and the /linerate/xdp
// telemetry. The EAL side of the steering family (ports by id); AfXdpSteering holds it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "xdp/steer/steer_program.hpp"

namespace linerate::xdp {

class Steering {
  public:
    // Finds linerate's steering program on the interface of every net_af_xdp port among
    // `ports` and writes `filter` into it. Interfaces without it are left alone (and listed by
    // unsteered()). Throws
    // std::runtime_error on a libbpf failure.
    // `hook`: the app's steering hook, named in the description and the JSON.
    Steering(const std::vector<uint16_t>& ports, const SteerFilter& filter, SteerHook hook);

    bool empty() const { return interfaces_.empty(); }
    // Interfaces of net_af_xdp ports without linerate's program whose vdevs name no
    // xdp_prog=: DPDK's default program there hands the app every frame.
    const std::vector<std::string>& unsteered() const { return unsteered_; }
    const SteerFilter& filter() const { return filter_; }
    std::string describe() const;  // one line per interface: program id and filter

    // The programs' counters summed over the interfaces.
    SteerCounters total() const;
    std::string summary() const;
    // {"filter", "redirected", "passed", "unclaimed", "interfaces": {IFACE: {"prog_id",
    // "redirected", "passed", "unclaimed", "queues": [{"queue", "redirected", ...}]}}}
    nlohmann::json json() const;
    // The same figures one level deep for rte_telemetry: totals and per-queue arrays.
    nlohmann::json telemetry() const;

  private:
    struct Interface {
        std::string name;
        std::unique_ptr<SteerProgram> program;
    };
    SteerFilter filter_;
    SteerHook hook_;
    std::vector<Interface> interfaces_;
    std::vector<std::string> unsteered_;
};

}  // namespace linerate::xdp
