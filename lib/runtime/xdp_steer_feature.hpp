#pragma once
// --af-xdp IFACE[,queues=N] and --xdp-steer: the net_af_xdp ports of an interface (one per
// queue, made after the EAL so the default queue count is the number of workers), always with
// linerate's XDP steering program (attached by the app with a BPF link, so it goes with the
// process however it ends; the vdevs adopt it), and the steering filter written into that program
// on every net_af_xdp port of the run (hand-written vdevs included). Its counters join the stats
// line, the summary, the JSON ("xdp") and telemetry (/linerate/xdp).
#include <memory>
#include <string>
#include <vector>

#include "eal/af_xdp_ports.hpp"
#include "runtime/feature.hpp"
#include "runtime/xdp_steer_ports.hpp"

namespace linerate::xdp {
class DatapathProgram;
}

namespace linerate {

class AfXdpSteering final : public Feature {
  public:
    // `filter`: what --xdp-steer asks for (the app's own by default); `steer_asked`: the user
    // gave --xdp-steer; `app_program`: the app attached its own XDP program (--datapath xdp),
    // which the vdevs adopt and which applies the filter itself. Throws std::invalid_argument for
    // a bad --af-xdp spec, and std::runtime_error when linerate's steering program cannot be
    // found.
    AfXdpSteering(std::string app, const std::vector<std::string>& af_xdp_specs,
                  xdp::SteerFilter filter, xdp::SteerHook hook, bool steer_asked,
                  bool app_program = false);
    ~AfXdpSteering() override;

    void add_eal_args(std::vector<std::string>& args, bool user_gave_eal_args) override;
    std::optional<std::vector<uint16_t>> make_ports(unsigned workers) override;
    std::optional<unsigned> first_worker(uint16_t port) const override;
    void start(const StartedRun& run) override;
    void workers_stopped() override;
    // The steering programs' frames in the stats line (redirected, passed, unclaimed).
    const stats::FigureSet* figures() const override {
        return steering_ && !steering_->empty() ? &figure_set_ : nullptr;
    }
    void register_telemetry() override;
    void add_metrics(stats::Metrics& m) const override;
    void add_json(nlohmann::json& j) const override;
    std::string summary() const override;

  private:
    void attach_steering_programs();
    void warn_unsteered() const;
    void declare_figures();
    // The steering program's path for a message: steer_object_, or PATH/steer.bpf.o if none.
    std::string steer_object_named() const;

    std::string app_;
    std::vector<eal::AfXdpSpec> specs_;
    xdp::SteerFilter filter_;
    xdp::SteerHook hook_;  // the steering object and its hook
    bool steer_asked_;
    bool app_program_;
    std::string steer_object_;  // linerate's steering program (found once), "" if not found
    // The steering programs this process attached (one per interface), each holding its link.
    std::vector<std::unique_ptr<xdp::DatapathProgram>> programs_;
    std::vector<eal::AfXdpPort> ports_;
    std::unique_ptr<xdp::Steering> steering_;
    stats::FigureSet figure_set_;
};

}  // namespace linerate
