// The same frames through nfv's two kernels: the C++ CheckIpHeader (with the trim and swap the
// DPDK kernel does) called directly, and apps/nfv/xdp/nfv.bpf.c run by the kernel with
// BPF_PROG_TEST_RUN (root; skips otherwise). Same verdict, same reason counters, byte-identical
// output.
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <memory>
#include <random>

#include "nfv/check_ip_header.hpp"
#include "nfv/frames.hpp"
#include "nfv/nfv_xdp.hpp"
#include "xdp/datapath/datapath_program.hpp"

using namespace linerate;
using namespace linerate::test::nfv;
using linerate::nfv::CheckIpHeader;
using linerate::nfv::Config;
using linerate::nfv::Verdict;

namespace {

// The program configured as `check` is, or a skip reason.
std::unique_ptr<xdp::DatapathProgram> load(const CheckIpHeader& check, bool pass_non_ip,
                                           bool mac_swap, std::string& why) {
    try {
        auto p = std::make_unique<xdp::DatapathProgram>("nfv.bpf.o", DP_PROGRAM);
        p->set_flags((mac_swap ? DP_MAC_SWAP : 0) |
                     (check.verify_checksum() ? DP_VERIFY_CHECKSUM : 0) |
                     (pass_non_ip ? DP_PASS_NON_IP : 0) | DP_RECORD_LAST | DP_MULTI_BUFFER);
        linerate::nfv::set_xdp_sources(*p, check.bad_src(), check.good_dst());
        return p;
    } catch (const std::exception& e) {
        why = e.what();
        return nullptr;
    }
}

// The slot the program must count a frame under, from the C++ verdict.
uint32_t expected_slot(Verdict v) {
    if (v == Verdict::ok) return DP_TX;
    if (v == Verdict::not_ipv4) return DP_PASSED;
    return DP_DROP_FIRST + (unsigned(v) - unsigned(Verdict::not_ipv4));
}

// What the DPDK kernel sends for a valid frame: trimmed to out_len, MACs swapped.
Frame cpp_output(const Frame& f, const nfv::Result& r, bool mac_swap) {
    Frame out(f.begin(), f.begin() + r.out_len);
    return mac_swap ? swap_macs(out) : out;
}

// A random frame of nfv's kinds, with a few header bytes flipped and sometimes cut short.
Frame random_frame(std::mt19937& rng) {
    IpSpec s;
    if (rng() % 4 == 0) s.tags.push_back(rng() % 2 ? 0x8100 : 0x88A8);
    if (rng() % 8 == 0) s.tags.push_back(0x8100);
    if (rng() % 10 == 0) s.ethertype = 0x0806;
    s.ver_ihl = uint8_t(rng() % 8 ? 0x45 : 0x45 + rng() % 11);
    s.ip_total = 20 + rng() % 80;
    s.padding = rng() % 4 ? 0 : rng() % 30;
    const uint32_t srcs[] = {0, 0xFFFFFFFF, uint32_t(rng()), ip(10, 0, 0, 1), ip(10, 1, 0, 255)};
    s.src = srcs[rng() % 5];
    s.dst = rng() % 3 ? ip(10, 0, 0, 2) : ip(10, 1, 0, 1);
    Frame f = ip_frame(s);
    for (unsigned k = rng() % 3; k > 0; --k) {
        const size_t at = rng() % std::min<size_t>(f.size(), l2_length(s) + 24);
        f[at] ^= uint8_t(1u << (rng() % 8));
    }
    if (rng() % 8 == 0) f.resize(rng() % (f.size() + 1));
    return f;
}

struct Variant {
    const char* name;
    Config config;
    bool mac_swap;
};

std::vector<Variant> variants() {
    Config no_checksum, pass, listed;
    no_checksum.verify_checksum = false;
    pass.pass_non_ip = true;
    const nfv::Interfaces ifs = nfv::parse_interfaces("10.1.0.1/24");
    listed.bad_src = ifs.bad_src;
    listed.good_dst = ifs.good_dst;
    listed.bad_src.push_back(ip(10, 0, 0, 1));
    return {{"default", {}, true},
            {"no_checksum", no_checksum, true},
            {"pass_non_ip", pass, true},
            {"interfaces", listed, true},
            {"no_mac_swap", {}, false}};
}

}  // namespace

