#include "runtime/xdp_datapath.hpp"

#include <fmt/core.h>

#include <cstdlib>

#include "cli/command_line.hpp"
#include "runtime/runtime.hpp"

namespace linerate {

namespace {
constexpr const char* kOnlyPcap =
    "--datapath xdp runs only in pcap test mode for now (--pcap IN:OUT, or net_pcap vdevs): each "
    "frame through the XDP program with BPF_PROG_TEST_RUN";
}  // namespace

XdpDatapath::XdpDatapath(const std::string& app, const cli::CommonOptions& options,
                         const std::string& object, const std::string& program)
    : app_(app) {
    // Without --pcap the ports may still all be net_pcap vdevs: report() checks that.
    if (!options.pcap.empty() && options.pcap.find(':') == std::string::npos)
        cli::usage_error(app, kOnlyPcap);
    try {
        program_ = std::make_unique<xdp::DatapathProgram>(object, program);
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: --datapath xdp: {}\n", app, e.what());
        std::exit(1);
    }
}

void XdpDatapath::set_flags(uint32_t flags) {
    try {
        program_->set_flags(flags | DP_RECORD_LAST | DP_MULTI_BUFFER);
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: --datapath xdp: {}\n", app_, e.what());
        std::exit(1);
    }
}

namespace {

// What the program's counters say (summed over CPUs) and which tier handled what.
nlohmann::json xdp_json(const xdp::DatapathProgram& program, const XdpTiers& tiers) {
    const xdp::SlotCounts c = program.counts();
    uint64_t drops = 0;
    for (unsigned s = DP_DROP_FIRST; s < DP_SLOTS; ++s) drops += c[s];
    return {{"object", program.object_path()},
            {"mode", "test_run"},
            {"tiers", {{"xdp", tiers.xdp.load()}, {"slow_path", tiers.slow_path.load()}}},
            {"program",
             {{"tx", c[DP_TX]},
              {"pass", c[DP_PASSED]},
              {"drop", drops},
              {"slow_path", c[DP_SLOW_PATH]}}}};
}

}  // namespace

void XdpDatapath::report(Runtime& runtime) {
    for (const auto& port : runtime.ports())
        if (port->driver() != "net_pcap") cli::usage_error(app_, kOnlyPcap);
    runtime.add_json([this](nlohmann::json& j) {
        j["datapath"] = "xdp";
        j["xdp"] = xdp_json(*program_, tiers_);
    });
    runtime.add_summary([this] {
        const nlohmann::json x = xdp_json(*program_, tiers_);
        return fmt::format(
            "xdp datapath ({}): {} frames finished by the XDP program (tx {}, pass {}, drop {}), "
            "{} by the slow path (the C++ kernel)",
            x["mode"].get<std::string>(), x["tiers"]["xdp"].get<uint64_t>(),
            x["program"]["tx"].get<uint64_t>(), x["program"]["pass"].get<uint64_t>(),
            x["program"]["drop"].get<uint64_t>(), x["tiers"]["slow_path"].get<uint64_t>());
    });
}

void report_datapath(Runtime& runtime, XdpDatapath* xdp) {
    if (xdp)
        xdp->report(runtime);
    else
        runtime.add_json([](nlohmann::json& j) { j["datapath"] = "dpdk"; });
}

}  // namespace linerate
