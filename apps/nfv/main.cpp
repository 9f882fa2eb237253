// nfv: Click's CheckIPHeader as a network function. Wiring only: the check is
// check_ip_header.hpp, its step on an mbuf mbuf_kernel.hpp, the options options.hpp.
#include <fmt/core.h>

#include <optional>
#include <string>
#include <vector>

#include "nfv/check_ip_header.hpp"
#include "nfv/first_bad_log.hpp"
#include "nfv/mbuf_kernel.hpp"
#include "nfv/nfv_xdp.hpp"
#include "nfv/options.hpp"
#include "runtime/forward_loop.hpp"
#include "runtime/forward_mode.hpp"
#include "runtime/runtime.hpp"
#include "runtime/xdp_datapath_feature.hpp"
#include "stats/telemetry.hpp"

using namespace linerate;

namespace {

constexpr const char* kApp = "nfv";
#define NFV_DIVERT_COUNTERS(X) \
    X(diverted, "diverted")    \
    X(divert_tx_full, "divert tx full")
LINERATE_COUNTERS(DivertCounter, kDivertCounters, NFV_DIVERT_COUNTERS);

// A worker diverts on its own queue of the bad port; a worker with none there (the device has
// fewer queues than there are workers) frees its invalid frames instead.
std::optional<Divert> divert_for(const worker::WorkerSlot& slot, std::optional<uint16_t> port) {
    if (!port) return std::nullopt;
    for (const worker::QueueRef& q : slot.queues)
        if (q.port == *port)
            return Divert{q.port, q.queue, unsigned(DivertCounter::diverted),
                          unsigned(DivertCounter::divert_tx_full)};
    return std::nullopt;
}

// The XDP program's options and what its counter slots are on nfv's board.
uint32_t xdp_flags(const nfv::CheckIpHeader& check, const nfv::Options& o) {
    return (o.forward.swaps_macs() ? DP_MAC_SWAP : 0) |
           (check.verify_checksum() ? DP_VERIFY_CHECKSUM : 0) |
           (o.pass_non_ip ? DP_PASS_NON_IP : 0);
}

XdpBoardSlots xdp_board_slots() {
    XdpBoardSlots slots{unsigned(nfv::Verdict::not_ipv4), {}};
    for (unsigned r = LR_IPV4_NOT_IPV4; r <= LR_IPV4_BAD_SOURCE; ++r)
        slots.drops.push_back(unsigned(nfv::verdict_of(lr_ipv4_verdict(r))));
    return slots;
}

// --datapath xdp: apps/nfv/xdp/nfv.bpf.c configured as `check` (options, address sets).
std::shared_ptr<const XdpDatapathSpec> xdp_program(xdp::Datapath datapath, xdp::XdpMode mode,
                                                   const nfv::CheckIpHeader& check,
                                                   const nfv::Options& o) {
    auto spec =
        xdp_datapath_spec(datapath, mode, "nfv.bpf.o", xdp_flags(check, o), xdp_board_slots());
    if (!spec) return nullptr;
    spec->configure = [bad = check.bad_src(), good = check.good_dst()](xdp::DatapathProgram& p,
                                                                       const std::string&) {
        nfv::set_xdp_sources(p, bad, good);
    };
    spec->forward_pair = o.forward.mode == ForwardMode::pair;
    spec->not_on_interface = o.not_on_xdp_interface();
    return spec;
}

// Checks frames on the started runtime (its ports checked against --forward and --bad-port:
// nfv::Options::check_against) until a stop.
int check_frames(Runtime& runtime, const nfv::Options& o, const nfv::CheckIpHeader& check) {
    const std::vector<uint16_t> ports = runtime.port_ids();
    const ForwardMode mode = o.forward.mode;
    const std::optional<uint16_t> bad_port = o.bad_port;

    const nlohmann::json config = nfv::config_json(o, check);
    fmt::print("{}: config {}\n", kApp, config.dump());
    stats::register_telemetry("/linerate/nfv/config", "Effective CheckIPHeader configuration",
                              [config](const std::string&) { return config; });
    runtime.json_keys()["nfv"] = config;
    report_datapath(runtime);
    XdpDatapath* xdp = runtime.xdp_datapath();

    nfv::FirstBadLog first_bad(kApp);
    nfv::FirstBadLog* log = o.verbose ? &first_bad : nullptr;
    const bool mac_swap = o.forward.swaps_macs();
    return runtime.run([&](WorkerContext& ctx) {
        // Non-IPv4 frames are not nfv's (unless --pass-non-ip forwards them).
        const ForwardOptions forward{divert_for(ctx.slot, bad_port),
                                     forward_tx_queues(ctx.slot, mode, ports),
                                     unsigned(nfv::Verdict::not_ipv4)};
        nfv::with_mbuf_kernel(check, log, mac_swap, [&](auto& kernel) {
            forward_on_datapath(ctx, xdp, kernel, forward);
        });
    });
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli(
        "nfv: check every frame's IPv4 header as Click's CheckIPHeader does, send valid frames "
        "back out the port and queue they came in on (trimmed to the IP length, MACs swapped) "
        "or, with --forward pair, out of the paired port (MACs unchanged), drop or divert the "
        "others, counted by reason",
        kApp);
    cli::CommonOptions common;
    nfv::Options options;
    cli::SplitArgs args = cli::parse_or_exit(cli, argc, argv, common, options);
    const nfv::CheckIpHeader check(nfv::make_config(options));
    // The divert counters exist only with --bad-port.
    const stats::Names counters =
        options.bad_port ? stats::Names(kDivertCounters) : stats::kRuntimeCounters;
    AppInfo info{kApp, "CheckIPHeader network function", nfv::kDrops, counters};
    info.xdp_datapath =
        xdp_program(options.datapath.datapath, options.datapath.mode, check, options);
    info.check_ports = check_ports_of(options);
    Runtime runtime(std::move(info), std::move(args), common);

    return runtime.run_app([&] { return check_frames(runtime, options, check); });
}
