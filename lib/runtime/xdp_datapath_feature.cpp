#include "runtime/xdp_datapath_feature.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <rte_ethdev.h>

#include <array>
#include <cstdlib>
#include <stdexcept>

#include "cli/command_line.hpp"
#include "eal/af_xdp_ports.hpp"
#include "runtime/runtime.hpp"
#include "stats/telemetry.hpp"

namespace linerate {

namespace {

constexpr const char* kWhere =
    "--datapath xdp runs on --af-xdp interfaces or in pcap test mode (--pcap IN:OUT, or "
    "net_pcap vdevs)";

// The interfaces of --af-xdp, none in test mode; std::invalid_argument for a run it cannot serve.
std::vector<std::string> datapath_interfaces(const cli::CommonOptions& options,
                                             const XdpDatapathSpec& spec) {
    if (!options.pcap.empty()) {
        if (options.pcap.find(':') == std::string::npos) throw std::invalid_argument(kWhere);
        return {};
    }
    if (options.af_xdp.empty()) return {};  // net_pcap vdevs, checked at start
    if (!spec.not_on_interface.empty())
        throw std::invalid_argument("--datapath xdp on an interface: " + spec.not_on_interface +
                                    " is the DPDK datapath's only (--datapath dpdk)");
    std::vector<std::string> ifaces;
    for (const std::string& a : options.af_xdp) ifaces.push_back(eal::parse_af_xdp_spec(a).iface);
    // Before any program is loaded or attached (forward_mode says the same of the ports later).
    if (spec.forward_pair && ifaces.size() % 2 != 0)
        throw std::invalid_argument(
            fmt::format("--forward pair needs an even number of ports, {} in use (--af-xdp "
                        "interfaces)",
                        ifaces.size()));
    return ifaces;
}

// The interface --forward pair pairs with interface `i` of `n` (1st <-> 2nd, 3rd <-> 4th, as
// forward_tx_queues pairs the ports); n when it has none (an odd count, which the app refuses).
size_t paired_with(size_t i, size_t n) {
    const size_t other = i ^ 1;
    return other < n ? other : n;
}

// Frames the program served (the app's verdicts: XDP tier) of `c`, and their bytes received.
uint64_t served(const xdp::SlotCounts& c) {
    uint64_t n = c[DP_TX] + c[DP_PASSED];
    for (unsigned s = DP_DROP_FIRST; s < DP_SLOTS; ++s) n += c[s];
    return n;
}

uint64_t dropped(const xdp::SlotCounts& c) {
    uint64_t n = 0;
    for (unsigned s = DP_DROP_FIRST; s < DP_SLOTS; ++s) n += c[s];
    return n;
}

}  // namespace

std::shared_ptr<XdpDatapathSpec> xdp_datapath_spec(xdp::Datapath datapath, xdp::XdpMode mode,
                                                   std::string object, uint32_t flags,
                                                   XdpBoardSlots slots) {
    if (datapath != xdp::Datapath::xdp) return nullptr;
    auto spec = std::make_shared<XdpDatapathSpec>();
    spec->object = std::move(object);
    spec->flags = flags;
    spec->slots = std::move(slots);
    spec->mode = mode;
    return spec;
}

XdpDatapath::XdpDatapath(const std::string& app, const cli::CommonOptions& options,
                         const XdpDatapathSpec& spec, const xdp::SteerFilter& serve)
    : app_(app), spec_(spec), ifaces_(datapath_interfaces(options, spec)), serve_(serve) {
    try {
        load_programs();
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("--datapath xdp: ") + e.what());
    }
    declare_figures();
}

namespace {
// One reading of the programs' counters per render (FigureSet::take_live), on its thread.
thread_local xdp::SlotCounts live_counts{};
}  // namespace

// " | xdp program N slow path N kernel N": frames of each tier since the previous line.
void XdpDatapath::declare_figures() {
    const auto total = [](std::string text, uint64_t (*read)(const xdp::SlotCounts&)) {
        return stats::Figure{
            .text = std::move(text), .interval = true, .read_live = [read](unsigned) {
                return stats::FigureReading{read(live_counts)};
            }};
    };
    figure_set_.title = "xdp";
    figure_set_.take_live = [this] { live_counts = counts(); };
    figure_set_.figures = {
        total("program", served),
        total("slow path", [](const xdp::SlotCounts& c) { return c[DP_SLOW_PATH]; }),
        total("kernel", [](const xdp::SlotCounts& c) { return c[DP_NOT_SERVED]; }),
    };
}

