#pragma once
// The client's synchronized clock for other code: the session's worker publishes each new sync
// through a seqlock, and any thread reads the master's time and its bound without locks.
//
//   const SyncedClock& clock = ...;
//   ClockReading r = clock.now();  // r.master_ns within ±r.epsilon_ns of the master's clock
#include <cstdint>

#include "clocksync/estimator.hpp"
#include "clocksync/local_clock.hpp"
#include "clocksync/seqlock.hpp"
#include "stats/histogram.hpp"

namespace linerate::clocksync {

struct SyncSnapshot {
    SyncState state;  // not synced until the first good round
    uint64_t syncs = 0;
    uint64_t violations = 0;  // verification mode
};

struct ClockReading {
    bool synced = false;
    uint64_t local_ns = 0;
    uint64_t master_ns = 0;            // the synchronized clock: local + theta
    uint64_t epsilon_ns = UINT64_MAX;  // bound on |master's clock - master_ns|
};

class SyncedClock {
  public:
    explicit SyncedClock(LocalClock local) : local_(local) {}

    // The session's worker only.
    void publish(const SyncSnapshot& s) { snapshot_.store(s); }

    SyncSnapshot snapshot() const { return snapshot_.load(); }
    const LocalClock& local() const { return local_; }

    ClockReading now() const { return at(snapshot(), local_.now()); }
    static ClockReading at(const SyncSnapshot& s, uint64_t local) {
        return {s.state.synced, local, s.state.to_master(local), s.state.epsilon_at(local)};
    }

    // The session's ε and RTT histograms as of the last sync (the worker offers them), for the
    // metrics endpoint.
    stats::HistogramMirror epsilon_ns, rtt_ns;

  private:
    LocalClock local_;
    Seqlock<SyncSnapshot> snapshot_;
};

}  // namespace linerate::clocksync
