/* linerate/truetime.h: the synchronized time of a clocksync client, for any program on the host.
 *
 * A clocksync client started with `--export NAME` publishes its synchronized clock in the POSIX
 * shared-memory object /NAME. This header reads it and answers "now" as an interval that
 * contains the master's time. C99 with _POSIX_C_SOURCE 200809L (or gnu99) or C++, GCC or Clang,
 * no DPDK; -lrt on glibc before 2.34.
 *
 *   uint64_t earliest, latest;
 *   int rc = tt_now(&earliest, &latest);  // the page named by $LINERATE_TT, default "linerate"
 *   if (rc != TT_OK) fprintf(stderr, "no time: %s\n", tt_strerror(rc));
 *
 * or with an explicit page:
 *
 *   struct tt_clock clk;
 *   if (tt_open(&clk, "cs0") == TT_OK) { tt_clock_now(&clk, &earliest, &latest); tt_close(&clk); }
 *
 * Times are the master's clock in ns (CLOCK_MONOTONIC_RAW of the master host, or its NIC clock
 * with --timestamps hw). The page holds the client's last good sync: offset theta, the local
 * clock it applies to, the sync's probe times t1/t4 (t1 = t4 = the instant its bound holds at,
 * for the default estimator's intersected syncs), eps0 and the drift bound rho; the bound now
 * is eps(t) = eps0 + rho * (t - t1), the formula of the client itself (its code calls the
 * functions below). The page is refused (an error, never an interval) when the client has
 * stopped, has not synced, or its last good sync is older than its max age.
 *
 * Page protocol: a single-writer seqlock. `seq` is odd while a write is under way; a reader
 * copies the words between two equal even readings of seq, then checks the checksum word.
 */
#ifndef LINERATE_TRUETIME_H
#define LINERATE_TRUETIME_H

#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TT_PAGE_MAGIC 0x454d495454524c4cULL /* "LLRTTIME" */
#define TT_PAGE_LAYOUT 1u
#define TT_MAPPING_WORDS 13u
#define TT_DEFAULT_NAME "linerate"
#define TT_NAME_MAX 200u
#define TT_STUCK_NS 10000000u /* one write under way this long: TT_EBUSY (a write takes ~20 ns) */
#define TT_FLAG_SIMULATED 1u  /* verification mode: the local clock is simulated */

enum {
    TT_OK = 0,
    TT_ENOPAGE = -1,  /* no such shared-memory object (no client exports this name) */
    TT_ELAYOUT = -2,  /* not a page of this layout or clock */
    TT_EBUSY = -3,    /* a write stayed under way (the writer died during it) */
    TT_ECORRUPT = -4, /* checksum mismatch: the page was not written by a clocksync client */
    TT_EINVALID = -5, /* the client has stopped, has not synced yet, or flagged itself stale */
    TT_ESTALE = -6    /* the last good sync is older than the page's max age */
};

/* The seqlock-protected mapping; every field 8 bytes, so the words can be copied one by one. */
struct tt_mapping {
    uint64_t valid;        /* 1 while the client runs and its last good sync is recent */
    int64_t theta_ns;      /* master - local */
    uint64_t eps0_ns;      /* bound right after the sync: ceil(delta/2) + slack */
    uint64_t rho_ppb;      /* drift bound, ppb */
    uint64_t t1_ns;        /* local clock: transmit time of the sync's probe (or t4_ns) */
    uint64_t t4_ns;        /* local clock: its receive time (intersected: the round's last) */
    uint64_t max_age_ns;   /* refused once the local clock passes t4 + max_age */
    int64_t sim_offset_ns; /* local = sim(CLOCK_MONOTONIC_RAW); 0, 0: the raw clock itself */
    int64_t sim_drift_ppb;
    uint64_t sim_epoch_ns;
    uint64_t syncs;      /* good syncs so far */
    uint64_t written_ns; /* local clock when this version was written */
    uint64_t checksum;   /* tt_checksum() of the words before it */
};

struct tt_page {
    uint64_t magic;    /* TT_PAGE_MAGIC */
    uint32_t layout;   /* TT_PAGE_LAYOUT */
    uint32_t clock_id; /* the raw clock the local clock derives from: CLOCK_MONOTONIC_RAW */
    uint32_t flags;    /* TT_FLAG_* */
    uint32_t writer_pid;
    uint64_t reserved[5];
    uint64_t seq; /* offset 64: odd while a write is under way; + 2 per write */
    union {
        struct tt_mapping m;
        uint64_t words[TT_MAPPING_WORDS];
    } data;
};

/* A reading: earliest <= master's time <= latest (u64 ns counters, wrap-safe like the client's). */
struct tt_reading {
    uint64_t earliest_ns, latest_ns;
    uint64_t master_ns;  /* the synchronized clock: local + theta */
    uint64_t epsilon_ns; /* (latest - earliest) / 2 */
    uint64_t local_ns;   /* the client's local clock at the reading */
    uint64_t age_ns;     /* local time since the sync's probe came back (t4) */
    uint64_t syncs;
};

