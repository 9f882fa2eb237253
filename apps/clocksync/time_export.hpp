#pragma once
// The client's synchronized clock for other programs: --export NAME writes it to the POSIX
// shared-memory page /NAME (layout and reader: include/linerate/truetime.h) through the seqlock
// of seqlock.hpp; --chrony-shm N also hands chronyd a sample per sync through its SHM refclock.
// No EAL: unit tests drive both.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "clocksync/estimator.hpp"
#include "clocksync/sim_clock.hpp"
#include "linerate/truetime.h"

namespace linerate::clocksync {

class TimeExport {
  public:
    // Creates /name, or takes over a page a stopped client left there (readers that mapped it
    // keep reading). The page is invalid until the first publish(). Throws std::runtime_error
    // (name in use by a running client, not a time page, or no shared memory).
    TimeExport(const std::string& name, uint64_t max_age_ns, const std::optional<SimClock>& sim);
    ~TimeExport();  // invalidates; the object stays, so readers see "stopped", not "no page"
    TimeExport(const TimeExport&) = delete;
    TimeExport& operator=(const TimeExport&) = delete;

    // A new good sync: the page is valid until local time s.t4 + max_age.
    void publish(const SyncState& s, uint64_t syncs, uint64_t now_local);
    // Invalidates the page once the last good sync is older than max_age (call every loop).
    void expire(uint64_t now_local) {
        if (mapping_.valid && diff_ns(now_local, mapping_.t4_ns) > int64_t(mapping_.max_age_ns))
            invalidate(now_local);
    }
    void invalidate(uint64_t now_local);

    bool valid() const { return mapping_.valid == 1; }
    const std::string& path() const { return path_; }
    const tt_page* page() const { return page_; }

  private:
    void write(uint64_t now_local);

    std::string path_;
    tt_page* page_ = nullptr;
    tt_mapping mapping_{};
};

// The key of chrony's (and ntpd's) SHM refclock unit N: refclock SHM N in chrony.conf.
inline constexpr int kChronyShmKeyBase = 0x4e545030;

class ChronyShm {
  public:
    // Attaches (creating it if chronyd has not) the SysV segment of unit N. Units 0 and 1 are
    // root-only (mode 0600) as chronyd makes them, others 0666. Throws std::runtime_error.
    explicit ChronyShm(int unit);
    ~ChronyShm();
    ChronyShm(const ChronyShm&) = delete;
    ChronyShm& operator=(const ChronyShm&) = delete;

    // One sample: the reference (master) time `master_ns` (ns since the Unix epoch) at the
    // instant the system clock read `system`, with precision 2^precision_log2 s.
    void update(uint64_t master_ns, const timespec& system, int precision_log2);
    uint64_t samples() const { return samples_; }

  private:
    void* shm_ = nullptr;
    uint64_t samples_ = 0;
};

// log2 of ε in seconds, rounded up (chrony's precision field), within [-30, 0].
int precision_log2(uint64_t epsilon_ns);

}  // namespace linerate::clocksync
