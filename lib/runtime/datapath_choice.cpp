#include "runtime/datapath_choice.hpp"

#include <map>
#include <string>

namespace linerate {

void DatapathChoice::add(CLI::App& app) {
    app.add_option("--datapath", datapath,
                   "Where the kernel runs: dpdk (the poll loop) or xdp (the app's XDP program on "
                   "the --af-xdp interface, the poll loop its slow path; with --pcap IN:OUT each "
                   "frame run with BPF_PROG_TEST_RUN; root)")
        ->transform(CLI::CheckedTransformer(std::map<std::string, xdp::Datapath>{
            {"dpdk", xdp::Datapath::dpdk}, {"xdp", xdp::Datapath::xdp}}));
    app.add_option("--xdp-mode", mode,
                   "--datapath xdp on an interface: native (in the driver), generic (skb) or "
                   "auto (native where the driver has it, generic on veth, whose native XDP_TX "
                   "reaches only a peer with NAPI on)")
        ->transform(CLI::CheckedTransformer(
            std::map<std::string, xdp::XdpMode>{{"auto", xdp::XdpMode::automatic},
                                                {"native", xdp::XdpMode::native},
                                                {"generic", xdp::XdpMode::generic}}));
}

}  // namespace linerate