struct tt_clock {
    const struct tt_page* page; /* NULL when not open */
};

__extension__ typedef unsigned __int128 tt_u128;
__extension__ typedef __int128 tt_i128;

/* -- The clock arithmetic, shared with the clocksync client (one implementation) -- */

/* The most the offset can move while the local clock advances span_ns at drift bound rho:
 * ceil(span * rho / (1 - rho)), saturating (a clock rho slow moves rho/(1 - rho) per local s). */
static inline uint64_t tt_drift_ns(uint64_t rho_ppb, uint64_t span_ns) {
    const uint64_t billion = 1000000000u;
    uint64_t product;
    if (rho_ppb >= billion) return UINT64_MAX; /* no bound at all */
    const uint64_t den = billion - rho_ppb;
    if (!__builtin_mul_overflow(rho_ppb, span_ns, &product) && product <= UINT64_MAX - den)
        return (product + den - 1) / den; /* 64-bit division: the common case */
    tt_u128 ns = ((tt_u128)rho_ppb * span_ns + den - 1) / den;
    return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/* eps(t) = eps0 + rho * (t - t1) for t >= t4; before t4 the offset at t4 anchors the bound, so
 * the drift span is (t4 - t1) + |t - t4|. Saturates at UINT64_MAX. */
static inline uint64_t tt_epsilon_ns(uint64_t eps0_ns, uint64_t rho_ppb, uint64_t t1_ns,
                                     uint64_t t4_ns, uint64_t local_ns) {
    const int64_t since = (int64_t)(local_ns - t4_ns);
    const uint64_t dist = since >= 0 ? (uint64_t)since : (uint64_t)0 - (uint64_t)since;
    const uint64_t span = (uint64_t)(int64_t)(t4_ns - t1_ns) + dist;
    const uint64_t drift = tt_drift_ns(rho_ppb, span);
    return eps0_ns > UINT64_MAX - drift ? UINT64_MAX : eps0_ns + drift;
}

/* Verification mode's simulated local clock at raw reading `raw`:
 * raw + offset + floor((raw - epoch) * drift_ppb / 1e9), mod 2^64. */
static inline uint64_t tt_sim_local(uint64_t raw_ns, int64_t offset_ns, int64_t drift_ppb,
                                    uint64_t epoch_ns) {
    const int64_t s = (int64_t)(raw_ns - epoch_ns);
    const tt_i128 product = (tt_i128)s * drift_ppb;
    tt_i128 q = product / 1000000000;
    if (product % 1000000000 != 0 && product < 0) q -= 1;
    return raw_ns + (uint64_t)offset_ns + (uint64_t)(int64_t)q;
}

/* The checksum word of a mapping: a mix of the words before it. */
static inline uint64_t tt_checksum(const uint64_t* words) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    unsigned i;
    for (i = 0; i + 1 < TT_MAPPING_WORDS; ++i) {
        h ^= words[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    return h;
}

/* -- Reading a page -- */

static inline uint64_t tt_raw_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline const char* tt_strerror(int rc) {
    switch (rc) {
        case TT_OK:
            return "ok";
        case TT_ENOPAGE:
            return "no such time page (is a clocksync client running with --export?)";
        case TT_ELAYOUT:
            return "not a linerate time page of this layout";
        case TT_EBUSY:
            return "the page stayed mid-write (its writer died)";
        case TT_ECORRUPT:
            return "checksum mismatch on the time page";
        case TT_EINVALID:
            return "the client has stopped or is not synchronized";
        case TT_ESTALE:
            return "the last good sync is older than the page's max age";
        default:
            return "unknown error";
    }
}

/* Maps the page /NAME (a leading '/' is added when missing) read-only. */
static inline int tt_open(struct tt_clock* clk, const char* name) {
    char path[TT_NAME_MAX + 2];
    struct stat st;
    size_t len = strlen(name);
    int fd;
    void* p;
    clk->page = NULL;
    if (len == 0 || len > TT_NAME_MAX) return TT_ENOPAGE;
    path[0] = '/';
    memcpy(path + (name[0] != '/'), name, len + 1);
    fd = shm_open(path, O_RDONLY, 0);
    if (fd < 0) return TT_ENOPAGE;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(struct tt_page)) {
        close(fd);
        return TT_ELAYOUT;
    }
    p = mmap(NULL, sizeof(struct tt_page), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return TT_ENOPAGE;
    clk->page = (const struct tt_page*)p;
    if (__atomic_load_n(&clk->page->magic, __ATOMIC_RELAXED) != TT_PAGE_MAGIC ||
        __atomic_load_n(&clk->page->layout, __ATOMIC_RELAXED) != TT_PAGE_LAYOUT ||
        __atomic_load_n(&clk->page->clock_id, __ATOMIC_RELAXED) != CLOCK_MONOTONIC_RAW) {
        munmap(p, sizeof(struct tt_page));
        clk->page = NULL;
        return TT_ELAYOUT;
    }
    return TT_OK;
}

static inline void tt_close(struct tt_clock* clk) {
    if (clk->page) munmap((void*)clk->page, sizeof(struct tt_page));
    clk->page = NULL;
}

/* One consistent copy of the mapping (the seqlock read), checksum checked. Retries while the
 * writer makes progress; TT_EBUSY once one write has stayed under way for TT_STUCK_NS (a writer
 * that died mid-write, or one descheduled for that long). */
static inline int tt_load_mapping(const struct tt_page* page, struct tt_mapping* out) {
    uint64_t words[TT_MAPPING_WORDS];
    uint64_t stuck_seq = 1, stuck_since = 0;
    unsigned spins = 0, i;
    for (;;) {
        const uint64_t before = __atomic_load_n(&page->seq, __ATOMIC_ACQUIRE);
        if ((before & 1) == 0) {
            for (i = 0; i < TT_MAPPING_WORDS; ++i)
                words[i] = __atomic_load_n(&page->data.words[i], __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&page->seq, __ATOMIC_RELAXED) == before) {
                if (tt_checksum(words) != words[TT_MAPPING_WORDS - 1]) return TT_ECORRUPT;
                memcpy(out, words, sizeof(*out));
                return TT_OK;
            }
            continue; /* a write went by: the writer is alive */
        }
        if (before != stuck_seq) { /* a new write under way */
            stuck_seq = before;
            stuck_since = 0;
            spins = 0;
        }
        if (++spins % 256 == 0) { /* the writer may be waiting for this core */
            const uint64_t now = tt_raw_ns();
            if (stuck_since == 0) stuck_since = now;
            if (now - stuck_since > TT_STUCK_NS) return TT_EBUSY;
            sched_yield();
        }
    }
}

/* The reading at raw clock value raw_ns (CLOCK_MONOTONIC_RAW, e.g. tt_raw_ns()). */
static inline int tt_read_at(const struct tt_clock* clk, uint64_t raw_ns, struct tt_reading* r) {
    struct tt_mapping m;
    uint64_t local;
    int64_t age;
    int rc;
    if (!clk->page) return TT_ENOPAGE;
    rc = tt_load_mapping(clk->page, &m);
    if (rc != TT_OK) return rc;
    if (m.valid != 1) return TT_EINVALID;
    local = m.sim_drift_ppb == 0
                ? raw_ns + (uint64_t)m.sim_offset_ns
                : tt_sim_local(raw_ns, m.sim_offset_ns, m.sim_drift_ppb, m.sim_epoch_ns);
    age = (int64_t)(local - m.t4_ns);
    if (age > (int64_t)m.max_age_ns) return TT_ESTALE;
    r->local_ns = local;
    r->master_ns = local + (uint64_t)m.theta_ns;
    r->epsilon_ns = tt_epsilon_ns(m.eps0_ns, m.rho_ppb, m.t1_ns, m.t4_ns, local);
    r->earliest_ns = r->master_ns - r->epsilon_ns;
    r->latest_ns = r->master_ns + r->epsilon_ns;
    r->age_ns = age > 0 ? (uint64_t)age : 0;
    r->syncs = m.syncs;
    return TT_OK;
}

static inline int tt_clock_read(const struct tt_clock* clk, struct tt_reading* r) {
    return tt_read_at(clk, tt_raw_ns(), r);
}

static inline int tt_clock_now(const struct tt_clock* clk, uint64_t* earliest, uint64_t* latest) {
    struct tt_reading r;
    const int rc = tt_clock_read(clk, &r);
    if (rc == TT_OK) {
        *earliest = r.earliest_ns;
        *latest = r.latest_ns;
    }
    return rc;
}

/* The page of tt_now: $LINERATE_TT or "linerate", opened on first use (and retried while no
 * such page exists). One per translation unit; safe to call from several threads. */
static inline const struct tt_clock* tt_default_clock(void) {
    static struct tt_clock clk;
    static int state; /* 0: closed, 1: opening, 2: open */
    int expected = 0;
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2) return &clk;
    if (__atomic_compare_exchange_n(&state, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        const char* name = getenv("LINERATE_TT");
        const int rc = tt_open(&clk, name && *name ? name : TT_DEFAULT_NAME);
        __atomic_store_n(&state, rc == TT_OK ? 2 : 0, __ATOMIC_RELEASE);
        return rc == TT_OK ? &clk : NULL;
    }
    return NULL; /* another thread is opening it */
}

static inline int tt_now(uint64_t* earliest, uint64_t* latest) {
    const struct tt_clock* clk = tt_default_clock();
    return clk ? tt_clock_now(clk, earliest, latest) : TT_ENOPAGE;
}

#ifdef __cplusplus
}
#endif

#endif /* LINERATE_TRUETIME_H */
