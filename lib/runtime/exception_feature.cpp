#include "runtime/exception_feature.hpp"

#include <fmt/core.h>
#include <rte_ethdev.h>

#include <algorithm>
#include <stdexcept>

#include "runtime/runtime.hpp"
#include "stats/names.hpp"

namespace linerate {

namespace {
constexpr size_t kMaxIfName = 15;  // Linux interface names: at most 15 bytes
constexpr uint16_t kTapDescriptors = 256;

std::string tap_name(const std::string& text, const std::string& app) {
    if (text == "tap") return "lr-" + app;
    if (text.rfind("tap:", 0) == 0) return text.substr(4);
    throw std::invalid_argument("--exception-path: '" + text + "' is not tap or tap:NAME");
}
}  // namespace

ExceptionPathFeature::ExceptionPathFeature(std::string app, const std::string& text)
    : app_(std::move(app)), iface_(tap_name(text, app_)) {
    if (iface_.empty() || iface_.size() > kMaxIfName ||
        iface_.find_first_of(",/: ") != std::string::npos)
        throw std::invalid_argument("--exception-path: interface name '" + iface_ +
                                    "' must be 1 to 15 characters without , / : or space");
}

// The rings' frames go back to the pool before the TAP port closes.
ExceptionPathFeature::~ExceptionPathFeature() {
    path_.reset();
    tap_port_.reset();
}

void ExceptionPathFeature::add_eal_args(std::vector<std::string>& args, bool) {
    args.push_back(fmt::format("--vdev={},iface={}", kExceptionTapVdev, iface_));
}

void ExceptionPathFeature::claim_ports(std::vector<uint16_t>& ports) {
    uint16_t tap;
    if (rte_eth_dev_get_port_by_name(kExceptionTapVdev, &tap) != 0)
        throw std::runtime_error("--exception-path: the TAP port was not created (net_tap)");
    std::erase(ports, tap);
    if (ports.empty()) throw std::runtime_error("no port left besides the exception path's TAP");
    tap_port_ = std::make_unique<eal::Port>(
        tap, eal::PortConfig{.rx_desc = kTapDescriptors, .tx_desc = kTapDescriptors});
}

void ExceptionPathFeature::add_pool_demand(mem::PoolDemand& demand) const {
    // The TAP's descriptors and what both rings can hold.
    demand.rx_descriptors += tap_port_->rx_desc() + 2 * kExceptionRingSize;
    demand.tx_descriptors += tap_port_->tx_desc();
}

void ExceptionPathFeature::start(const StartedRun& run) {
    tap_port_->start(run.pool);
    const eal::Port& out = *run.ports.front();
    path_ = std::make_unique<ExceptionPath>(app_, tap_port_->id(), out.id(), tap_port_->socket());
    fmt::print(
        "{}: exception path: frames not served <-> TAP {} (port {}), kernel's frames out "
        "port {}\n",
        app_, iface_, tap_port_->id(), out.id());
}

std::string_view ExceptionPathFeature::board_feature() const {
    return stats::kExceptionPathFeature;
}

void ExceptionPathFeature::fill_worker_context(WorkerContext& ctx) {
    ctx.exception = path_.get();
}

void ExceptionPathFeature::tick(const MonitorTick&) {
    path_->service();
}

void ExceptionPathFeature::drain() {
    path_->drain();
    tap_port_.reset();
}

void ExceptionPathFeature::add_json(nlohmann::json& j) const {
    j["exception_path"] = path_->json();
}

std::string ExceptionPathFeature::summary() const {
    return path_->summary();
}

}  // namespace linerate
