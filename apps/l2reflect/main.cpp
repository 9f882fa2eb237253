// l2reflect: MAC-swap reflector, or a bump in the wire between paired ports, optionally reading
// each frame and a lookup buffer as it goes (--touch, --lookups). Wiring only: the kernel is
// reflect.hpp, the memory work memory_work.hpp.
#include <fmt/core.h>
#include <rte_mbuf.h>

#include <string>

#include "l2reflect/memory_work_feature.hpp"
#include "l2reflect/options.hpp"
#include "l2reflect/reflect_mbuf.hpp"
#include "runtime/runtime.hpp"
#include "runtime/xdp_datapath_feature.hpp"

using namespace linerate;

namespace {

// The plain reflector (no memory work), the MAC swap a template parameter: no branch a frame.
template <bool kSwap>
void run_worker(WorkerContext& ctx, const ForwardOptions& forward, XdpDatapath* xdp) {
    l2reflect::MbufReflector<kSwap> kernel;
    forward_on_datapath(ctx, xdp, kernel, forward);
}

// --datapath xdp: apps/l2reflect/xdp/l2reflect.bpf.c, its one reason (slot DP_DROP_FIRST + 0) the
// runt.
std::shared_ptr<const XdpDatapathSpec> xdp_program(xdp::Datapath datapath, xdp::XdpMode mode,
                                                   const ForwardChoice& forward) {
    auto spec =
        xdp_datapath_spec(datapath, mode, "l2reflect.bpf.o", forward.swaps_macs() ? DP_MAC_SWAP : 0,
                          {kTransmit, {stats::drop_slot(l2reflect::Drop::runt)}});
    if (spec) spec->forward_pair = forward.mode == ForwardMode::pair;
    return spec;
}

// Reflects on the started runtime (its ports checked against --forward: ForwardChoice::
// check_against) until a stop.
int reflect(Runtime& runtime, const ForwardChoice& forward,
            const l2reflect::MemoryWorkOptions& memory) {
    const std::vector<uint16_t> ports = runtime.port_ids();
    runtime.json_keys().update(
        {{"forward", forward_mode_name(forward.mode)}, {"mac_swap", forward.swaps_macs()}});
    report_datapath(runtime);
    XdpDatapath* xdp = runtime.xdp_datapath();
    const bool swap = forward.swaps_macs();
    const auto work = l2reflect::start_memory_work(runtime, memory);
    return runtime.run([&](WorkerContext& ctx) {
        const ForwardOptions fo{std::nullopt, forward_tx_queues(ctx.slot, forward.mode, ports)};
        if (!work) return swap ? run_worker<true>(ctx, fo, xdp) : run_worker<false>(ctx, fo, xdp);
        l2reflect::run_memory_worker(*work, ctx, fo, swap);
    });
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli(
        "l2reflect: swap source and destination MAC and send each frame back out the "
        "port and queue it came in on (or, with --forward pair, out of the paired port)",
        "l2reflect");
    cli::CommonOptions common;
    l2reflect::Options options;
    cli::SplitArgs args = cli::parse_or_exit(cli, argc, argv, common, options);
    AppInfo info{"l2reflect", "MAC-swap reflector", l2reflect::kDrops};
    info.xdp_datapath =
        xdp_program(options.datapath.datapath, options.datapath.mode, options.forward);
    info.regions = {{l2reflect::kLookupRegionFlag, options.memory.lookup_region}};
    info.check_ports = check_ports_of(options.forward);
    Runtime runtime(info, std::move(args), common);
    return runtime.run_app([&] { return reflect(runtime, options.forward, options.memory); });
}
