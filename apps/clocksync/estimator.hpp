#pragma once
// Offset and round trip of a probe (docs/clocksync.md, "Formulas"), the min-RTT filter over one
// sync round, and the uncertainty bound ε(t) = ε₀ + ρ·(t − t_sync) of the resulting synchronized
// clock.
//
// Time values are raw u64 ns counters that may wrap: every difference is the int64 of a u64
// subtraction, correct while the true difference is below 2^63 ns (292 years), so a client
// 1e18 ns ahead of or behind the master is fine.
#include <array>
#include <cstdint>
#include <optional>

namespace linerate::clocksync {

// Added to ε₀ so ε never under-estimates with whole-ns timestamps: each of t1..t4 may read up
// to 1 ns early (≤ 1 ns on θ, < 2 ns on δ), θ is rounded by ≤ 0.5 ns, and the probe's own
// span is measured to ±1 ns (ρ·2 ns < 1 ns for any allowed ρ).
inline constexpr uint64_t kEpsilonSlackNs = 3;
inline constexpr double kMaxDriftBoundPpm = 100000;  // keeps ρ·2 ns below 1 ns
inline constexpr double kDefaultDriftBoundPpm = 10;  // 10 µs/s
inline constexpr unsigned kMaxProbes = 64;           // probes a round, at most

// How a round's probes make the sync (--estimator).
enum class Estimator {
    // Every probe's bound interval θ ± ε and the sync's, at the round's last t4, intersected:
    // the sync is the intersection's middle.
    intersect,
    // The round's min-RTT probe, or the sync kept while the tighter bound (keep_ns).
    min_rtt,
};

// t1, t4: client local clock (transmit, receive); t2, t3: master clock (receive, transmit).
struct Timestamps {
    uint64_t t1 = 0;
    uint64_t t2 = 0;
    uint64_t t3 = 0;
    uint64_t t4 = 0;
};

// Wrap-safe a − b of two u64 ns counters.
inline int64_t diff_ns(uint64_t a, uint64_t b) {
    return int64_t(a - b);
}

struct Measurement {
    int64_t theta_ns = 0;  // master − local: ((t2 − t1) + (t3 − t4)) / 2, rounded up
    int64_t delta_ns = 0;  // (t4 − t1) − (t3 − t2), >= 0
    uint64_t t1 = 0;
    uint64_t t4 = 0;
};

// θ and δ of one probe; nothing when δ < 0 or t3 < t2 (no clock can produce either).
std::optional<Measurement> measure(const Timestamps& ts);

// ρ in ppm as an integer ppb rate, rounded up. Throws std::invalid_argument outside
// [0, kMaxDriftBoundPpm].
uint64_t drift_bound_ppb(double ppm);

// The most the offset can move while the local clock advances span_ns, rounded up and
// saturating. ρ bounds the local clock's rate error per second of the master (the true time, as
// in verification mode); per local second a clock ρ slow moves ρ/(1 − ρ), so this is
// ceil(span·ρ/(1 − ρ)): 10001 ns for 1 s at 10 ppm, not 10000.
uint64_t drift_ns(uint64_t rho_ppb, uint64_t span_ns);

// One sync: trivially copyable, so other code (another lcore) can be handed a snapshot.
// Estimator::intersect's syncs have no single probe: their t1 = t4 = the round's last t4 (the
// instant the intersection bounds), eps0_ns its half-width and delta_ns the round's least δ.
struct SyncState {
    bool synced = false;
    int64_t theta_ns = 0;  // master − local
    uint64_t delta_ns = 0;
    uint64_t eps0_ns = 0;  // ceil(δ/2) + kEpsilonSlackNs (intersect: the half-width at t4)
    uint64_t t1 = 0;       // t_sync: transmit time of the chosen probe (local clock)
    uint64_t t4 = 0;       // its receive time (local clock)
    uint64_t rho_ppb = 0;

