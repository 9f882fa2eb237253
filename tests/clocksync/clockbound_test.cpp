// --clockbound's segment writer without EAL: the bytes another process reads at the offsets of
// ClockBound's PROTOCOL.md (version 2), the generation seqlock (odd while writing, 65535 → 2),
// the status (Unknown, Synchronized, FreeRunning past the max age, Unknown once stopped), the
// bound (ε + |CLOCK_REALTIME − synchronized clock| + the pairing's uncertainty), and the files
// it refuses.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "clocksync/clockbound.hpp"
#include "clocksync/seqlock.hpp"
#include "clocksync/sync_fixture.hpp"
#include "support/scratch.hpp"

using namespace linerate::clocksync;
using linerate::test::scratch;

namespace {

// The segment as another process sees it: the file's bytes.
std::string file_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

template <class T>
T at(const std::string& bytes, size_t offset) {
    T v;
    std::memcpy(&v, bytes.data() + offset, sizeof(T));
    return v;
}

}  // namespace

TEST(ClockBound, SegmentBytesAreAtTheProtocolsOffsets) {
    const std::string path = scratch("shm0");
    ClockBoundWriter w(path, 1'000'000'000, 10'000);
    ClockErrorBound e;
    e.as_of = {1234, 567};
    e.void_after = {1235, 999'999'999};
    e.bound_ns = 0x0102030405060708;
    e.disruption_marker = 0x1112131415161718;
    e.max_drift_ppb = 0x21222324;
    e.clock_status = int32_t(ClockBoundStatus::free_running);
    w.write(e);
    const std::string b = file_bytes(path);
    ASSERT_EQ(b.size(), 80u);
    EXPECT_EQ(at<uint32_t>(b, 0), 0x414D5A4Eu);  // magic, two native u32
    EXPECT_EQ(at<uint32_t>(b, 4), 0x43420200u);
    EXPECT_EQ(at<uint32_t>(b, 8), 80u);  // segment size
    EXPECT_EQ(at<uint16_t>(b, 12), 2u);  // version
    EXPECT_EQ(at<uint16_t>(b, 14), 4u);  // generation: the opening write (Unknown), then ours
    EXPECT_EQ(at<int64_t>(b, 16), 1234);
    EXPECT_EQ(at<int64_t>(b, 24), 567);
    EXPECT_EQ(at<int64_t>(b, 32), 1235);
    EXPECT_EQ(at<int64_t>(b, 40), 999'999'999);
    EXPECT_EQ(at<int64_t>(b, 48), 0x0102030405060708);
    EXPECT_EQ(at<uint64_t>(b, 56), 0x1112131415161718u);
    EXPECT_EQ(at<uint32_t>(b, 64), 0x21222324u);
    EXPECT_EQ(at<int32_t>(b, 68), 2);  // FreeRunning
    EXPECT_EQ(at<uint8_t>(b, 72), 0);  // clock disruption support: off
    EXPECT_EQ(w.writes(), 2u);
}

