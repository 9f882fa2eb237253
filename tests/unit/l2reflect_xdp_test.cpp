// The same frames through l2reflect's two kernels: reflect_frame (C++) called directly, and
// apps/l2reflect/xdp/l2reflect.bpf.c run by the kernel with BPF_PROG_TEST_RUN (root; skips
// otherwise). Same verdict, same counters, byte-identical output.
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <memory>
#include <random>

#include "l2reflect/reflect.hpp"
#include "xdp/datapath/datapath_program.hpp"

using namespace linerate;

namespace {

std::unique_ptr<xdp::DatapathProgram> load(bool swap, std::string& why) {
    try {
        auto p = std::make_unique<xdp::DatapathProgram>("l2reflect.bpf.o", DP_PROGRAM);
        p->set_flags((swap ? DP_MAC_SWAP : 0) | DP_RECORD_LAST | DP_MULTI_BUFFER);
        return p;
    } catch (const std::exception& e) {
        why = e.what();
        return nullptr;
    }
}

}  // namespace

TEST(L2reflectXdp, SameVerdictCountersAndBytesAsTheCppKernel) {
    std::mt19937 rng(24);
    for (const bool swap : {true, false}) {
        std::string why;
        std::unique_ptr<xdp::DatapathProgram> prog = load(swap, why);
        if (!prog) GTEST_SKIP() << "cannot load l2reflect.bpf.o: " << why;
        xdp::SlotCounts expected{};
        std::vector<uint8_t> out;
        // BPF_PROG_TEST_RUN takes frames from an Ethernet header's 14 bytes up.
        for (size_t len = 14; len < 2000; len += 1 + rng() % 7) {
            std::vector<uint8_t> frame(len);
            for (auto& b : frame) b = uint8_t(rng());
            std::vector<uint8_t> cpp = frame;
            const unsigned verdict = swap ? l2reflect::reflect_frame<true>(cpp.data(), len)
                                          : l2reflect::reflect_frame<false>(cpp.data(), len);
            ASSERT_EQ(verdict, kTransmit);
            const xdp::TestRun run = prog->test_run(frame.data(), uint32_t(len), out);
            ASSERT_EQ(run.action, uint32_t(XDP_TX)) << len;
            ASSERT_EQ(run.slot, uint32_t(DP_TX)) << len;
            ASSERT_EQ(out, cpp) << len;
            ++expected[DP_TX];
        }
        EXPECT_EQ(prog->counts(), expected);
    }
}