    // The synchronized clock: the master's time estimated from a local reading.
    uint64_t to_master(uint64_t local) const { return local + uint64_t(theta_ns); }
    // Bound on |master − to_master(local)|; UINT64_MAX before the first sync.
    uint64_t epsilon_at(uint64_t local) const;
};

// Keeps the probe with the smallest δ (the least queueing, so the tightest ε₀).
class MinRttFilter {
  public:
    void reset() { best_.reset(); }
    void offer(const Measurement& m) {
        if (!best_ || m.delta_ns < best_->delta_ns) best_ = m;
    }
    const std::optional<Measurement>& best() const { return best_; }

  private:
    std::optional<Measurement> best_;
};

// Sync state across rounds: each round offers its K probes (at most kMaxProbes).
// Estimator::intersect: every probe's interval θ ± ε(T) and the sync's, all at T, the round's
// last t4, intersected; the sync is the intersection's middle, ε₀ its half-width, at T. Each
// interval holds the true offset at T, so their intersection does: honest by construction, at
// least as tight as the tightest of them (to 1 ns of rounding), centred between the asymmetries
// of probes delayed in opposite directions. An empty intersection (some bound was wrong: a
// clock step, a broken stamp) falls back to the round's min-RTT probe alone
// (intersections_empty).
// Estimator::min_rtt: the best probe becomes the sync, unless the previous sync is kept
// (end_round's keep_ns). A sync kept keep_ns long is replaced by the tightest bound of the
// rounds since it (the runner-up or this round's best), not by whatever this round gave: one
// round queued behind a flood replaces nothing it is looser than.
class ClockEstimator {
  public:
    explicit ClockEstimator(double drift_bound_ppm = kDefaultDriftBoundPpm,
                            Estimator rule = Estimator::intersect);

    void begin_round() {
        filter_.reset();
        offered_ = 0;
    }
    // Offers one probe of the current round; false (not used) when measure() rejects it.
    bool offer(const Timestamps& ts);
    // Ends the round: true when it gave a good sync, a new one or the previous one kept (see
    // keeps_previous). Otherwise (all probes lost or rejected) the previous sync stays and its
    // ε keeps growing.
    bool end_round(uint64_t keep_ns = 0);
    // True when the current round has a probe to sync from.
    bool has_candidate() const { return filter_.best().has_value(); }
    // min_rtt only (intersect: false): true when the previous sync, at most keep_ns old at the
    // round's best probe (0: never), is then still the tighter bound: its ε grown by drift to the
    // probe's t4 is at most the probe's own ε there. Both grow at ρ from then on, so it stays the
    // tighter one; keeping it is as sound as a round whose probes were all lost (NTP's clock
    // filter, RFC 5905 §10, likewise takes the least-delay sample of the last eight, aged by their
    // dispersion).
    bool keeps_previous(uint64_t keep_ns) const;
    uint64_t syncs() const { return syncs_; }  // good rounds: new syncs and kept ones
    uint64_t kept() const { return kept_; }    // good rounds whose best probe lost to the sync
    // Replacements of a sync kept keep_ns long by an earlier round's probe, tighter than the
    // round's own best.
    uint64_t runner_up_syncs() const { return runner_up_syncs_; }
    // intersect: rounds whose intervals had no point in common, synced from the min-RTT probe.
    uint64_t intersections_empty() const { return intersections_empty_; }

    const SyncState& state() const { return state_; }
    uint64_t rho_ppb() const { return rho_ppb_; }

  private:
    uint64_t epsilon_of(const Measurement& m, uint64_t local) const;
    void keep_runner_up(const Measurement& m);
    void end_min_rtt_round(uint64_t keep_ns);
    void end_intersect_round();
    void sync_to(const Measurement& m);

    uint64_t rho_ppb_;
    Estimator rule_;
    MinRttFilter filter_;
    std::array<Measurement, kMaxProbes> round_{};  // intersect: the round's probes
    unsigned offered_ = 0;
    SyncState state_;
    // The tightest bound among the best probes of the rounds kept since the sync (ε of each at a
    // common instant: all grow at ρ, so the order holds from then on).
    std::optional<Measurement> runner_up_;
    uint64_t syncs_ = 0;
    uint64_t kept_ = 0;
    uint64_t runner_up_syncs_ = 0;
    uint64_t intersections_empty_ = 0;
};

}  // namespace linerate::clocksync
