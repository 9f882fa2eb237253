// The XDP program (xdp/ttl.bpf.c) against the C++ kernel (ttl.hpp) on the same frames, run by the
// kernel with BPF_PROG_TEST_RUN through the installed DatapathProgram (root; skips otherwise):
// same verdict, byte-identical output, exact counters.
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <memory>
#include <string>
#include <vector>

#include "ttl.hpp"
#include "xdp/datapath/datapath_program.hpp"

using namespace linerate;

namespace {

using Frame = std::vector<uint8_t>;

Frame ipv4_frame(uint8_t ttl, size_t len = 60) {
    Frame f(len, 0);
    f[12] = 0x08;
    f[14] = 0x45;
    f[17] = 46;
    f[22] = ttl;
    f[23] = 17;
    f[24] = uint8_t(ttl * 7), f[25] = uint8_t(ttl * 13);  // any checksum: patched, not judged
    return f;
}

}  // namespace

TEST(TtlXdp, SameVerdictCountersAndBytesAsTheCppKernel) {
    std::unique_ptr<xdp::DatapathProgram> prog;
    try {
        prog = std::make_unique<xdp::DatapathProgram>("ttl.bpf.o", DP_PROGRAM);
        prog->set_flags(DP_RECORD_LAST | DP_MULTI_BUFFER);
    } catch (const std::exception& e) {
        GTEST_SKIP() << "cannot load ttl.bpf.o: " << e.what();
    }
    std::vector<Frame> frames;
    for (int ttl = 0; ttl <= 255; ++ttl) frames.push_back(ipv4_frame(uint8_t(ttl)));
    Frame arp = ipv4_frame(64);
    arp[12] = 0x08, arp[13] = 0x06;
    frames.push_back(arp);
    frames.push_back(ipv4_frame(64, 14 + 19));  // the IPv4 header cut short
    const unsigned first_drop = stats::drop_slot(ttl_forward::Drop::not_ipv4);
    xdp::SlotCounts expected{};
    std::vector<uint8_t> out;
    for (const Frame& frame : frames) {
        Frame cpp = frame;
        const unsigned verdict = ttl_forward::decrement_ttl(cpp.data(), cpp.size());
        const xdp::TestRun run = prog->test_run(frame.data(), uint32_t(frame.size()), out);
        if (verdict == kTransmit) {
            ASSERT_EQ(run.action, uint32_t(XDP_TX));
            ASSERT_EQ(run.slot, uint32_t(DP_TX));
            ASSERT_EQ(out, cpp);
        } else {
            ASSERT_EQ(run.action, uint32_t(XDP_DROP));
            ASSERT_EQ(run.slot, DP_DROP_FIRST + verdict - first_drop);
        }
        ++expected[run.slot];
    }
    EXPECT_EQ(expected[DP_TX], 254u);  // TTL 2..255
    EXPECT_EQ(prog->counts(), expected);
}
