// The polling threads' quiescent-state handshake (lib/worker/quiescence.hpp), without the EAL: a
// wait ends only after every registered poller reported once more, a thread that is not a poller
// (or no longer one) is not waited for, and the executable's munmap is the one a dlopen()ed PMD
// binds to.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "worker/quiescence.hpp"

using namespace linerate::worker;

namespace {

// A poller that stays inside its "burst" until let go, then reports and goes on polling until
// told to stop; as the runtime's workers do, it is registered for as long as it runs.
struct Poller {
    std::atomic<bool> inside{false}, let_go{false}, done{false};
    std::thread thread;

    explicit Poller(unsigned id) {
        thread = std::thread([this, id] {
            PollingThread registration(id);
            inside = true;
            while (!let_go) std::this_thread::yield();  // a burst that takes its time
            while (!done) {
                report_quiescent();
                std::this_thread::yield();
            }
        });
        while (!inside) std::this_thread::yield();
    }
    ~Poller() {
        let_go = true;
        done = true;
        thread.join();
    }
};

}  // namespace

TEST(Quiescence, WaitEndsOnlyAfterThePollerLeftItsBurst) {
    Poller poller(3);
    std::atomic<bool> waited{false};
    std::thread unmapper([&] {
        wait_for_pollers();
        waited = true;
    });
    // Not a timing assertion: while the poller is inside, the wait cannot end at all.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(waited);
    EXPECT_TRUE(poller.inside);
    poller.let_go = true;
    unmapper.join();
    EXPECT_TRUE(waited);
}

TEST(Quiescence, NoPollerOrAGoneOneIsNotWaitedFor) {
    wait_for_pollers();  // nobody registered
    { Poller gone(5); }  // registered, then unregistered when its thread ended
    wait_for_pollers();
    SUCCEED();
}

TEST(Quiescence, APollerDoesNotWaitForItselfAndNestingKeepsItsId) {
    std::thread t([] {
        PollingThread outer(7);
        PollingThread nested(kMainPoller);  // changes nothing: the thread already polls
        EXPECT_TRUE(keep_polling());
        wait_for_pollers();  // returns: it would otherwise wait for its own report
    });
    t.join();
}

TEST(Quiescence, TheExecutablesMunmapIsTheExportedOne) {
    // What a PMD loaded with dlopen() binds to when it calls munmap().
    void* bound = dlsym(RTLD_DEFAULT, "munmap");
    EXPECT_EQ(bound, reinterpret_cast<void*>(&munmap));
    EXPECT_NE(bound, dlsym(RTLD_NEXT, "munmap"));
    void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(page, MAP_FAILED);
    EXPECT_EQ(munmap(page, 4096), 0);  // off the EAL interrupt thread: straight through
}
