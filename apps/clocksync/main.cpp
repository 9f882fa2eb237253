// clocksync: client/master clock synchronization reporting the time-uncertainty bound epsilon.
// Wiring only: the options are options.hpp, what each role runs roles.hpp (on the wire format
// cs_wire, the session client_session, the loops worker_loops), the reports report.hpp and
// client_report_feature.hpp.
#include <memory>
#include <optional>
#include <utility>

#include "clocksync/cs_xdp.hpp"
#include "clocksync/options.hpp"
#include "clocksync/roles.hpp"
#include "clocksync/worker_loops.hpp"  // the boards: kClientCounters, kMasterCounters
#include "runtime/runtime.hpp"
#include "runtime/xdp_datapath_feature.hpp"

using namespace linerate;
using namespace linerate::clocksync;

namespace {

constexpr const char* kApp = "clocksync";

// --datapath xdp: apps/clocksync/xdp/clocksync.bpf.c on the --af-xdp interface. Its reasons are the
// master's drops from not_clocksync on (apps/clocksync/cs_wire.h); what it passes to the kernel
// (a served frame that is no clocksync datagram) is counted as not_clocksync, as the C++ master
// counts it.
// The interface count was checked at parse (AppOptions::check).
std::shared_ptr<const XdpDatapathSpec> xdp_program(const Options& cs) {
    if (cs.role != Role::master || !cs.datapath.xdp()) return nullptr;
    XdpBoardSlots slots{stats::drop_slot(Drop::not_clocksync), {}};
    for (unsigned r = LR_CS_NOT_CLOCKSYNC; r <= LR_CS_DROP_WARMUP; ++r)
        slots.drops.push_back(stats::drop_slot(Drop::not_clocksync) + r);
    auto spec = xdp_datapath_spec(cs.datapath.datapath, cs.datapath.mode, "clocksync.bpf.o",
                                  cs.verify_checksums ? DP_VERIFY_CHECKSUM : 0, std::move(slots));
    spec->configure = [port = cs.udp_port, accept = !cs.strict_checksums](
                          xdp::DatapathProgram& program, const std::string& iface) {
        set_xdp_master(program, port, accept, xdp::interface_mac(iface).value_or(pkt::MacAddr{}));
    };
    return spec;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli(
        "clocksync: `clocksync master` answers clock-sync requests with receive and transmit "
        "times; `clocksync client` probes a master every sync period, keeps a synchronized clock "
        "and reports its uncertainty bound epsilon",
        kApp);
    AppOptions app_options;
    // Parsed once, here: the board's counters depend on the role.
    cli::SplitArgs args = cli::parse_or_exit(cli, argc, argv, app_options);
    const Options& cs = app_options.options;
    const bool client = cs.role == Role::client;
    std::optional<ClientStart> client_start;
    if (client) client_start = start_client(cs);

    // The client takes t4 and the master t2 from the steering program's receive stamp
    // (docs/clocksync.md, "t4 in the XDP hook", "t2 in the XDP hook").
    auto served = [&] {
        return xdp::SteerFilter{xdp::SteerMode::udp_port, cs.udp_port, cs.rx_stamps,
                                client && cs.xdp_turn};
    };
    AppInfo info{kApp, client ? "clocksync client" : "clocksync master", kDrops,
                 client ? stats::Names(kClientCounters) : stats::Names(kMasterCounters), served};
    info.xdp_datapath = xdp_program(cs);
    info.steer_hook = {"clocksync_steer.bpf.o", "clocksync warm-up echoes turned into requests",
                       "cs_turn"};
    Runtime runtime(info, std::move(args), app_options.common);
    return runtime.run_app(
        [&] { return client ? run_client(runtime, cs, *client_start) : run_master(runtime, cs); });
}
