#include "xdp/xdp_tx/xdp_transmitter.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <net/if.h>

#include <stdexcept>

#include "xdp/datapath/datapath_program.hpp"
#include "xdp/xdp_tx/xdp_tx_abi.h"

namespace linerate::xdp {

namespace {

uint32_t ifindex_of(const std::string& ifname) {
    const uint32_t ifindex = if_nametoindex(ifname.c_str());
    if (ifindex == 0) throw std::runtime_error("no interface " + ifname);
    return ifindex;
}

}  // namespace

XdpTransmitter::XdpTransmitter(const std::string& ifname)
    : program_(std::make_unique<DatapathProgram>(kXdpTxObjectName, "xdp_tx",
                                                 /*multi_buffer=*/false)),
      stamp_fd_(program_->map_fd(XDP_TX_STAMP_MAP)),
      ifindex_(ifindex_of(ifname)) {}

XdpTransmitter::~XdpTransmitter() = default;

std::optional<uint64_t> XdpTransmitter::send(const uint8_t* frame, uint32_t len) {
    // The run's context: the frame "arrived" on the interface (queue 0, which every interface
    // has), so XDP_TX sends it out of that interface.
    xdp_md ctx{};
    ctx.data_end = len;
    ctx.ingress_ifindex = ifindex_;
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = len, .ctx_in = &ctx,
                .ctx_size_in = sizeof(ctx), .repeat = 1, .flags = BPF_F_TEST_XDP_LIVE_FRAMES);
    if (int err = bpf_prog_test_run_opts(program_->program_fd(), &opts)) {
        last_error_ = -err;
        return std::nullopt;
    }
    const uint32_t key = 0;
    xdp_tx_stamp stamp{};
    if (int err = bpf_map_lookup_elem(stamp_fd_, &key, &stamp)) {
        last_error_ = -err;
        return std::nullopt;
    }
    return stamp.sent_ns;
}

}  // namespace linerate::xdp
