#pragma once
// --datapath xdp with --pcap IN:OUT: the app's XDP program (lib/xdp/datapath) instead of its C++
// kernel in the forwarding loop. Every frame of IN is run through the program once with
// BPF_PROG_TEST_RUN; what the program transmits (XDP_TX) goes to OUT in order with the bytes
// the program left (trimmed, MACs swapped), a drop counts under the reason the program counted,
// a frame it passes to the kernel (XDP_PASS: not the app's) is what the C++ kernel's "not mine"
// verdict is, and a frame it leaves to the slow path (multi-buffer) is handed to the app's C++
// kernel, the one the DPDK datapath runs. Everything around the kernel (net_pcap port, stats,
// summary, JSON) is the runtime's, so both datapaths report with the same keys.
#include <rte_mbuf.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/forward_loop.hpp"
#include "runtime/mbuf_frame.hpp"
#include "xdp/datapath.hpp"

namespace linerate {

class Runtime;
namespace cli {
struct CommonOptions;
}

// What the program's counter slots are on the app's stats board.
struct XdpBoardSlots {
    unsigned passed = kTransmit;  // DP_PASSED (nfv: not_ipv4's slot)
    std::vector<unsigned> drops;  // DP_DROP_FIRST + i: the board slot of the program's reason i
};

// Frames by the tier that handled them (summed over workers).
struct XdpTiers {
    std::atomic<uint64_t> xdp{0};        // finished by the XDP program
    std::atomic<uint64_t> slow_path{0};  // handed to the C++ kernel
};

// The app's XDP program for the run: exits 1 with one line when it cannot be loaded (not root,
// verifier), 2 when the run is not in pcap test mode (--pcap IN without OUT at once, ports other
// than net_pcap's in report()). Its JSON ("datapath", "xdp") and summary line are added to the
// runtime's.
class XdpDatapath {
  public:
    XdpDatapath(const std::string& app, const cli::CommonOptions& options,
                const std::string& object, const std::string& program);
    xdp::DatapathProgram& program() { return *program_; }
    XdpTiers& tiers() { return tiers_; }
    // The app's options (enum dp_flag); the test mode adds DP_RECORD_LAST and DP_MULTI_BUFFER
    // (its long frames are multi-buffer). Exits 1 on failure.
    void set_flags(uint32_t flags);
    void report(Runtime& runtime);

  private:
    std::string app_;
    std::unique_ptr<xdp::DatapathProgram> program_;
    XdpTiers tiers_;
};

// The JSON's "datapath" ("dpdk" without `xdp`), and the XDP datapath's own report.
void report_datapath(Runtime& runtime, XdpDatapath* xdp);

// Copies `bytes` over the frame's segments from its start and cuts it to their length.
inline void overwrite_frame(rte_mbuf* m, const std::vector<uint8_t>& bytes) {
    uint32_t done = 0;
    for (rte_mbuf* seg = m; seg && done < bytes.size(); seg = seg->next) {
        const uint32_t n = std::min<uint32_t>(seg->data_len, uint32_t(bytes.size()) - done);
        std::memcpy(rte_pktmbuf_mtod(seg, uint8_t*), bytes.data() + done, n);
        done += n;
    }
    truncate_frame(m, done);
}

// A forward_loop kernel: the frame through the XDP program, the slow path through `slow` (the
// app's C++ kernel on the mbuf).
template <class SlowKernel>
class XdpTestRunKernel {
  public:
    XdpTestRunKernel(XdpDatapath& datapath, const XdpBoardSlots& slots, SlowKernel& slow)
        : program_(datapath.program()), tiers_(datapath.tiers()), slots_(slots), slow_(slow) {}

    unsigned operator()(rte_mbuf* m) {
        const LinearFrame::Bytes in = linear_.of(m);
        // BPF_PROG_TEST_RUN takes no frame shorter than an Ethernet header: no NIC delivers one.
        if (in.len < 14 || in.len < rte_pktmbuf_pkt_len(m)) return slow_path(m);
        const xdp::TestRun run = program_.test_run(in.data, in.len, out_);
        if (run.slot == DP_SLOW_PATH) return slow_path(m);
        tiers_.xdp.fetch_add(1, std::memory_order_relaxed);
        if (run.slot == DP_TX) {
            trimmed_bytes_ += in.len - out_.size();
            overwrite_frame(m, out_);
            return kTransmit;
        }
        if (run.slot == DP_PASSED) return slots_.passed;
        return slots_.drops.at(run.slot - DP_DROP_FIRST);
    }

    uint64_t take_trimmed_bytes() {
        uint64_t n = std::exchange(trimmed_bytes_, 0);
        if constexpr (TrimmingKernel<SlowKernel>) n += slow_.take_trimmed_bytes();
        return n;
    }

  private:
    unsigned slow_path(rte_mbuf* m) {
        tiers_.slow_path.fetch_add(1, std::memory_order_relaxed);
        return slow_(m);
    }

    xdp::DatapathProgram& program_;
    XdpTiers& tiers_;
    const XdpBoardSlots& slots_;
    SlowKernel& slow_;
    LinearFrame linear_;
    std::vector<uint8_t> out_;
    uint64_t trimmed_bytes_ = 0;
};

}  // namespace linerate
