#pragma once
// --datapath xdp: the app's XDP program (lib/xdp/datapath/datapath_program) instead of its C++
// kernel, as a runtime feature (Runtime::add_features, from AppInfo::xdp_datapath), in one of two
// places:
// - on the --af-xdp interfaces: the app loads the program once per interface (each its own maps:
//   net_af_xdp puts an interface's sockets into its program's xsks_map by queue), writes its
//   options into the maps, attaches it (native or generic) before the net_af_xdp vdevs are made,
//   so that they adopt it
//   (its name and tag are libxdp's default program's) and put their AF_XDP sockets into its
//   xsks_map. The program answers what it can (XDP_TX, XDP_DROP), passes to the kernel what the
//   app does not serve (--xdp-steer), and redirects what it leaves to the slow path to the
//   queue's socket; with --forward pair what it sends goes out of the paired interface (1st <->
//   2nd, 3rd <-> 4th, as forward_mode pairs the ports) with bpf_redirect_map, where the DPDK poll
//   loop runs the C++ kernel. The program's counters join the stats board (its kernel tier), so the
//   stats line, summary, JSON, telemetry and --metrics count both tiers as the DPDK datapath counts
//   one. Stop detaches it.
// - in pcap test mode (--pcap IN:OUT, or net_pcap vdevs): every frame of IN is run through the
//   program once with BPF_PROG_TEST_RUN (XdpTestRunKernel, a forward_loop kernel); what it
//   transmits goes to OUT with the bytes it left, a drop counts under its reason, a frame it
//   leaves to the slow path goes to the app's C++ kernel.
#include <rte_mbuf.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/feature.hpp"
#include "runtime/forward_loop.hpp"
#include "runtime/mbuf_frame.hpp"
#include "xdp/datapath/datapath_program.hpp"

namespace linerate {

class Runtime;
namespace cli {
struct CommonOptions;
}

// What the program's counter slots are on the app's stats board.
struct XdpBoardSlots {
    unsigned passed = kTransmit;  // DP_PASSED (e.g. a not_ipv4 reason's slot)
    std::vector<unsigned> drops;  // DP_DROP_FIRST + i: the board slot of the program's reason i
};

// What an app gives the runtime for --datapath xdp.
struct XdpDatapathSpec {
    std::string object;  // its BPF object ("<app>.bpf.o"), function DP_PROGRAM
    uint32_t flags = 0;  // enum dp_flag: its options
    // Its further options into the program of interface `iface` ("" in test mode): e.g. address
    // sets, a UDP port and the interface's MAC; throws.
    std::function<void(xdp::DatapathProgram&, const std::string& iface)> configure;
    XdpBoardSlots slots;
    // Its options the program cannot serve on an interface ("--bad-port"), "" when none.
    std::string not_on_interface;
    // --forward pair: each interface's program sends out of the paired one (DP_FORWARD_PAIR).
    bool forward_pair = false;
    xdp::XdpMode mode = xdp::XdpMode::automatic;  // --xdp-mode
};

// Frames by the tier that handled them (test mode: summed over workers).
struct XdpTiers {
    std::atomic<uint64_t> xdp{0};        // finished by the XDP program
    std::atomic<uint64_t> slow_path{0};  // handed to the C++ kernel
};

// The one builder of the spec: --datapath `datapath` with --xdp-mode `mode` (none for dpdk), the
// app's BPF object, its dp_flag options and its board slots; the app adds what its program has
// more (configure, forward_pair, not_on_interface).
std::shared_ptr<XdpDatapathSpec> xdp_datapath_spec(xdp::Datapath datapath, xdp::XdpMode mode,
                                                   std::string object, uint32_t flags,
                                                   XdpBoardSlots slots);

class XdpDatapath final : public Feature {
  public:
    // Loads and configures the program (std::runtime_error: it cannot be, exit 1);
    // std::invalid_argument (exit 2) for a run it cannot serve: --pcap IN without OUT, an option
    // of the spec's not_on_interface on an interface. `serve`: --xdp-steer's
    // filter (on an interface).
    XdpDatapath(const std::string& app, const cli::CommonOptions& options,
                const XdpDatapathSpec& spec, const xdp::SteerFilter& serve);
    ~XdpDatapath() override;

    bool on_interface() const { return !ifaces_.empty(); }
    // The program (test mode's; on interfaces the first interface's).
    xdp::DatapathProgram& program() { return *programs_.front(); }
    XdpTiers& tiers() { return tiers_; }
    const XdpBoardSlots& slots() const { return spec_.slots; }

    std::optional<std::vector<uint16_t>> make_ports(unsigned workers) override;
    void claim_ports(std::vector<uint16_t>& ports) override;
    void start(const StartedRun& run) override;
    void tick(const MonitorTick& tick) override;
    // On interfaces: the program's frames in the stats line (program, slow path, kernel).
    const stats::FigureSet* figures() const override {
        return on_interface() ? &figure_set_ : nullptr;
    }
    void register_telemetry() override;
    void add_metrics(stats::Metrics& m) const override;
    void workers_stopped() override;
    void add_json(nlohmann::json& j) const override;
    std::string summary() const override;

  private:
    nlohmann::json json() const;
    // Each interface's program configured (on interfaces), or the test mode's one; throws.
    void load_programs();
    void declare_figures();
    // The programs' counters summed.
    xdp::SlotTotals totals() const;
    xdp::SlotCounts counts() const { return totals().packets; }
    // The attach mode of every interface if they agree, else "mixed".
    std::string mode_name() const;
    // Carries the program's counters onto the board's kernel tier (a BPF map cannot be a board
    // slot).
    void publish();

    std::string app_;
    XdpDatapathSpec spec_;
    std::vector<std::string> ifaces_;  // --af-xdp's interfaces, none in test mode
    xdp::SteerFilter serve_;
    std::vector<xdp::XdpMode> modes_;  // each interface's, once attached
    // One per interface (ifaces_'s order), one in test mode.
    std::vector<std::unique_ptr<xdp::DatapathProgram>> programs_;
    XdpTiers tiers_;
    stats::StatsBoard* board_ = nullptr;
    struct {
        stats::CarriedTotal rx_packets, rx_bytes, tx_packets, tx_bytes;
        std::array<stats::CarriedTotal, stats::kMaxDropReasons> drops;
    } carried_;
    stats::FigureSet figure_set_;
};

// The JSON's "datapath": "dpdk" unless the XDP datapath's feature says "xdp".
void report_datapath(Runtime& runtime);

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

// A forwarding app's worker loop on the datapath the run has, the one place that chooses:
//   datapath                        the loop runs          `kernel` is
//   dpdk (`xdp` null)               `kernel`               the kernel
//   xdp on an --af-xdp interface    `kernel`               the program's slow path
//   xdp in pcap test mode           XdpTestRunKernel       the program's slow path
// (on an interface the program runs in the kernel: the loop sees only what it leaves).
template <class Kernel>
void forward_on_datapath(WorkerContext& ctx, XdpDatapath* xdp, Kernel& kernel,
                         const ForwardOptions& forward) {
    if (!xdp || xdp->on_interface()) return forward_loop(ctx, kernel, forward);
    XdpTestRunKernel test_run(*xdp, xdp->slots(), kernel);
    forward_loop(ctx, test_run, forward);
}

}  // namespace linerate