TEST(ClockBound, GenerationIsOddWhileWritingAndWrapsTo2) {
    EXPECT_EQ(seqlock_next_even<uint16_t>(1), 2);
    EXPECT_EQ(seqlock_next_even<uint16_t>(65533), 65534);
    EXPECT_EQ(seqlock_next_even<uint16_t>(65535), 2);  // not 0: 0 means "never written"
    EXPECT_EQ(seqlock_next_even<uint64_t>(~uint64_t(0)), 2u);

    const std::string path = scratch("wrap");
    ClockBoundWriter w(path, 1'000'000'000, 0);
    ClockBoundSegment* seg = const_cast<ClockBoundSegment*>(w.segment());
    seg->generation = 65534;
    w.write({});
    EXPECT_EQ(seg->generation, 2);  // 65535 while writing, then 2
    w.write({});
    EXPECT_EQ(seg->generation, 4);
    // A writer that died in the middle of a write left it odd: the next write ends it even.
    seg->generation = 65535;
    w.write({});
    EXPECT_EQ(seg->generation, 2);
    seg->generation = 7;
    w.write({});
    EXPECT_EQ(seg->generation, 8);
}

// A reader thread (the protocol's reader: generation, copy, generation) never takes a mix of
// two writes while the writer rewrites the segment as fast as it can.
TEST(ClockBound, ReadersNeverTakeATornSegment) {
    const std::string path = scratch("torn");
    ClockBoundWriter w(path, 1'000'000'000, 0);
    w.write({});  // every field from v = 0
    std::atomic<bool> done{false}, reading{false};
    std::thread writer([&] {
        // From the reader's first look on: on a loaded 2-core machine the writer could otherwise
        // finish its 200 000 writes before the reader thread ran at all.
        while (!reading) std::this_thread::yield();
        for (int64_t v = 1; v <= 200'000; ++v) {
            ClockErrorBound e;
            e.as_of = {v, v};
            e.void_after = {v, v};
            e.bound_ns = v;
            e.disruption_marker = uint64_t(v);
            w.write(e);
        }
        done = true;
    });
    uint64_t taken = 0, torn = 0;
    reading = true;
    // Until the writer is done, and at least one read taken (the last write, if the reader was
    // descheduled all along).
    while (!done || taken == 0) {
        uint64_t words[kClockBoundPayloadWords];
        if (!seqlock_try_load(w.segment()->generation, w.segment()->payload, words,
                              kClockBoundPayloadWords))
            continue;
        ClockErrorBound e;
        std::memcpy(&e, words, sizeof(e));
        ++taken;
        const int64_t v = e.as_of.sec;
        if (e.as_of.nsec != v || e.void_after.sec != v || e.void_after.nsec != v ||
            e.bound_ns != v || e.disruption_marker != uint64_t(v))
            ++torn;
    }
    writer.join();
    EXPECT_GT(taken, 0u);
    EXPECT_EQ(torn, 0u);
}

TEST(ClockBound, StatusFollowsTheLastSyncsAge) {
    const uint64_t max_age = 1'000'000;
    EXPECT_EQ(clockbound_status(SyncState{}, 5, max_age), ClockBoundStatus::unknown);
    const SyncState s = a_sync(0, 1000, 2000, 50, 10'000);
    EXPECT_EQ(clockbound_status(s, 2000, max_age), ClockBoundStatus::synchronized);
    EXPECT_EQ(clockbound_status(s, 2000 + max_age, max_age), ClockBoundStatus::synchronized);
    EXPECT_EQ(clockbound_status(s, 2001 + max_age, max_age), ClockBoundStatus::free_running);
    // Wrap-safe: t4 just below 2^64, now past the wrap.
    const SyncState w = a_sync(0, ~uint64_t(0) - 100, ~uint64_t(0) - 10, 50, 0);
    EXPECT_EQ(clockbound_status(w, 100, max_age), ClockBoundStatus::synchronized);
}

TEST(ClockBound, BoundIsEpsilonPlusTheRealtimeDistancePlusThePairing) {
    // Synchronized clock at local 1e9 + 1000: 1e9 + 1000 + θ; ε there = 300 + 1 µs · 1 ppm.
    const SyncState s = a_sync(5'000'000, 1'000'000'000, 1'000'000'100, 300, 1000);
    const uint64_t local = 1'000'001'000, synced = local + 5'000'000;
    const uint64_t eps = s.epsilon_at(local);
    EXPECT_EQ(clockbound_bound_ns(s, {local, synced, 0}), int64_t(eps));
    EXPECT_EQ(clockbound_bound_ns(s, {local, synced + 700, 20}), int64_t(eps + 700 + 20));
    EXPECT_EQ(clockbound_bound_ns(s, {local, synced - 700, 20}), int64_t(eps + 700 + 20));
    // A master that does not count Unix time: CLOCK_REALTIME 2^63 ns away, saturated at 2^62.
    EXPECT_EQ(clockbound_bound_ns(s, {local, synced + (uint64_t(1) << 63), 0}), int64_t(1) << 62);
}

TEST(ClockBound, PayloadVoidsMaxAgeAfterAsOf) {
    const SyncState s = a_sync(0, 100, 200, 40, 0);
    const CbReadings r{{10, 999'000'000}, {300, 310, 5}};
    const ClockErrorBound e =
        make_clock_error_bound(s, r, ClockBoundStatus::synchronized, 2'500'000'000, 7000);
    EXPECT_EQ(e.as_of.sec, 10);
    EXPECT_EQ(e.as_of.nsec, 999'000'000);
    EXPECT_EQ(e.void_after.sec, 13);
    EXPECT_EQ(e.void_after.nsec, 499'000'000);
    EXPECT_EQ(e.bound_ns, 40 + 10 + 5);
    EXPECT_EQ(e.max_drift_ppb, 7000u);
    EXPECT_EQ(e.clock_status, 1);
    const ClockErrorBound u = make_clock_error_bound(s, r, ClockBoundStatus::unknown, 0, 7000);
    EXPECT_EQ(u.bound_ns, 0);
    EXPECT_EQ(u.clock_status, 0);
}

// On the real clocks: Unknown until the first sync, Synchronized after it, FreeRunning once it
// is older than the max age, Unknown (void_after = as_of) once stopped; nothing after that.
TEST(ClockBound, WriterGoesUnknownSynchronizedFreeRunningUnknown) {
    const std::string path = scratch("life");
    const uint64_t max_age = 20'000'000;  // 20 ms
    ClockBoundWriter w(path, max_age, 10'000);
    auto status = [&] { return at<int32_t>(file_bytes(path), 68); };
    EXPECT_EQ(status(), 0);
    const LocalClock local;
    w.poll(local.now(), local);  // nothing to say before a sync
    EXPECT_EQ(w.writes(), 1u);

    const uint64_t now = local.now();
    w.publish(a_sync(0, now - 1000, now, 500, 10'000), local);
    EXPECT_EQ(status(), 1);
    EXPECT_EQ(w.status(), ClockBoundStatus::synchronized);
    const std::string b = file_bytes(path);
    EXPECT_GE(at<int64_t>(b, 48), 500);       // ε0 at least (+ CLOCK_REALTIME's distance)
    EXPECT_EQ(at<uint32_t>(b, 64), 10'000u);  // max drift: ρ in ppb
    const int64_t void_ns = (at<int64_t>(b, 32) - at<int64_t>(b, 16)) * 1'000'000'000 +
                            (at<int64_t>(b, 40) - at<int64_t>(b, 24));
    EXPECT_EQ(void_ns, int64_t(max_age));
    w.poll(now, local);  // the sync's own instant: same status, nothing to refresh
    EXPECT_EQ(w.writes(), 2u);

    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    w.poll(local.now(), local);
    EXPECT_EQ(status(), 2);
    EXPECT_EQ(w.writes(), 3u);

    w.stop();
    const std::string stopped = file_bytes(path);
    EXPECT_EQ(at<int32_t>(stopped, 68), 0);
    EXPECT_EQ(at<int64_t>(stopped, 32), at<int64_t>(stopped, 16));  // void_after = as_of
    w.poll(local.now() + 10 * max_age, local);
    w.publish(a_sync(0, now, now, 1, 0), local);
    EXPECT_EQ(w.writes(), 4u);
}

TEST(ClockBound, RefreshesWithinTheReadersGraceWithoutSyncs) {
    EXPECT_EQ(ClockBoundWriter(scratch("r1"), 600'000'000'000, 0).refresh_ns(),
              kClockBoundMaxRefreshNs);
    EXPECT_EQ(ClockBoundWriter(scratch("r2"), 100'000'000, 0).refresh_ns(), 50'000'000u);
    EXPECT_LT(kClockBoundMaxRefreshNs, kClockBoundReaderGraceNs);
}

TEST(ClockBound, RefusesOtherFilesAndASecondWriterTakesOverAStoppedOne) {
    const std::string other = scratch("notes.txt");
    std::ofstream(other) << "not a segment\n";
    EXPECT_THROW(ClockBoundWriter(other, 1'000'000, 0), std::runtime_error);
    EXPECT_EQ(file_bytes(other), "not a segment\n");  // left as it was

    const std::string path = scratch("shared");
    {
        ClockBoundWriter first(path, 1'000'000, 0);
        try {
            ClockBoundWriter second(path, 1'000'000, 0);
            ADD_FAILURE() << "a second writer on a live segment";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("another running"), std::string::npos) << e.what();
        }
    }
    const uint16_t left = at<uint16_t>(file_bytes(path), 14);
    ClockBoundWriter again(path, 1'000'000, 0);  // the first one stopped: taken over
    EXPECT_EQ(at<uint16_t>(file_bytes(path), 14), left + 2);
    EXPECT_THROW(ClockBoundWriter(scratch("dir/") + "/", 1'000'000, 0), std::runtime_error);
}
