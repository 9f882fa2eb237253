#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <vector>

#include "l2reflect/memory_work.hpp"
#include "l2reflect/reflect.hpp"
#include "mem/pointer_chain.hpp"

using namespace linerate::l2reflect;
using linerate::kTransmit;
using linerate::stats::drop_slot;

TEST(ReflectFrame, SwapsMacsAndKeepsTheRest) {
    std::vector<uint8_t> f(60);
    for (size_t i = 0; i < f.size(); ++i) f[i] = uint8_t(i);
    auto want = f;
    for (int i = 0; i < 6; ++i) std::swap(want[i], want[6 + i]);
    EXPECT_EQ(reflect_frame(f.data(), f.size()), kTransmit);
    EXPECT_EQ(f, want);
}

TEST(ReflectFrame, ShorterThanEthernetHeaderIsRunt) {
    for (size_t len = 0; len < 14; ++len) {
        std::vector<uint8_t> f(len + 1, 7);
        EXPECT_EQ(reflect_frame(f.data(), len), drop_slot(Drop::runt)) << len;
        EXPECT_EQ(f, std::vector<uint8_t>(len + 1, 7));  // untouched
    }
    uint8_t hdr[14] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0};
    EXPECT_EQ(reflect_frame(hdr, 14), kTransmit);
}

TEST(ReflectFrame, DropNamesMatchEnum) {
    EXPECT_EQ(kDrops[unsigned(Drop::runt)].key, "runt");
    EXPECT_EQ(kDrops[unsigned(Drop::split_header)].key, "split_header");
    EXPECT_EQ(kDrops[unsigned(Drop::split_header)].text, "split header");
    EXPECT_EQ(std::size(kDrops), 4u);  // after the runtime's tx_full and exception_ring_full
    EXPECT_EQ(kDrops[linerate::stats::kTxFullSlot].key, "tx_full");
}

TEST(ReflectFrame, ChainFirstSegmentDecides) {
    // A 9000-byte frame whose first segment holds its MACs: swapped; one that ends inside them
    // cannot be swapped in place and has its own reason; shorter than a header: still a runt.
    std::vector<uint8_t> f(16);
    for (size_t i = 0; i < f.size(); ++i) f[i] = uint8_t(i);
    auto want = f;
    for (int i = 0; i < 6; ++i) std::swap(want[i], want[6 + i]);
    auto g = f;
    EXPECT_EQ(reflect_frame(g.data(), 12, 9000), kTransmit);
    EXPECT_TRUE(std::equal(g.begin(), g.begin() + 12, want.begin()));
    g = f;
    EXPECT_EQ(reflect_frame(g.data(), 11, 9000), drop_slot(Drop::split_header));
    EXPECT_EQ(g, f);
    EXPECT_EQ(reflect_frame(g.data(), 11, 13), drop_slot(Drop::runt));
    EXPECT_EQ(reflect_frame(g.data(), 6, 9000), drop_slot(Drop::split_header));
}

TEST(ReflectFrame, WithoutSwapFramesPassUnchanged) {
    std::vector<uint8_t> f(60);
    for (size_t i = 0; i < f.size(); ++i) f[i] = uint8_t(i);
    const auto want = f;
    EXPECT_EQ(reflect_frame<false>(f.data(), f.size()), kTransmit);
    EXPECT_EQ(reflect_frame<false>(f.data(), 14), kTransmit);
    EXPECT_EQ(f, want);
    EXPECT_EQ(reflect_frame<false>(f.data(), 13), drop_slot(Drop::runt));
}

// --touch and --lookups (memory_work.hpp): exact sums over exactly the words they read.

namespace {

// The reference fold: each touched word assembled byte by byte, little-endian.
uint64_t reference_touch_sum(const std::vector<uint8_t>& f, unsigned pct) {
    const size_t words = f.size() * pct / 100 / 8;
    uint64_t sum = 0;
    for (size_t w = 0; w < words; ++w) {
        uint64_t word = 0;
        for (size_t b = 0; b < 8; ++b) word |= uint64_t(f[w * 8 + b]) << (8 * b);
        sum += word;
    }
    return sum;
}

std::vector<uint8_t> patterned(size_t len, unsigned seed) {
    std::vector<uint8_t> f(len);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (auto& b : f) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        b = uint8_t(x >> 56);
    }
    return f;
}

}  // namespace

TEST(MemoryWork, TouchedWordsAreWholeWordsOfThePercentage) {
    EXPECT_EQ(touched_words(1024, 100), 128u);
    EXPECT_EQ(touched_words(1024, 50), 64u);
    EXPECT_EQ(touched_words(1020, 100), 127u);  // the 4-byte tail is not read
    EXPECT_EQ(touched_words(60, 25), 1u);       // 15 bytes: one whole word
    EXPECT_EQ(touched_words(7, 100), 0u);
    EXPECT_EQ(touched_words(1514, 0), 0u);
}

