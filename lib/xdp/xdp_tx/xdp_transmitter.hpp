#pragma once
// Frames sent from the XDP layer of a kernel interface (lib/xdp/xdp_tx/xdp_tx.bpf.c, with libbpf):
// each frame is handed to the program by BPF_PROG_TEST_RUN in live-frames mode, which sends it by
// XDP_TX out of the interface the run names, and the program's CLOCK_MONOTONIC reading right
// before XDP_TX comes back as the frame's transmit stamp. The frame skips what AF_XDP's copy
// mode costs on transmit (the socket call, an skb, its copy into the driver), and the stamp is
// the kernel's, as late as a stamp can be that is still never after the frame left.
//
// What receives it must drain XDP frames: any NIC driver with native XDP; on a veth, the peer
// needs NAPI (an XDP program in native mode, or GRO), or the kernel drops the frame unseen.
// Plain libbpf, no EAL; one sender at a time (the program keeps one stamp).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace linerate::xdp {

class DatapathProgram;

inline constexpr const char* kXdpTxObjectName = "xdp_tx.bpf.o";

class XdpTransmitter {
  public:
    // Loads xdp_tx.bpf.o (find_bpf_object) to send out of interface `ifname`. Throws
    // std::runtime_error saying why it cannot (no such interface, no object, not root). A
    // kernel without live-frames test runs (before 5.18) refuses the first send (EINVAL).
    explicit XdpTransmitter(const std::string& ifname);
    ~XdpTransmitter();
    XdpTransmitter(const XdpTransmitter&) = delete;
    XdpTransmitter& operator=(const XdpTransmitter&) = delete;

    // Sends `frame` (`len` bytes, a whole Ethernet frame); its transmit stamp on
    // CLOCK_MONOTONIC in ns, or nullopt when the kernel refused the run (last_error() says why).
    std::optional<uint64_t> send(const uint8_t* frame, uint32_t len);
    int last_error() const { return last_error_; }

  private:
    std::unique_ptr<DatapathProgram> program_;
    int stamp_fd_ = -1;
    uint32_t ifindex_;
    int last_error_ = 0;
};

}  // namespace linerate::xdp
