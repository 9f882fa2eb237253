/* tt_probe: a reader process for the integration tests and the benchmark, written in C to hold
 * linerate/truetime.h to its promise (C, no DPDK). Reads the page named by $LINERATE_TT.
 *
 *   tt_probe CALLS RUN_MS WAIT_MS
 *
 * Waits up to WAIT_MS for a valid page, then calls tt_now CALLS times spread over RUN_MS (a batch
 * every ms), each between two CLOCK_MONOTONIC_RAW readings: on the master's clock (the raw
 * clock, verification mode) the true time of the call lies between them. Then polls every 100 us
 * until the page is refused (at most WAIT_MS) and prints one JSON object. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "linerate/truetime.h"

static int cmp_u64(const void* a, const void* b) {
    const uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? -1 : x > y;
}

static void sleep_until(uint64_t raw_ns) {
    const uint64_t now = tt_raw_ns();
    struct timespec ts;
    if (raw_ns <= now) return;
    ts.tv_sec = (time_t)((raw_ns - now) / 1000000000u);
    ts.tv_nsec = (long)((raw_ns - now) % 1000000000u);
    nanosleep(&ts, NULL);
}

int main(int argc, char** argv) {
    uint64_t calls, run_ns, wait_ns, start, done = 0, ok = 0, outside = 0, not_surely_inside = 0;
    uint64_t max_bracket = 0, last_ok_raw = 0, first_bad_raw = 0, refused_during_run = 0;
    uint64_t batch, batches, *eps;
    int first_bad_rc = 0, rc = TT_ENOPAGE;
    uint64_t earliest, latest;
    struct tt_reading last = {0, 0, 0, 0, 0, 0, 0};
    if (argc != 4) {
        fprintf(stderr, "usage: tt_probe CALLS RUN_MS WAIT_MS\n");
        return 2;
    }
    calls = strtoull(argv[1], NULL, 10);
    run_ns = strtoull(argv[2], NULL, 10) * 1000000u;
    wait_ns = strtoull(argv[3], NULL, 10) * 1000000u;
    eps = calloc(calls ? calls : 1, sizeof(uint64_t));
    if (!calls || !eps) return 2;

    for (start = tt_raw_ns(); tt_raw_ns() - start < wait_ns; sleep_until(tt_raw_ns() + 1000000))
        if ((rc = tt_now(&earliest, &latest)) == TT_OK) break;
    if (rc != TT_OK) {
        printf("{\"error\": \"%s\"}\n", tt_strerror(rc));
        return 1;
    }

    batches = run_ns / 1000000u ? run_ns / 1000000u : 1;
    start = tt_raw_ns();
    for (batch = 0; batch < batches && done < calls; ++batch) {
        const uint64_t end = (batch + 1) * calls / batches;
        sleep_until(start + batch * 1000000u);
        for (; done < end; ++done) {
            const uint64_t before = tt_raw_ns();
            rc = tt_now(&earliest, &latest);
            const uint64_t after = tt_raw_ns();
            if (rc != TT_OK) {
                ++refused_during_run;
                continue;
            }
            if (after - before > max_bracket) max_bracket = after - before;
            /* The true time t is in [before, after]: outside for sure when the interval misses
             * that span entirely; surely inside when it covers all of it. */
            if (earliest > after || latest < before) ++outside;
            if (earliest > before || latest < after) ++not_surely_inside;
            eps[ok++] = (latest - earliest) / 2;
            last_ok_raw = after;
        }
    }

    /* Until refused: the last reading before that is of the client's last sync. */
    for (start = tt_raw_ns(); tt_raw_ns() - start < wait_ns; sleep_until(tt_raw_ns() + 100000)) {
        struct tt_reading r;
        rc = tt_clock_read(tt_default_clock(), &r);
        if (rc != TT_OK) {
            first_bad_raw = tt_raw_ns();
            first_bad_rc = rc;
            break;
        }
        last = r;
        last_ok_raw = tt_raw_ns();
    }

    qsort(eps, ok, sizeof(uint64_t), cmp_u64);
    printf(
        "{\"calls\": %llu, \"ok\": %llu, \"refused_during_run\": %llu, \"outside\": %llu, "
        "\"not_surely_inside\": %llu, \"max_bracket_ns\": %llu, \"epsilon_ns\": {\"min\": %llu, "
        "\"p50\": %llu, \"max\": %llu}, \"last_ok_raw_ns\": %llu, \"first_refused_raw_ns\": "
        "%llu, \"first_refused\": \"%s\", \"last\": {\"syncs\": %llu, \"theta_ns\": %lld, "
        "\"epsilon_ns\": %llu, \"age_ns\": %llu}}\n",
        (unsigned long long)done, (unsigned long long)ok, (unsigned long long)refused_during_run,
        (unsigned long long)outside, (unsigned long long)not_surely_inside,
        (unsigned long long)max_bracket, (unsigned long long)(ok ? eps[0] : 0),
        (unsigned long long)(ok ? eps[ok / 2] : 0), (unsigned long long)(ok ? eps[ok - 1] : 0),
        (unsigned long long)last_ok_raw, (unsigned long long)first_bad_raw,
        first_bad_rc ? tt_strerror(first_bad_rc) : "", (unsigned long long)last.syncs,
        (long long)(int64_t)(last.master_ns - last.local_ns), (unsigned long long)last.epsilon_ns,
        (unsigned long long)last.age_ns);
    free(eps);
    return 0;
}