TEST(NfvXdp, SameVerdictCountersAndBytesAsTheCppKernel) {
    std::mt19937 rng(24);
    for (const Variant& v : variants()) {
        const bool pass_non_ip = v.config.pass_non_ip;
        const CheckIpHeader check(v.config);
        std::string why;
        std::unique_ptr<xdp::DatapathProgram> prog = load(check, pass_non_ip, v.mac_swap, why);
        if (!prog) GTEST_SKIP() << "cannot load nfv.bpf.o: " << why;
        xdp::SlotCounts expected{}, expected_bytes{};
        std::vector<uint8_t> out;
        for (int n = 0; n < 3000; ++n) {
            const Frame f = random_frame(rng);
            if (f.size() < 14) continue;  // BPF_PROG_TEST_RUN takes no frame under ETH_HLEN
            const nfv::Result r = check.check(f.data(), f.size());
            const xdp::TestRun run = prog->test_run(f.data(), uint32_t(f.size()), out);
            const uint32_t slot = expected_slot(r.verdict);
            ASSERT_EQ(run.slot, slot) << v.name << " frame " << n;
            ++expected[slot];
            expected_bytes[slot] += out.size();  // as the program left it
            if (r.verdict == Verdict::ok) {
                ASSERT_EQ(run.action, uint32_t(XDP_TX)) << v.name << " frame " << n;
                ASSERT_EQ(out, cpp_output(f, r, v.mac_swap)) << v.name << " frame " << n;
                if (out.size() < f.size()) {  // the trim is counted, with the bytes cut off
                    ++expected[DP_TRIMMED];
                    expected_bytes[DP_TRIMMED] += f.size() - out.size();
                }
            } else {
                ASSERT_EQ(run.action, uint32_t(slot == DP_PASSED ? XDP_PASS : XDP_DROP));
            }
        }
        EXPECT_EQ(prog->counts(), expected) << v.name;
        EXPECT_EQ(prog->totals().bytes, expected_bytes) << v.name;
        // Every reason the configuration can give was exercised.
        for (unsigned reason = LR_IPV4_TINY_PACKET; reason <= LR_IPV4_BAD_SOURCE; ++reason) {
            if (reason == LR_IPV4_BAD_CHECKSUM && !check.verify_checksum()) continue;
            EXPECT_GT(expected[DP_DROP_FIRST + reason], 0u) << v.name << " reason " << reason;
        }
        EXPECT_GT(expected[DP_TX], 0u) << v.name;
        if (!pass_non_ip) {
            EXPECT_GT(expected[DP_PASSED], 0u) << v.name;
        }
    }
}

// The range nfv's XDP program asks no set for: the widest gap between bad sources.
TEST(NfvXdp, WidestRangeWithoutBadSources) {
    using linerate::nfv::AddressRange;
    using linerate::nfv::widest_range_without;
    EXPECT_EQ(widest_range_without({}), (AddressRange{0, 0xFFFFFFFF}));
    // The default set (Click's): every other address.
    EXPECT_EQ(widest_range_without({0xFFFFFFFF, 0}), (AddressRange{1, 0xFFFFFFFE}));
    EXPECT_EQ(widest_range_without({0}), (AddressRange{1, 0xFFFFFFFF}));
    EXPECT_EQ(widest_range_without({0xFFFFFFFF}), (AddressRange{0, 0xFFFFFFFE}));
    // Between neighbours, duplicates no matter.
    EXPECT_EQ(widest_range_without({0, 0x10, 0x10, 0xF0000000, 0xFFFFFFFF}),
              (AddressRange{0x11, 0xEFFFFFFF}));
    // Below the first.
    EXPECT_EQ(widest_range_without({0xC0000000, 0xC0000001, 0xFFFFFFFF}),
              (AddressRange{0, 0xBFFFFFFF}));
    // Every address of the range is clear, the ones around it are not.
    const std::vector<uint32_t> bad = {ip(10, 1, 0, 255), ip(10, 0, 0, 1), 0, 0xFFFFFFFF};
    const AddressRange r = widest_range_without(bad);
    for (uint32_t a : bad) EXPECT_FALSE(a >= r.first && a <= r.last) << a;
    EXPECT_EQ(r, (AddressRange{ip(10, 1, 1, 0), 0xFFFFFFFE}));
}
