/* realtime_shift.so, for LD_PRELOAD in tests: CLOCK_REALTIME read through clock_gettime runs
 * $LINERATE_TEST_REALTIME_SHIFT_NS ahead (negative: behind) of the kernel's; every other clock,
 * and the system call itself, are left alone. A process under it sees a host clock that is off
 * from a master serving the kernel's CLOCK_REALTIME by a known amount. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec*);

int clock_gettime(clockid_t clock, struct timespec* ts) {
    static clock_gettime_fn next;
    static int64_t shift;
    static int ready;
    int rc;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        const char* v = getenv("LINERATE_TEST_REALTIME_SHIFT_NS");
        shift = v ? strtoll(v, NULL, 10) : 0;
        next = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    rc = next(clock, ts);
    if (rc == 0 && clock == CLOCK_REALTIME) {
        int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + shift;
        ts->tv_sec = (time_t)(ns / 1000000000);
        ts->tv_nsec = (long)(ns % 1000000000);
    }
    return rc;
}
