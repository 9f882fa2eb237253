#include "runtime/xdp_steer_feature.hpp"

#include <fmt/core.h>

#include <stdexcept>

#include "stats/telemetry.hpp"
#include "xdp/bpf_object.hpp"
#include "xdp/datapath/datapath_program.hpp"

namespace linerate {

namespace {

// The program of lib/xdp/steer/steer.bpf.c (the name libxdp recognises, see there).
constexpr const char* kSteerProgramName = "xsk_def_prog";

}  // namespace

AfXdpSteering::AfXdpSteering(std::string app, const std::vector<std::string>& af_xdp_specs,
                             xdp::SteerFilter filter, xdp::SteerHook hook, bool steer_asked,
                             bool app_program)
    : app_(std::move(app)),
      filter_(filter),
      hook_(std::move(hook)),
      steer_asked_(steer_asked),
      app_program_(app_program),
      steer_object_(xdp::find_bpf_object(hook_.object)) {
    for (const auto& spec : af_xdp_specs) {
        specs_.push_back(eal::parse_af_xdp_spec(spec));
        eal::check_af_xdp_interface(specs_.back());
    }
    if (specs_.empty() || app_program_) return;
    // Always linerate's steering program: DPDK's default one would hand the app every frame of
    // the interface, the host's ARP, ping and ssh included.
    if (steer_object_.empty())
        throw std::runtime_error(std::string("--af-xdp: linerate's XDP steering program (") +
                                 hook_.object +
                                 ") is neither next to the app, in its install tree nor in the "
                                 "build tree: not taking the interface without it");
}

AfXdpSteering::~AfXdpSteering() = default;

std::string AfXdpSteering::steer_object_named() const {
    return steer_object_.empty() ? std::string("PATH/") + hook_.object : steer_object_;
}

void AfXdpSteering::add_eal_args(std::vector<std::string>& args, bool user_gave_eal_args) {
    if (specs_.empty() || user_gave_eal_args) return;
    const std::vector<std::string> more = eal::af_xdp_mode_eal_args(specs_);
    args.insert(args.end(), more.begin(), more.end());
}

std::optional<std::vector<uint16_t>> AfXdpSteering::make_ports(unsigned workers) {
    if (specs_.empty()) return std::nullopt;
    if (!app_program_) attach_steering_programs();
    ports_ = eal::create_af_xdp_ports(specs_, workers);
    std::vector<uint16_t> ids;
    for (const auto& p : ports_) ids.push_back(p.port);
    return ids;
}

// Before the vdevs are made, each interface gets linerate's steering program held by this
// process through a BPF link: the kernel detaches it when the process ends, a SIGKILL included,
// so the same command line starts again at once (the PMD's xdp_prog= attached it through netlink,
// where it outlived the process). The vdevs, given no xdp_prog=, adopt it (it is named
// xsk_def_prog with libxdp's version tag) and put their sockets into its xsks_map. Single-buffer
// and in the mode the kernel picks for a program that does not transmit (native where the driver
// has XDP, veth included), as the PMD loaded and attached it.
void AfXdpSteering::attach_steering_programs() {
    for (const eal::AfXdpSpec& spec : specs_) {
        try {
            auto program = std::make_unique<xdp::DatapathProgram>(hook_.object, kSteerProgramName,
                                                                  /*multi_buffer=*/false);
            program->attach(spec.iface, xdp::XdpMode::automatic, /*transmits=*/false);
            programs_.push_back(std::move(program));
        } catch (const std::exception& e) {
            throw std::runtime_error(std::string("--af-xdp: ") + e.what());  // names the interface
        }
    }
}

// After the workers, before the ports close: the interface's frames go back to the kernel (the
// counters stay readable: Steering holds the maps).
void AfXdpSteering::workers_stopped() {
    for (auto& p : programs_) p->detach();
}

std::optional<unsigned> AfXdpSteering::first_worker(uint16_t port) const {
    for (const auto& p : ports_)
        if (p.port == port) return p.queue;
    return std::nullopt;
}

void AfXdpSteering::start(const StartedRun& run) {
    std::vector<uint16_t> ids;
    // The app's own program steers (and counts) by itself: no steering program to find.
    if (!app_program_)
        for (const auto& port : run.ports) ids.push_back(port->id());
    steering_ = std::make_unique<xdp::Steering>(ids, filter_, hook_);
    if (steer_asked_ && steering_->empty() && !app_program_)
        throw std::runtime_error(
            "--xdp-steer: no net_af_xdp port's interface has linerate's steering program "
            "(use --af-xdp IFACE, or attach it with the vdev's xdp_prog=" +
            steer_object_named() + ")");
    warn_unsteered();
    declare_figures();
    fmt::print("{}", steering_->describe());
    std::fflush(stdout);  // a start-up line: to a log or pipe now
}

// Hand-written vdevs keep DPDK's behaviour (the user's choice), but not silently.
void AfXdpSteering::warn_unsteered() const {
    const std::string prog = steer_object_named();
    for (const std::string& iface : steering_->unsteered())
        fmt::print(stderr,
                   "{}: warning: {} has DPDK's default XDP program (no xdp_prog= on its vdev): "
                   "the app takes every frame of it, the host's ARP, ping and ssh there "
                   "included (--af-xdp {}, or xdp_prog={} on the vdev, hands it only the app's "
                   "traffic)\n",
                   app_, iface, iface, prog);
}

namespace {
// One reading of the programs' counters per render (FigureSet::take_live), on its thread.
thread_local xdp::SteerCounters live_counts;
}  // namespace

// " | xdp redirected N passed M unclaimed K": frames since the previous line.
void AfXdpSteering::declare_figures() {
    const auto total = [](const char* text, uint64_t xdp::SteerCounters::*field) {
        return stats::Figure{.text = text, .interval = true, .read_live = [field](unsigned) {
                                 return stats::FigureReading{live_counts.*field};
                             }};
    };
    figure_set_.title = "xdp";
    figure_set_.take_live = [this] { live_counts = steering_->total(); };
    figure_set_.figures = {total("redirected", &xdp::SteerCounters::redirected),
                           total("passed", &xdp::SteerCounters::passed),
                           total("unclaimed", &xdp::SteerCounters::unclaimed)};
    if (filter_.hook)  // " turned N": only where the program turns anything
        figure_set_.figures.push_back(total("turned", &xdp::SteerCounters::turned));
}

void AfXdpSteering::register_telemetry() {
    if (steering_->empty()) return;
    stats::register_telemetry("/linerate/xdp", "XDP steering program counters",
                              [this](const std::string&) { return steering_->telemetry(); });
}

// Per interface and queue, what the steering program did (its JSON's "queues").
void AfXdpSteering::add_metrics(stats::Metrics& m) const {
    if (!steering_ || steering_->empty()) return;
    const nlohmann::json j = steering_->json();
    std::vector<const char*> actions = {"redirected", "passed", "unclaimed"};
    if (filter_.hook) actions.push_back("turned");
    for (const auto& [iface, ij] : j["interfaces"].items())
        for (const nlohmann::json& q : ij["queues"])
            for (const char* action : actions)
                m.add("linerate_xdp_packets_total",
                      "Frames the XDP steering program handled, by queue and action (redirected "
                      "to the app's socket, passed to the kernel, unclaimed: no socket; turned: "
                      "sent back by the app's steering hook)",
                      stats::MetricType::counter,
                      {{"interface", iface},
                       {"queue", std::to_string(q["queue"].get<unsigned>())},
                       {"action", action}},
                      q[action].get<double>());
}

void AfXdpSteering::add_json(nlohmann::json& j) const {
    if (!steering_->empty()) j["xdp"] = steering_->json();
}

std::string AfXdpSteering::summary() const {
    return steering_->empty() ? std::string() : steering_->summary();
}

}  // namespace linerate
