#include "xdp/xdp_tx.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/core.h>
#include <linux/bpf.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "xdp/steer.hpp"
#include "xdp_tx_abi.h"

namespace linerate::xdp {

XdpTransmitter::XdpTransmitter(uint32_t ifindex) : ifindex_(ifindex) {
    const std::string path = find_bpf_object(kXdpTxObjectName);
    if (path.empty())
        throw std::runtime_error(std::string("no ") + kXdpTxObjectName +
                                 " (build target linerate_bpf)");
    libbpf_set_print(nullptr);
    object_ = bpf_object__open_file(path.c_str(), nullptr);
    if (!object_) throw std::runtime_error(path + ": " + std::strerror(errno));
    if (int err = bpf_object__load(object_)) {
        bpf_object__close(object_);
        throw std::runtime_error(fmt::format("cannot load {}: {}{}", path, std::strerror(-err),
                                             err == -EPERM ? " (needs root or CAP_BPF)" : ""));
    }
    prog_fd_ = bpf_program__fd(bpf_object__find_program_by_name(object_, "xdp_tx"));
    stamp_fd_ = bpf_object__find_map_fd_by_name(object_, XDP_TX_STAMP_MAP);
}

XdpTransmitter::~XdpTransmitter() {
    bpf_object__close(object_);
}

std::optional<uint64_t> XdpTransmitter::send(const uint8_t* frame, uint32_t len) {
    // The run's context: the frame "arrived" on the interface (queue 0, which every interface
    // has), so XDP_TX sends it out of that interface.
    xdp_md ctx{};
    ctx.data_end = len;
    ctx.ingress_ifindex = ifindex_;
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = len, .ctx_in = &ctx,
                .ctx_size_in = sizeof(ctx), .repeat = 1, .flags = BPF_F_TEST_XDP_LIVE_FRAMES);
    if (int err = bpf_prog_test_run_opts(prog_fd_, &opts)) {
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