void XdpDatapath::load_programs() {
    const auto load = [&](bool multi_buffer, const std::string& iface) {
        programs_.push_back(
            std::make_unique<xdp::DatapathProgram>(spec_.object, DP_PROGRAM, multi_buffer));
        if (spec_.configure) spec_.configure(*programs_.back(), iface);
        return programs_.back().get();
    };
    if (!on_interface()) {
        // The test mode's long frames are multi-buffer; dp_last says what became of each.
        load(true, "")->set_flags(spec_.flags | DP_RECORD_LAST);
        return;
    }
    // Test hook: every served frame through the slow path, to compare the tiers.
    const bool slow = std::getenv("LINERATE_TEST_XDP_SLOW_PATH") != nullptr;
    uint32_t flags = spec_.flags | (slow ? DP_SLOW_PATH_ALL : 0);
    if (spec_.forward_pair) flags |= DP_FORWARD_PAIR;
    for (size_t i = 0; i < ifaces_.size(); ++i) {
        const std::optional<uint32_t> mtu = xdp::interface_mtu(ifaces_[i]);
        if (!mtu) throw std::runtime_error("no interface " + ifaces_[i]);
        xdp::DatapathProgram* p = load(xdp::multi_buffer_for_mtu(*mtu), ifaces_[i]);
        const size_t other = paired_with(i, ifaces_.size());
        if (spec_.forward_pair && other < ifaces_.size()) p->set_pair_port(ifaces_[other]);
        p->set_config(flags, serve_);
    }
}

xdp::SlotTotals XdpDatapath::totals() const {
    xdp::SlotTotals sum;
    for (const auto& p : programs_) {
        const xdp::SlotTotals t = p->totals();
        for (unsigned s = 0; s < DP_SLOTS; ++s) {
            sum.packets[s] += t.packets[s];
            sum.bytes[s] += t.bytes[s];
        }
    }
    return sum;
}

std::string XdpDatapath::mode_name() const {
    if (!on_interface()) return "test_run";
    if (modes_.empty()) return xdp::xdp_mode_name(spec_.mode);
    for (xdp::XdpMode m : modes_)
        if (m != modes_.front()) return "mixed";
    return xdp::xdp_mode_name(modes_.front());
}

XdpDatapath::~XdpDatapath() = default;

// After the EAL, before --af-xdp's vdevs (the next feature) are made: they adopt the program.
std::optional<std::vector<uint16_t>> XdpDatapath::make_ports(unsigned /*workers*/) {
    for (size_t i = 0; i < ifaces_.size(); ++i)
        modes_.push_back(programs_[i]->attach(ifaces_[i], spec_.mode));
    return std::nullopt;
}

// Before any port is set up, so that the refusal is the one line.
void XdpDatapath::claim_ports(std::vector<uint16_t>& ports) {
    if (on_interface()) return;
    for (uint16_t id : ports) {
        rte_eth_dev_info info{};
        if (rte_eth_dev_info_get(id, &info) != 0 || !info.driver_name ||
            std::string(info.driver_name) != "net_pcap")
            cli::usage_error(app_, kWhere);
    }
}

void XdpDatapath::start(const StartedRun& run) {
    board_ = &run.board;
    if (!on_interface()) return;
    board_->kernel_tier();  // made before the workers start
    for (size_t i = 0; i < ifaces_.size(); ++i) {
        std::string to = "back out";
        if (spec_.forward_pair && paired_with(i, ifaces_.size()) < ifaces_.size())
            to = "out of " + ifaces_[paired_with(i, ifaces_.size())];
        fmt::print(
            "{}: xdp datapath on {}: program id {} ({} mode, {} frames), to the app: {}, "
            "sent {}\n",
            app_, ifaces_[i], programs_[i]->prog_id(), xdp::xdp_mode_name(modes_[i]),
            programs_[i]->multi_buffer() ? "multi-buffer" : "single-buffer", serve_.describe(), to);
    }
    std::fflush(stdout);
}

void XdpDatapath::publish() {
    if (!on_interface() || !board_) return;
    // The program's totals by board slot, then carried over.
    const xdp::SlotTotals now = totals();
    const auto& p = now.packets;
    const auto& b = now.bytes;
    uint64_t rx = p[DP_TX] + p[DP_PASSED], rx_bytes = b[DP_TX] + b[DP_PASSED] + b[DP_TRIMMED];
    std::array<uint64_t, stats::kMaxDropReasons> drops{};
    if (spec_.slots.passed != kTransmit) drops[spec_.slots.passed] += p[DP_PASSED];
    for (unsigned r = 0; r < spec_.slots.drops.size(); ++r) {
        rx += p[DP_DROP_FIRST + r];
        rx_bytes += b[DP_DROP_FIRST + r];
        drops[spec_.slots.drops[r]] += p[DP_DROP_FIRST + r];
    }
    stats::WorkerCounters& c = board_->kernel_tier();
    for (size_t slot = 0; slot < drops.size(); ++slot)
        carried_.drops[slot].carry(drops[slot], c.drops[slot]);
    carried_.rx_packets.carry(rx, c.rx_packets);
    carried_.rx_bytes.carry(rx_bytes, c.rx_bytes);
    carried_.tx_packets.carry(p[DP_TX], c.tx_packets);
    carried_.tx_bytes.carry(b[DP_TX], c.tx_bytes);
}

