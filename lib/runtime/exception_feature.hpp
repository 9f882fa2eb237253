#pragma once
// --exception-path tap[:NAME] as a runtime feature: the TAP vdev in the EAL arguments, its port
// taken out of the app's ports and started on the run's pool, the rings between the workers and
// the main lcore (exception_path.hpp), serviced every monitor tick, drained at the end, reported
// in the summary and the JSON ("exception_path"). Workers reach it through the shared RX step
// (rx_step.hpp), so every loop has it.
#include <memory>
#include <string>

#include "runtime/exception_path.hpp"
#include "runtime/feature.hpp"

namespace linerate {

// The vdev the runtime adds for the TAP (net_tap names must start with "net_tap").
inline constexpr const char* kExceptionTapVdev = "net_tap_exception";

class ExceptionPathFeature final : public Feature {
  public:
    // `text`: "tap" (a TAP named lr-APP) or "tap:NAME". Throws std::invalid_argument.
    ExceptionPathFeature(std::string app, const std::string& text);
    ~ExceptionPathFeature() override;

    const std::string& iface() const { return iface_; }

    void add_eal_args(std::vector<std::string>& args, bool user_gave_eal_args) override;
    void claim_ports(std::vector<uint16_t>& ports) override;
    void add_pool_demand(mem::PoolDemand& demand) const override;
    void start(const StartedRun& run) override;
    std::string_view board_feature() const override;
    void fill_worker_context(WorkerContext& ctx) override;
    // The kernel's frames wait for the tick: ARP and ping answered within a ms or so.
    std::chrono::milliseconds tick_period() const override { return std::chrono::milliseconds(1); }
    void tick(const MonitorTick& tick) override;
    void drain() override;
    void add_json(nlohmann::json& j) const override;
    std::string summary() const override;

  private:
    std::string app_;
    std::string iface_;
    std::unique_ptr<eal::Port> tap_port_;
    std::unique_ptr<ExceptionPath> path_;
};

}  // namespace linerate
