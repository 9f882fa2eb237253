#pragma once
// --clockbound PATH: the client's bound on the host's CLOCK_REALTIME, written as an AWS
// ClockBound shared-memory segment (protocol version 2, clock-bound's docs/PROTOCOL.md), so
// ClockBound's own clients (C, Rust, ...) read it unchanged: a file of 80 bytes in native byte
// order, a 16-bit generation as its seqlock, and the bound as of a CLOCK_MONOTONIC_COARSE
// instant that readers widen by max_drift per second since. No EAL: unit tests drive it.
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "clocksync/estimator.hpp"
#include "clocksync/local_clock.hpp"

namespace linerate::clocksync {

inline constexpr uint32_t kClockBoundMagic0 = 0x414D5A4E;  // two native u32, as readers compare
inline constexpr uint32_t kClockBoundMagic1 = 0x43420200;
inline constexpr uint16_t kClockBoundVersion = 2;
inline constexpr size_t kClockBoundPayloadWords = 8;
// ClockBound's readers report FreeRunning once as_of is this old, whatever the segment says:
// the writer refreshes the segment well within it.
inline constexpr uint64_t kClockBoundReaderGraceNs = 5'000'000'000;
inline constexpr uint64_t kClockBoundMaxRefreshNs = 1'000'000'000;

enum class ClockBoundStatus : int32_t {
    unknown = 0,
    synchronized = 1,
    free_running = 2,
    disrupted = 3
};

struct CbTimespec {  // a libc timespec as two i64 (tv_sec, tv_nsec), whatever time_t is
    int64_t sec = 0;
    int64_t nsec = 0;
};

// What follows the 16-byte header: the protocol's ClockErrorBound, 64 bytes.
struct ClockErrorBound {
    CbTimespec as_of;       // CLOCK_MONOTONIC_COARSE when `bound_ns` held
    CbTimespec void_after;  // CLOCK_MONOTONIC_COARSE past which readers say Unknown
    int64_t bound_ns = 0;   // bound on |CLOCK_REALTIME − the master's time| at as_of
    uint64_t disruption_marker = 0;
    uint32_t max_drift_ppb = 0;  // how fast the bound grows after as_of
    int32_t clock_status = 0;    // ClockBoundStatus
    uint8_t clock_disruption_support = 0;
    uint8_t padding[7] = {};
};

struct ClockBoundSegment {
    uint32_t magic[2];
    uint32_t segment_size;
    uint16_t version;
    uint16_t generation;  // odd while a write is under way; after 65535 comes 2, not 0
    uint64_t payload[kClockBoundPayloadWords];  // a ClockErrorBound, as words for the seqlock
};
static_assert(sizeof(ClockErrorBound) == kClockBoundPayloadWords * 8);
static_assert(offsetof(ClockErrorBound, bound_ns) == 32);
static_assert(offsetof(ClockErrorBound, max_drift_ppb) == 48);
static_assert(offsetof(ClockErrorBound, clock_status) == 52);
static_assert(offsetof(ClockErrorBound, clock_disruption_support) == 56);
static_assert(offsetof(ClockBoundSegment, generation) == 14);
static_assert(offsetof(ClockBoundSegment, payload) == 16);
static_assert(sizeof(ClockBoundSegment) == 80);

// The instants a segment write is made of: CLOCK_MONOTONIC_COARSE read first (readers measure
// the bound's age from it, so it must not be later than the bound's instant), then
// CLOCK_REALTIME paired with the local clock.
struct CbReadings {
    CbTimespec coarse;
    RealtimePair realtime;
};
CbReadings read_cb_readings(const LocalClock& local);

// Synchronized while the last good sync is at most max_age old, FreeRunning past it (the bound
// still holds, growing by ρ), Unknown before the first sync.
ClockBoundStatus clockbound_status(const SyncState& s, uint64_t now_local, uint64_t max_age_ns);

// Bound on |CLOCK_REALTIME − master| at the local reading: ε there, plus how far CLOCK_REALTIME
// is from the synchronized clock, plus the uncertainty of pairing the two reads. Saturates at
// 2^62 ns (a reader adds and subtracts it from a timespec).
int64_t clockbound_bound_ns(const SyncState& s, const RealtimePair& p);

// The payload for status `status` at `r`: as_of = r.coarse, void_after = as_of + max_age.
ClockErrorBound make_clock_error_bound(const SyncState& s, const CbReadings& r,
                                       ClockBoundStatus status, uint64_t max_age_ns,
                                       uint32_t max_drift_ppb);

class ClockBoundWriter {
  public:
    // Opens or creates `path` (its directory too), mode 0644, and holds an exclusive flock on it
    // while it lives. An existing file must be empty or a ClockBound v2 segment (e.g. left by a
    // stopped client): anything else is refused, never overwritten. The segment reads Unknown
    // until the first publish(). Throws std::runtime_error with the reason.
    ClockBoundWriter(const std::string& path, uint64_t max_age_ns, uint64_t rho_ppb);
    ~ClockBoundWriter();  // stop(), then unmap and unlock: the file stays, reading Unknown
    ClockBoundWriter(const ClockBoundWriter&) = delete;
    ClockBoundWriter& operator=(const ClockBoundWriter&) = delete;

    // A new good sync (the client's worker, once per sync).
    void publish(const SyncState& s, const LocalClock& local);
    // Every loop of the worker: rewrites when the status changes (FreeRunning past the max age)
    // or the last write is older than refresh_ns() (cheap otherwise: one comparison).
    void poll(uint64_t now_local, const LocalClock& local);
    // The client stops: Unknown.
    void stop();

    // Writes `e` through the generation seqlock (also the unit tests' way in).
    void write(const ClockErrorBound& e);

    const std::string& path() const { return path_; }
    const ClockBoundSegment* segment() const { return segment_; }
    uint64_t writes() const { return writes_; }
    ClockBoundStatus status() const { return status_; }
    uint64_t refresh_ns() const;

  private:
    // Reads the clocks, and writes the bound of the last sync with the status it has now.
    void write_now(const LocalClock& local);

    std::string path_;
    int fd_ = -1;
    ClockBoundSegment* segment_ = nullptr;
    uint64_t max_age_ns_;
    uint32_t max_drift_ppb_;
    SyncState sync_;
    ClockErrorBound last_;
    bool stopped_ = false;
    ClockBoundStatus status_ = ClockBoundStatus::unknown;
    uint64_t written_local_ = 0;
    uint64_t writes_ = 0;
};

}  // namespace linerate::clocksync
