#include <gtest/gtest.h>

#include "kvagg/dup_window.hpp"

using namespace linerate::kvagg;

namespace {
constexpr uint64_t W = 1024;
constexpr SeqVerdict A = SeqVerdict::accept, D = SeqVerdict::duplicate, S = SeqVerdict::stale;
}  // namespace

TEST(DupFilter, NewThenDuplicate) {
    DupFilter f(W, 4);
    EXPECT_EQ(f.check(1, 0), A);
    EXPECT_EQ(f.check(1, 0), D);
    EXPECT_EQ(f.check(1, 1), A);
    EXPECT_EQ(f.check(1, 5), A);
    EXPECT_EQ(f.check(1, 3), A);  // late but new
    EXPECT_EQ(f.check(1, 3), D);
    EXPECT_EQ(f.check(1, 5), D);
}

TEST(DupFilter, WindowEdges) {
    DupFilter f(W, 4);
    const uint64_t top = 5000;
    EXPECT_EQ(f.check(7, top - (W - 1)), A);
    EXPECT_EQ(f.check(7, top - W), A);
    EXPECT_EQ(f.check(7, top), A);
    EXPECT_EQ(f.check(7, top - (W - 1)), D);  // exactly window-1 back: still tracked
    EXPECT_EQ(f.check(7, top - W), S);        // window back: stale even though it was seen
    EXPECT_EQ(f.check(7, top - W - 1), S);
    EXPECT_EQ(f.check(7, 0), S);
    EXPECT_EQ(f.check(7, top - (W - 2)), A);  // unseen inside the window
}

TEST(DupFilter, FirstPacketCanStartAnywhere) {
    DupFilter f(W, 4);
    EXPECT_EQ(f.check(1, 100), A);
    EXPECT_EQ(f.check(1, 0), A);  // inside the window, never seen
    EXPECT_EQ(f.check(1, 0), D);
    EXPECT_EQ(f.check(2, 1u << 20), A);
    EXPECT_EQ(f.check(2, 0), S);
}

TEST(DupFilter, FarJumpSlidesTheWindow) {
    DupFilter f(W, 4);
    for (uint64_t s = 0; s < W; ++s) ASSERT_EQ(f.check(3, s), A);
    // A jump of more than the window clears everything.
    const uint64_t far = 10 * W + 17;
    EXPECT_EQ(f.check(3, far), A);
    EXPECT_EQ(f.check(3, W - 1), S);
    for (uint64_t s = far - (W - 1); s < far; ++s) ASSERT_EQ(f.check(3, s), A) << s;
    EXPECT_EQ(f.check(3, far), D);
}

TEST(DupFilter, ShortJumpClearsOnlyTheReusedBits) {
    DupFilter f(W, 4);
    for (uint64_t s = 0; s < W; ++s) ASSERT_EQ(f.check(3, s), A);
    // top W-1 -> W+99: seqs W..W+99 reuse the bits of 0..99 (cleared); 100..W-1 stay seen.
    EXPECT_EQ(f.check(3, W + 99), A);
    for (uint64_t s = W; s < W + 99; ++s) ASSERT_EQ(f.check(3, s), A) << s;
    for (uint64_t s = 100; s < W; ++s) ASSERT_EQ(f.check(3, s), D) << s;
    EXPECT_EQ(f.check(3, 99), S);
    // Jumps that cross word boundaries and wrap the bitmap.
    uint64_t top = W + 99;
    for (uint64_t step : {1, 63, 64, 65, 130, 500, 1023, 1024, 1025, 7}) {
        top += step;
        ASSERT_EQ(f.check(3, top), A) << step;
        ASSERT_EQ(f.check(3, top), D) << step;
        for (uint64_t back = 1; back < std::min<uint64_t>(step, W); ++back)
            ASSERT_EQ(f.check(3, top - back), A) << step << " " << back;
    }
}

