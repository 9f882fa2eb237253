// linerate-regions: the figures of the memory regions an app can place its buffers in
// (docs/regions.md), and the placement they advise. Wiring only: the options are options.hpp,
// the kernels memory_kernels.hpp, the measurement measure.hpp, the advice advise.hpp.
#include "cli/command_line.hpp"
#include "regions/options.hpp"
#include "regions/session.hpp"

using namespace linerate;

int main(int argc, char** argv) {
    CLI::App cli(
        "linerate-regions: measure memory regions (read latency by pointer chasing, random and "
        "sequential bandwidth, one worker and all, a mixed pair) and advise where an app's "
        "NetBuf and AggBuf go",
        "linerate-regions");
    regions::Options options;
    regions::add_options(cli, options);
    cli::SplitArgs args = cli::parse_or_exit(cli, argc, argv);
    regions::Resolved resolved;
    try {
        resolved = regions::resolve(options);
    } catch (const std::invalid_argument& e) {
        cli::usage_error("linerate-regions", e.what());
    }
    return regions::run_session(options, resolved, args);
}
