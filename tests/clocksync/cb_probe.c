/* cb_probe: a reader of an AWS ClockBound shared-memory segment (protocol version 2), written in
 * C from ClockBound's docs/PROTOCOL.md alone (no linerate header), to hold clocksync
 * --clockbound to that document:
 *
 *   cb_probe PATH RUN_MS WAIT_MS
 *
 * Waits up to WAIT_MS for the segment to say Synchronized (and says so on stderr: a caller may
 * stop the client from then on), then reads it every ms for RUN_MS,
 * as ClockBound's clients do: the interval is [realtime - B, realtime + B], with CLOCK_REALTIME
 * read through clock_gettime and B = bound + max_drift * (CLOCK_MONOTONIC now - as_of). Each
 * interval is checked against the true time, CLOCK_REALTIME read by the system call on both
 * sides of it (the master of the test serves CLOCK_REALTIME on this host; the system call
 * bypasses any clock_gettime the test interposes). Then reads every 100 us until the segment
 * says Unknown, or void_after has passed (at most WAIT_MS), and prints one JSON object: counts,
 * the statuses read in turn ("transitions"), and when Unknown was first read after a sync
 * (CLOCK_MONOTONIC_RAW ns) with the status written then (0: the client wrote Unknown; 1 or 2:
 * void_after had passed).
 *
 * The generation protocol: a read takes the generation, copies the 64 bytes after the header,
 * and takes the generation again; the copy is used only when both are equal and even (and not
 * 0: never written). Otherwise it retries: an odd generation is never read as valid. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SEGMENT_SIZE 80
#define PAYLOAD_WORDS 8

struct segment { /* native byte order, offsets of PROTOCOL.md */
    uint32_t magic[2];
    uint32_t segment_size;
    uint16_t version;
    uint16_t generation;
    uint64_t payload[PAYLOAD_WORDS];
};

struct bound { /* the payload */
    int64_t as_of_sec, as_of_nsec, void_after_sec, void_after_nsec;
    int64_t bound_ns;
    uint64_t disruption_marker;
    uint32_t max_drift_ppb;
    int32_t clock_status; /* 0 Unknown, 1 Synchronized, 2 FreeRunning, 3 Disrupted */
    uint8_t disruption_support, padding[7];
};

struct stats {
    uint64_t reads, attempts, odd_seen, changed_under_read, max_attempts;
    uint64_t outside, not_surely_inside, by_status[4], bad_status, causality_breaches;
    uint64_t bound_min, bound_max, bound_now_max, max_drift_ppb;
    char transitions[64];
    int last_status, synced_seen;
    int unknown_written; /* the written status when Unknown was first read after a sync */
    int64_t unknown_raw; /* and when, on CLOCK_MONOTONIC_RAW (the test's clock); 0: not yet */
};