TEST(DupFilter, StreamsAreIndependentAndBounded) {
    DupFilter f(W, 3);
    EXPECT_EQ(f.check(0, 5), A);  // stream id 0 is an ordinary id
    EXPECT_EQ(f.check(~0u, 5), A);
    EXPECT_EQ(f.check(42, 5), A);
    EXPECT_EQ(f.streams(), 3u);
    EXPECT_EQ(f.check(43, 5), SeqVerdict::too_many_streams);
    EXPECT_EQ(f.check(43, 6), SeqVerdict::too_many_streams);
    EXPECT_EQ(f.check(0, 5), D);
    EXPECT_EQ(f.check(~0u, 5), D);
    EXPECT_EQ(f.check(42, 6), A);
    EXPECT_EQ(f.streams(), 3u);
}

TEST(DupFilter, ManyStreamsFillTheMap) {
    DupFilter f(64, 1000);
    for (uint32_t s = 0; s < 1000; ++s) ASSERT_EQ(f.check(s * 2654435761u, s), A);
    for (uint32_t s = 0; s < 1000; ++s) ASSERT_EQ(f.check(s * 2654435761u, s), D);
    EXPECT_EQ(f.check(12345, 0), SeqVerdict::too_many_streams);
}

TEST(DupFilter, WindowZeroDisablesAndBadWindowsThrow) {
    DupFilter off(0, 1);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(off.check(uint32_t(i), 1), A);
    EXPECT_EQ(off.check(0, 1), A);
    EXPECT_THROW(DupFilter(1000, 4), std::invalid_argument);
    EXPECT_THROW(DupFilter(32, 4), std::invalid_argument);
    EXPECT_THROW(DupFilter(64, 0), std::invalid_argument);
    DupFilter def;
    EXPECT_EQ(def.window(), 65536u);
}

TEST(DupFilter, CopiesAreIndependent) {
    DupFilter a(W, 4);
    EXPECT_EQ(a.check(1, 10), A);
    DupFilter b = a;
    EXPECT_EQ(b.check(1, 11), A);
    EXPECT_EQ(a.check(1, 11), A);  // b's record did not leak into a
    EXPECT_EQ(b.check(1, 10), D);
}

// opened - filled are the numbers never accepted, and agree with the status op's gaps while
// everything is inside the window.
TEST(DupFilter, GapsOpenedByJumpsAndFilledByLateOnes) {
    DupFilter f(W, 4);
    EXPECT_EQ(f.check(1, 1), A);  // numbers start at 1: nothing skipped
    EXPECT_EQ(f.check(1, 2), A);  // the inline path
    EXPECT_EQ(f.check(1, 6), A);  // 3, 4, 5 skipped
    EXPECT_EQ(f.check(2, 4), A);  // a new stream: 1, 2, 3 skipped
    EXPECT_EQ(f.check(1, 4), A);  // late: fills one
    EXPECT_EQ(f.check(1, 4), D);  // a duplicate fills nothing
    EXPECT_EQ(f.check(2, 0), A);  // 0 precedes the numbering: was never skipped
    EXPECT_EQ(f.gaps().opened, 6u);
    EXPECT_EQ(f.gaps().filled, 1u);
    EXPECT_EQ(f.state(1, 0)->gaps + f.state(2, 0)->gaps, f.gaps().opened - f.gaps().filled);
    // A jump past the window: the skipped numbers can only come back stale, never filled.
    EXPECT_EQ(f.check(1, 6 + 3 * W), A);
    EXPECT_EQ(f.check(1, 5), S);
    EXPECT_EQ(f.gaps().opened, 6u + 3 * W - 1);
    EXPECT_EQ(f.gaps().filled, 1u);
}

TEST(DupFilter, InOrderStreamsOpenNoGaps) {
    DupFilter f(64, 4);
    for (uint64_t s = 0; s < 1000; ++s) ASSERT_EQ(f.check(uint32_t(s % 3), s / 3 + 1), A);
    EXPECT_EQ(f.gaps().opened, 0u);
    EXPECT_EQ(f.gaps().filled, 0u);
}