void XdpDatapath::tick(const MonitorTick& /*tick*/) {
    publish();
}

void XdpDatapath::register_telemetry() {
    stats::register_telemetry("/linerate/xdp", "XDP datapath: mode, tiers, program counters",
                              [this](const std::string&) {
                                  nlohmann::json j = json();
                                  // rte_telemetry takes one level of nesting.
                                  j["tiers"] = j["tiers"].dump();
                                  j["program"] = j["program"].dump();
                                  return j;
                              });
}

// The program's outcomes (the board has the frames by reason, as worker "xdp").
void XdpDatapath::add_metrics(stats::Metrics& m) const {
    const nlohmann::json j = json();
    for (const auto& [outcome, n] : j["program"].items())
        m.add("linerate_xdp_program_packets_total",
              "Frames the app's XDP program (--datapath xdp) handled, by outcome: tx, pass (the "
              "app's not-mine verdict), drop, slow_path (to the DPDK tier), not_served (to the "
              "kernel)",
              stats::MetricType::counter, {{"outcome", outcome}}, n.get<double>());
    for (const auto& [tier, n] : j["tiers"].items())
        m.add("linerate_xdp_tier_packets_total",
              "Frames of the app by the tier that answered them: xdp (the program), slow_path "
              "(the DPDK poll loop)",
              stats::MetricType::counter, {{"tier", tier}}, n.get<double>());
}

// Before the ports close: the interface goes back to the kernel as it was, and the counters are
// final.
void XdpDatapath::workers_stopped() {
    for (auto& p : programs_) p->detach();
    publish();
}

nlohmann::json XdpDatapath::json() const {
    const xdp::SlotCounts c = counts();
    nlohmann::json j = {{"object", programs_.front()->object_path()},
                        {"mode", mode_name()},
                        {"program",
                         {{"tx", c[DP_TX]},
                          {"pass", c[DP_PASSED]},
                          {"drop", dropped(c)},
                          {"slow_path", c[DP_SLOW_PATH]},
                          {"not_served", c[DP_NOT_SERVED]}}}};
    if (!on_interface()) {
        j["tiers"] = {{"xdp", tiers_.xdp.load()}, {"slow_path", tiers_.slow_path.load()}};
        return j;
    }
    j["forward"] = spec_.forward_pair ? "pair" : "reflect";
    j["interfaces"] = nlohmann::json::object();
    for (size_t i = 0; i < ifaces_.size(); ++i)
        j["interfaces"][ifaces_[i]] = {
            {"prog_id", programs_[i]->prog_id()},
            {"mode", i < modes_.size() ? xdp::xdp_mode_name(modes_[i]) : "unattached"},
            {"multi_buffer", programs_[i]->multi_buffer()}};
    j["serve"] = serve_.describe();
    j["tiers"] = {{"xdp", served(c)}, {"slow_path", c[DP_SLOW_PATH]}};
    return j;
}

void XdpDatapath::add_json(nlohmann::json& j) const {
    j["datapath"] = "xdp";
    j["xdp"] = json();
}

std::string XdpDatapath::summary() const {
    const nlohmann::json x = json();
    const nlohmann::json& p = x["program"];
    std::string where = x["mode"].get<std::string>();
    if (on_interface()) where += " mode on " + fmt::format("{}", fmt::join(ifaces_, ", "));
    return fmt::format(
        "xdp datapath ({}): {} frames finished by the XDP program (tx {}, pass {}, drop {}), {} by "
        "the slow path (the C++ kernel), {} not served (to the kernel)",
        where, x["tiers"]["xdp"].get<uint64_t>(), p["tx"].get<uint64_t>(),
        p["pass"].get<uint64_t>(), p["drop"].get<uint64_t>(),
        x["tiers"]["slow_path"].get<uint64_t>(), p["not_served"].get<uint64_t>());
}

void report_datapath(Runtime& runtime) {
    if (!runtime.xdp_datapath()) runtime.json_keys()["datapath"] = "dpdk";
}

}  // namespace linerate