static int64_t ns_of(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t true_realtime_ns(void) { /* the kernel's CLOCK_REALTIME, never interposed */
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ns(int64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    nanosleep(&ts, NULL);
}

/* NULL until the file has its full size (the writer creates it, then sizes it). */
static const struct segment* map_segment(const char* path) {
    void* p = MAP_FAILED;
    struct stat st;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NULL;
    if (fstat(fd, &st) == 0 && st.st_size >= SEGMENT_SIZE)
        p = mmap(NULL, SEGMENT_SIZE, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : (const struct segment*)p;
}

/* 1 when the header is a ClockBound v2 segment written at least once. */
static int header_ok(const struct segment* s) {
    return s->magic[0] == 0x414D5A4E && s->magic[1] == 0x43420200 &&
           __atomic_load_n(&s->segment_size, __ATOMIC_RELAXED) >= SEGMENT_SIZE &&
           __atomic_load_n(&s->version, __ATOMIC_ACQUIRE) == 2 &&
           __atomic_load_n(&s->generation, __ATOMIC_ACQUIRE) != 0;
}

/* One consistent copy of the payload, retrying while writes go by (at most 10^6 tries). */
static int read_bound(const struct segment* s, struct bound* out, struct stats* st) {
    uint64_t words[PAYLOAD_WORDS], tries;
    int i;
    for (tries = 1; tries <= 1000000; ++tries) {
        const uint16_t first = __atomic_load_n(&s->generation, __ATOMIC_ACQUIRE);
        ++st->attempts;
        if (first & 1) {
            ++st->odd_seen;
            continue;
        }
        for (i = 0; i < PAYLOAD_WORDS; ++i)
            words[i] = __atomic_load_n(&s->payload[i], __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (first == 0 || __atomic_load_n(&s->generation, __ATOMIC_RELAXED) != first) {
            ++st->changed_under_read;
            continue;
        }
        memcpy(out, words, sizeof(*out));
        if (tries > st->max_attempts) st->max_attempts = tries;
        return 1;
    }
    return 0;
}

/* The status a reader acts on: Unknown once void_after has passed. */
static int effective_status(const struct bound* b, int64_t mono_ns) {
    const int64_t void_after = b->void_after_sec * 1000000000 + b->void_after_nsec;
    return mono_ns >= void_after ? 0 : b->clock_status;
}

static void note_status(struct stats* st, int status) {
    size_t n = strlen(st->transitions);
    if (status == st->last_status || n + 3 > sizeof(st->transitions)) return;
    snprintf(st->transitions + n, sizeof(st->transitions) - n, "%s%d", n ? "," : "", status);
    st->last_status = status;
}

/* One reading as a ClockBound client makes it, checked against the true time. */
static int probe_once(const struct segment* s, struct stats* st) {
    struct bound b;
    int64_t before, real, mono, after, as_of, elapsed, bound_now;
    int status;
    if (!read_bound(s, &b, st)) return -1;
    before = true_realtime_ns();
    real = ns_of(CLOCK_REALTIME);
    mono = ns_of(CLOCK_MONOTONIC);
    after = true_realtime_ns();
    ++st->reads;
    as_of = b.as_of_sec * 1000000000 + b.as_of_nsec;
    elapsed = mono - as_of;
    if (elapsed < 0) ++st->causality_breaches;
    if (elapsed < 0) elapsed = 0;
    bound_now = b.bound_ns + (elapsed / 1000000000) * (int64_t)b.max_drift_ppb +
                (elapsed % 1000000000) * (int64_t)b.max_drift_ppb / 1000000000;
    status = effective_status(&b, mono);
    if (status < 0 || status > 3) {
        ++st->bad_status;
        return status;
    }
    ++st->by_status[status];
    note_status(st, status);
    if (status != 0) st->synced_seen = 1;
    if (status == 0 && st->synced_seen && !st->unknown_raw) {
        st->unknown_raw = ns_of(CLOCK_MONOTONIC_RAW);
        st->unknown_written = b.clock_status;
    }
    st->max_drift_ppb = b.max_drift_ppb;
    if (status == 1 || status == 2) {
        if (real - bound_now > after || real + bound_now < before) ++st->outside;
        if (real - bound_now > before || real + bound_now < after) ++st->not_surely_inside;
        if (!st->bound_min || (uint64_t)b.bound_ns < st->bound_min) st->bound_min = b.bound_ns;
        if ((uint64_t)b.bound_ns > st->bound_max) st->bound_max = b.bound_ns;
        if ((uint64_t)bound_now > st->bound_now_max) st->bound_now_max = bound_now;
    }
    return status;
}

static void print_json(const struct segment* s, const struct stats* st, int64_t waited_ns) {
    printf(
        "{\"version\": %u, \"segment_size\": %u, \"waited_ms\": %.1f, \"reads\": %llu, "
        "\"attempts\": %llu, \"odd_seen\": %llu, \"changed_under_read\": %llu, "
        "\"max_attempts\": %llu, \"outside\": %llu, \"not_surely_inside\": %llu, "
        "\"unknown\": %llu, \"synchronized\": %llu, \"free_running\": %llu, \"disrupted\": %llu, "
        "\"bad_status\": %llu, \"causality_breaches\": %llu, \"bound_ns\": {\"min\": %llu, "
        "\"max\": %llu, \"now_max\": %llu}, \"max_drift_ppb\": %llu, \"transitions\": \"%s\", "
        "\"unknown_written_status\": %d, \"unknown_raw_ns\": %lld}\n",
        s->version, s->segment_size, waited_ns / 1e6, (unsigned long long)st->reads,
        (unsigned long long)st->attempts, (unsigned long long)st->odd_seen,
        (unsigned long long)st->changed_under_read, (unsigned long long)st->max_attempts,
        (unsigned long long)st->outside, (unsigned long long)st->not_surely_inside,
        (unsigned long long)st->by_status[0], (unsigned long long)st->by_status[1],
        (unsigned long long)st->by_status[2], (unsigned long long)st->by_status[3],
        (unsigned long long)st->bad_status, (unsigned long long)st->causality_breaches,
        (unsigned long long)st->bound_min, (unsigned long long)st->bound_max,
        (unsigned long long)st->bound_now_max, (unsigned long long)st->max_drift_ppb,
        st->transitions, st->unknown_written, (long long)st->unknown_raw);
}

int main(int argc, char** argv) {
    const struct segment* s = NULL;
    struct stats st;
    int64_t run_ns, wait_ns, waited, start, next, now;
    int status = -1;
    if (argc != 4) {
        fprintf(stderr, "usage: cb_probe PATH RUN_MS WAIT_MS\n");
        return 2;
    }
    memset(&st, 0, sizeof(st));
    st.last_status = -1;
    st.unknown_written = -1;
    run_ns = strtoll(argv[2], NULL, 10) * 1000000;
    wait_ns = strtoll(argv[3], NULL, 10) * 1000000;
    for (start = ns_of(CLOCK_MONOTONIC_RAW); ns_of(CLOCK_MONOTONIC_RAW) - start < wait_ns;
         sleep_ns(1000000)) {
        if (!s) s = map_segment(argv[1]);
        if (s && header_ok(s) && (status = probe_once(s, &st)) == 1) break;
    }
    if (status != 1) {
        printf("{\"error\": \"no Synchronized segment at %s within %s ms\"}\n", argv[1], argv[3]);
        return 1;
    }
    fprintf(stderr, "cb_probe: Synchronized\n");
    next = ns_of(CLOCK_MONOTONIC_RAW);
    waited = next - start;
    /* The run, every ms; then every 100 us until Unknown (the client stopped or was killed). */
    for (start = next; (next += 1000000) - start < run_ns && !st.unknown_raw;) {
        probe_once(s, &st);
        if ((now = ns_of(CLOCK_MONOTONIC_RAW)) < next) sleep_ns(next - now);
    }
    for (start = ns_of(CLOCK_MONOTONIC_RAW); !st.unknown_raw; sleep_ns(100000)) {
        if (ns_of(CLOCK_MONOTONIC_RAW) - start > wait_ns) break;
        probe_once(s, &st);
    }
    print_json(s, &st, waited);
    return 0;
}
