// kvagg: key-value stream aggregation, a sink. Wiring only: the service around the Runtime is
// serve.hpp, the packet kernel kv_kernel.hpp (on kv_wire.hpp, agg_table.hpp, dup_window.hpp),
// the worker loop sink_loop.hpp, the options options.hpp.
#include <fmt/core.h>

#include "kvagg/options.hpp"
#include "kvagg/serve.hpp"
#include "kvagg/sink_loop.hpp"  // the board: kAppCounters
#include "runtime/runtime.hpp"

using namespace linerate;
using namespace linerate::kvagg;

namespace {
constexpr const char* kApp = "kvagg";
}  // namespace

int main(int argc, char** argv) {
    CLI::App cli(
        "kvagg: receive key-value packets (16-byte tuples behind a 64-byte header, "
        "docs/wire-formats.md), "
        "sum every tuple's value into its key in an aggregation table placed in a chosen "
        "memory region; a sink for data datagrams that answers service requests (read, "
        "status, flush: docs/kvagg.md)",
        kApp);
    cli::CommonOptions common;
    Options options;
    // Parsed once, here: kvagg's checks, then the runtime's plan (--aggbuf's region with the
    // others) come before the EAL.
    cli::SplitArgs args = cli::parse_or_exit(cli, argc, argv, common, options);
    auto served = [&] { return xdp::SteerFilter{xdp::SteerMode::udp_port, options.udp_port}; };
    Runtime runtime({kApp,
                     "key-value stream aggregation",
                     kDrops,
                     kAppCounters,
                     served,
                     {},
                     {{kAggbufFlag, options.aggbuf}}},
                    std::move(args), common);
    fmt::print("{}: config {}\n", kApp, config_json(options).dump());
    return runtime.run_app([&] { return serve(runtime, options); });
}
