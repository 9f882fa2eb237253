#pragma once
// --datapath and --xdp-mode: where an app with an XDP program runs its kernel (the poll loop, or
// the program: lib/runtime/xdp_datapath_feature.hpp), as one option group (cli::OptionGroup).
// No EAL: the apps' option unit tests use it.
#include <CLI/CLI.hpp>

#include "xdp/datapath/datapath_program.hpp"

namespace linerate {

struct DatapathChoice {
    xdp::Datapath datapath = xdp::Datapath::dpdk;  // --datapath
    xdp::XdpMode mode = xdp::XdpMode::automatic;   // --xdp-mode

    bool xdp() const { return datapath == xdp::Datapath::xdp; }

    // --datapath xdp|dpdk (default dpdk) and --xdp-mode auto|native|generic (default auto).
    void add(CLI::App& app);
    // Nothing across the two: --xdp-mode without --datapath xdp is harmless (unused).
    void check() const {}
};

}  // namespace linerate
