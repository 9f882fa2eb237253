// The exported time page: TimeExport (the client's writer) against the C reader
// include/linerate/truetime.h, in one process. Plain threads, no fork and no EAL, so the whole
// binary runs under ThreadSanitizer (build with -fsanitize=thread and run unit_truetime).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "clocksync/estimator.hpp"
#include "clocksync/sim_clock.hpp"
#include "clocksync/sync_fixture.hpp"
#include "clocksync/time_export.hpp"
#include "linerate/truetime.h"

using namespace linerate::clocksync;

namespace {

std::string page_name(const char* what) {
    static std::atomic<int> n{0};
    return "lrtt_test_" + std::to_string(getpid()) + "_" + what + "_" + std::to_string(n++);
}

// Removes the page at the end of a test.
struct PageName {
    std::string name;
    explicit PageName(const char* what) : name(page_name(what)) {}
    ~PageName() { shm_unlink(("/" + name).c_str()); }
};

// Every field of a test mapping derived from one counter, so a mix of two versions shows even
// if its checksum happened to match.
SyncState sync_of(uint64_t k) {
    return a_sync(-int64_t(k), 1'000'000 + k, 1'000'000 + 2 * k, 100 + k, 10'000);
}
bool consistent(const tt_mapping& m) {
    const uint64_t k = m.syncs;
    return m.valid == 1 && m.theta_ns == -int64_t(k) && m.t1_ns == 1'000'000 + k &&
           m.t4_ns == 1'000'000 + 2 * k && m.eps0_ns == 100 + k && m.written_ns == 7 * k;
}

}  // namespace

TEST(TimePage, ReadsTheClientsOwnClockAndBound) {
    PageName page("read");
    // Verification mode: the local clock is the raw clock 5 ms off and 8 ppm fast.
    const SimClock sim = SimClock::from_ppm(5'000'000, 8, 123'456'789);
    TimeExport exporter(page.name, 500'000'000, sim);
    tt_clock clk{};
    ASSERT_EQ(tt_open(&clk, page.name.c_str()), TT_OK);
    tt_reading r{};
    EXPECT_EQ(tt_read_at(&clk, 1'000'000'000, &r), TT_EINVALID);  // not synced yet

    const uint64_t raw_sync = 2'000'000'000;
    const uint64_t t4 = sim.local(raw_sync);
    const SyncState s = a_sync(-5'000'016, t4 - 4000, t4, 2003, 10'000);
    exporter.publish(s, 3, t4);
    EXPECT_TRUE(exporter.valid());
    for (uint64_t after : {uint64_t(0), uint64_t(1'000), uint64_t(250'000'000)}) {
        const uint64_t raw = raw_sync + after;
        ASSERT_EQ(tt_read_at(&clk, raw, &r), TT_OK) << after;
        const uint64_t local = sim.local(raw);
        EXPECT_EQ(r.local_ns, local);
        EXPECT_EQ(r.master_ns, s.to_master(local));
        EXPECT_EQ(r.epsilon_ns, s.epsilon_at(local));  // the client's ε, exactly
        EXPECT_EQ(r.earliest_ns, r.master_ns - r.epsilon_ns);
        EXPECT_EQ(r.latest_ns, r.master_ns + r.epsilon_ns);
        EXPECT_EQ(r.syncs, 3u);
        EXPECT_EQ(r.age_ns, local - t4);
    }
    // 250 ms raw = 250'002'000 ns local; span 4000 + that; ε = 2003 + ceil(span · 1e4 / (1e9 −
    // 1e4)).
    EXPECT_EQ(r.epsilon_ns, 2003u + 2501u);
    // Past t4 + max age (local clock) the reader refuses by itself, whatever the flag says.
    const uint64_t raw_stale = raw_sync + 500'000'000 + 1'000;
    EXPECT_EQ(tt_read_at(&clk, raw_stale, &r), TT_ESTALE);
    // The writer's own check clears the flag.
    exporter.expire(sim.local(raw_sync + 400'000'000));
    EXPECT_TRUE(exporter.valid());
    exporter.expire(sim.local(raw_stale));
    EXPECT_FALSE(exporter.valid());
    EXPECT_EQ(tt_read_at(&clk, raw_sync, &r), TT_EINVALID);
    // A new sync makes it valid again; stopping invalidates it.
    exporter.publish(s, 4, t4);
    EXPECT_EQ(tt_read_at(&clk, raw_sync, &r), TT_OK);
    exporter.invalidate(t4);
    EXPECT_EQ(tt_read_at(&clk, raw_sync, &r), TT_EINVALID);
    tt_close(&clk);
}

TEST(TimePage, TtNowUsesTheRawClockAndTheNamedPage) {
    PageName page("now");
    TimeExport exporter(page.name, 1'000'000'000, std::nullopt);
    const uint64_t t4 = tt_raw_ns();
    exporter.publish(a_sync(777, t4 - 1000, t4, 503, 10'000), 1, t4);
    setenv("LINERATE_TT", page.name.c_str(), 1);
    uint64_t earliest = 0, latest = 0;
    const uint64_t before = tt_raw_ns();
    ASSERT_EQ(tt_now(&earliest, &latest), TT_OK);
    const uint64_t after = tt_raw_ns();
    // The client's clock is the raw clock + 777 ns, within ε of 503 ns and a little drift.
    EXPECT_LE(earliest, after + 777 - 503);
    EXPECT_GE(latest, before + 777 + 503);
    EXPECT_LT(latest - earliest, 2 * (503 + 10'000u));  // ε after < 1 s at 10 ppm
    unsetenv("LINERATE_TT");
}

TEST(TimePage, ErrorsForMissingForeignDamagedAndAbandonedPages) {
    tt_clock clk{};
    EXPECT_EQ(tt_open(&clk, "lrtt_test_no_such_page"), TT_ENOPAGE);
    EXPECT_EQ(clk.page, nullptr);

    PageName foreign("foreign");  // an object of the right size that is not a time page
    {
        const int fd = shm_open(("/" + foreign.name).c_str(), O_RDWR | O_CREAT, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(ftruncate(fd, sizeof(tt_page)), 0);
        close(fd);
    }
    EXPECT_EQ(tt_open(&clk, foreign.name.c_str()), TT_ELAYOUT);
    EXPECT_THROW(TimeExport(foreign.name, 1'000'000, std::nullopt), std::runtime_error);

    PageName page("damaged");
    TimeExport exporter(page.name, 1'000'000'000, std::nullopt);
    exporter.publish(a_sync(0, 10, 20, 100, 0), 1, 20);
    ASSERT_EQ(tt_open(&clk, ("/" + page.name).c_str()), TT_OK);  // with or without the '/'
    tt_reading r{};
    ASSERT_EQ(tt_read_at(&clk, 20, &r), TT_OK);
    // Writable mapping of the same page: damage a word, then leave a write half done.
    const int fd = shm_open(("/" + page.name).c_str(), O_RDWR, 0);
    ASSERT_GE(fd, 0);
    auto* raw = static_cast<tt_page*>(
        mmap(nullptr, sizeof(tt_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    close(fd);
    ASSERT_NE(raw, MAP_FAILED);
    raw->data.m.theta_ns ^= 1;
    EXPECT_EQ(tt_read_at(&clk, 20, &r), TT_ECORRUPT);
    raw->data.m.theta_ns ^= 1;
    EXPECT_EQ(tt_read_at(&clk, 20, &r), TT_OK);
    raw->seq |= 1;  // a writer that died mid-write
    EXPECT_EQ(tt_read_at(&clk, 20, &r), TT_EBUSY);
    munmap(raw, sizeof(tt_page));
    tt_close(&clk);

    // A new client takes the abandoned page over: readers that kept it mapped read on.
    ASSERT_EQ(tt_open(&clk, page.name.c_str()), TT_OK);
    TimeExport successor(page.name, 1'000'000'000, std::nullopt);
    EXPECT_EQ(tt_read_at(&clk, 20, &r), TT_EINVALID);
    successor.publish(a_sync(5, 10, 20, 100, 0), 9, 20);
    ASSERT_EQ(tt_read_at(&clk, 20, &r), TT_OK);
    EXPECT_EQ(r.master_ns, 25u);
    EXPECT_EQ(r.syncs, 9u);
    tt_close(&clk);

    // The name of a running client (here: our parent process, alive) is refused.
    const int wfd = shm_open(("/" + page.name).c_str(), O_RDWR, 0);
    ASSERT_GE(wfd, 0);
    auto* w = static_cast<tt_page*>(
        mmap(nullptr, sizeof(tt_page), PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0));
    close(wfd);
    ASSERT_NE(w, MAP_FAILED);
    w->writer_pid = uint32_t(getppid());
    try {
        TimeExport third(page.name, 1'000'000'000, std::nullopt);
        ADD_FAILURE() << "took over the page of a running client";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("running client"), std::string::npos) << e.what();
    }
    w->writer_pid = uint32_t(getpid());
    munmap(w, sizeof(tt_page));
}

// A reader hammering the page while the writer updates it at 1 kHz, then as fast as it can:
// every read is one version (checksum and field relations), versions never go backwards.
TEST(TimePage, ReadersNeverSeeAMixOfTwoVersions) {
    PageName page("torn");
    TimeExport exporter(page.name, ~uint64_t(0) >> 1, std::nullopt);
    exporter.publish(sync_of(1), 1, 7);
    tt_clock clk{};
    ASSERT_EQ(tt_open(&clk, page.name.c_str()), TT_OK);
    std::atomic<bool> done{false};
    std::atomic<uint64_t> reads{0}, mixed{0}, corrupt{0}, busy{0}, backwards{0};
    std::thread reader([&] {
        uint64_t last = 0;
        while (!done.load(std::memory_order_relaxed)) {
            tt_mapping m{};
            const int rc = tt_load_mapping(clk.page, &m);
            if (rc == TT_ECORRUPT) corrupt.fetch_add(1, std::memory_order_relaxed);
            if (rc == TT_EBUSY) busy.fetch_add(1, std::memory_order_relaxed);
            if (rc != TT_OK) continue;
            if (!consistent(m)) mixed.fetch_add(1, std::memory_order_relaxed);
            if (m.syncs < last) backwards.fetch_add(1, std::memory_order_relaxed);
            last = m.syncs;
            reads.fetch_add(1, std::memory_order_relaxed);
        }
    });
    uint64_t k = 2;
    const auto start = std::chrono::steady_clock::now();
    for (auto next = start; std::chrono::steady_clock::now() - start < std::chrono::seconds(1);
         ++k) {  // 1 kHz, as the client at its fastest sync period
        next += std::chrono::milliseconds(1);
        std::this_thread::sleep_until(next);
        exporter.publish(sync_of(k), k, 7 * k);
    }
    const uint64_t paced_reads = reads.load();
    for (const uint64_t end = k + 300'000; k < end || reads.load() < paced_reads + 100'000; ++k)
        exporter.publish(sync_of(k), k, 7 * k);  // flat out
    done = true;
    reader.join();
    std::printf("reads %lu (%lu during the 1 kHz phase), writes %lu\n", (unsigned long)reads.load(),
                (unsigned long)paced_reads, (unsigned long)k);
    EXPECT_GT(paced_reads, 1000u);
    EXPECT_EQ(mixed.load(), 0u);
    EXPECT_EQ(corrupt.load(), 0u);
    // TT_EBUSY is no mix: a write the writer thread was descheduled in for 10 ms (a loaded
    // machine, or ThreadSanitizer's slowness); reported, not a failure.
    if (busy.load()) std::printf("busy (a write stalled 10 ms): %lu\n", (unsigned long)busy.load());
    EXPECT_EQ(backwards.load(), 0u);
    tt_close(&clk);
}

// The control: the same words copied without the seqlock's check do tear, and the checksum
// catches it; so the test above could fail.
TEST(TimePage, ChecksumCatchesAReadThatIgnoresTheSeqlock) {
    PageName page("control");
    TimeExport exporter(page.name, ~uint64_t(0) >> 1, std::nullopt);
    exporter.publish(sync_of(1), 1, 7);
    const tt_page* p = exporter.page();
    std::atomic<bool> done{false};
    std::atomic<uint64_t> caught{0}, missed{0};
    std::thread reader([&] {
        while (!done.load(std::memory_order_relaxed) && caught.load() < 100) {
            uint64_t w[TT_MAPPING_WORDS];
            for (unsigned i = 0; i < TT_MAPPING_WORDS; ++i)
                w[i] = __atomic_load_n(&p->data.words[i], __ATOMIC_RELAXED);
            tt_mapping m;
            std::memcpy(&m, w, sizeof(m));
            const bool torn = !consistent(m);
            if (torn && tt_checksum(w) != w[TT_MAPPING_WORDS - 1]) caught.fetch_add(1);
            if (torn && tt_checksum(w) == w[TT_MAPPING_WORDS - 1]) missed.fetch_add(1);
        }
    });
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t k = 2; caught.load(std::memory_order_relaxed) < 100 &&
                         std::chrono::steady_clock::now() - start < std::chrono::seconds(20);
         ++k)
        exporter.publish(sync_of(k), k, 7 * k);
    done = true;
    reader.join();
    EXPECT_GT(caught.load(), 0u) << "no torn copy in 20 s (a single core?)";
    EXPECT_EQ(missed.load(), 0u);
}

TEST(TimePage, ChronyPrecisionIsLog2OfEpsilonRoundedUp) {
    EXPECT_EQ(precision_log2(0), -30);
    EXPECT_EQ(precision_log2(1), -29);     // 2^-30 s is 0.93 ns
    EXPECT_EQ(precision_log2(1000), -19);  // 2^-20 s = 954 ns < 1 µs <= 2^-19 s
    EXPECT_EQ(precision_log2(953), -20);
    EXPECT_EQ(precision_log2(~0ull), 0);
}