TEST(MemoryWork, TouchSumIsExactForEveryPercentageAndLength) {
    for (size_t len : {7ul, 8ul, 60ul, 61ul, 64ul, 1020ul, 1023ul, 1024ul, 1514ul, 9000ul})
        for (unsigned pct : {0u, 1u, 25u, 33u, 50u, 75u, 99u, 100u}) {
            const std::vector<uint8_t> f = patterned(len, unsigned(len + pct));
            MemoryTally tally;
            FrameMemoryWork<true, LookupKind::none> work(pct, 0, {}, 0, tally);
            work(f.data(), f.size());
            work(f.data(), f.size());
            EXPECT_EQ(tally.touch_sum, 2 * reference_touch_sum(f, pct)) << len << " " << pct;
            EXPECT_EQ(tally.touched_bytes, 2 * 8 * (len * pct / 100 / 8)) << len << " " << pct;
            EXPECT_EQ(tally.lookups, 0u);
        }
}

TEST(MemoryWork, TouchReadsNothingBeyondThePercentage) {
    // Bytes after the touched words change nothing: they are not read.
    std::vector<uint8_t> f = patterned(1024, 9);
    MemoryTally a, b;
    FrameMemoryWork<true, LookupKind::none>(50, 0, {}, 0, a)(f.data(), f.size());
    std::fill(f.begin() + 512, f.end(), 0xff);
    FrameMemoryWork<true, LookupKind::none>(50, 0, {}, 0, b)(f.data(), f.size());
    EXPECT_EQ(a.touch_sum, b.touch_sum);
    EXPECT_EQ(a.touched_bytes, 512u);
}

TEST(MemoryWork, ChainIsOneCycleThroughEverySlot) {
    for (size_t n : {2ul, 3ul, 4ul, 512ul, 1000ul, 65536ul})
        for (uint64_t seed : {1ull, 2ull, 12345ull}) {
            std::vector<uint64_t> chain(n);
            linerate::mem::make_cyclic_chain(chain, seed);
            std::vector<bool> seen(n);
            uint64_t at = 0;
            for (size_t i = 0; i < n; ++i) {
                ASSERT_LT(chain[at], n);
                ASSERT_FALSE(seen[at]) << "short cycle at step " << i << " of " << n;
                seen[at] = true;
                at = chain[at];
            }
            EXPECT_EQ(at, 0u) << "not back at the start after " << n << " steps";
        }
}

TEST(MemoryWork, DependentLookupsWalkTheChainAndSumWhatTheyRead) {
    const size_t n = 4096;
    std::vector<uint64_t> chain(n);
    linerate::mem::make_cyclic_chain(chain, 7);
    MemoryTally tally;
    FrameMemoryWork<false, LookupKind::dependent> work(0, 16, chain, 0, tally);
    std::vector<uint8_t> f(64);
    // n / 16 frames of 16 reads go once round the cycle: every slot index read once.
    for (size_t i = 0; i < n / 16; ++i) work(f.data(), f.size());
    EXPECT_EQ(tally.lookups, n);
    EXPECT_EQ(tally.lookup_sum, n * (n - 1) / 2);
    EXPECT_EQ(tally.touched_bytes, 0u);
    EXPECT_EQ(f, std::vector<uint8_t>(64));  // frames are only read
}

TEST(MemoryWork, IndependentLookupsReadWithinTheBuffer) {
    // Slot i holds i + 1 within a buffer of n; a sentinel past its end would show a read beyond.
    const size_t n = 1000;
    std::vector<uint64_t> mem(n + 1, uint64_t(1) << 40);
    for (size_t i = 0; i < n; ++i) mem[i] = i + 1;
    std::span<const uint64_t> buffer(mem.data(), n);
    MemoryTally tally;
    FrameMemoryWork<false, LookupKind::independent> work(0, 8, buffer, 3, tally);
    std::vector<uint8_t> f(64);
    for (int i = 0; i < 10000; ++i) work(f.data(), f.size());
    EXPECT_EQ(tally.lookups, 80000u);
    EXPECT_GE(tally.lookup_sum, 80000u);      // every value read is at least 1
    EXPECT_LE(tally.lookup_sum, 80000u * n);  // and at most n: no sentinel
    // Random indices in range cover the buffer.
    uint64_t state = 3;
    std::vector<bool> hit(n);
    for (int i = 0; i < 100000; ++i) hit[linerate::mem::random_index(state, n)] = true;
    EXPECT_EQ(std::count(hit.begin(), hit.end(), true), long(n));
}

TEST(MemoryWork, TouchAndLookupsTogetherCountBoth) {
    std::vector<uint64_t> chain(64);
    linerate::mem::make_cyclic_chain(chain, 5);
    MemoryTally tally;
    FrameMemoryWork<true, LookupKind::dependent> work(100, 64, chain, 0, tally);
    const std::vector<uint8_t> f = patterned(1000, 1);
    work(f.data(), f.size());
    EXPECT_EQ(tally.touch_sum, reference_touch_sum(f, 100));
    EXPECT_EQ(tally.touched_bytes, 1000u);
    EXPECT_EQ(tally.lookups, 64u);
    EXPECT_EQ(tally.lookup_sum, 64u * 63 / 2);
}
