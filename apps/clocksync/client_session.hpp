#pragma once
// The clocksync client without I/O: the caller passes local-clock times (ns) in and frames in
// and out; the session schedules rounds, tracks probes, syncs the estimator and reports ε.
//
// Loop of a caller (one lcore):
//   now = local clock;  session.tick(now);
//   while (auto p = session.next_probe(now)) {
//       build_request(frame, ..., p->client_id, p->seq, 0);  // t1 patched in below
//       t1 = local clock; write t1 into the frame; TX; session.sent(t1);
//   }
//   for each received frame: session.on_frame(frame, len, t4);
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "clocksync/cs_wire.hpp"
#include "clocksync/estimator.hpp"
#include "clocksync/sim_clock.hpp"
#include "stats/histogram.hpp"

namespace linerate::clocksync {

struct ClientConfig {
    uint32_t client_id = 1;
    uint16_t udp_port = kCsUdpPort;
    bool verify_checksums = true;   // of responses (--no-verify-checksums)
    bool strict_checksums = false;  // --strict-checksums
    unsigned probes = 1;            // K per round, 1..kMaxProbes
    uint64_t sync_period_ns = 100'000'000;
    // Spacing of the K probes of a round, from one send to the next. Unless `pipeline`, a probe
    // also waits until the previous one is answered or lost: it then crosses a path the
    // previous exchange has just warmed (caches, TLB), and never queues behind it.
    uint64_t probe_gap_ns = 0;
    bool pipeline = false;  // send the K probes without waiting for answers
    // A warm-up frame (CsType::warmup) this long before each round's first probe (0: none),
    // the first round's too: it crosses the path the probe takes next, which a quiet period (or
    // the start) left cold. With probe_gap_ns longer than this, one ahead of each later probe of
    // the round too: a gap that long leaves the path as cold as the period does.
    uint64_t warmup_ns = 0;
    // The warm-up frame asks the master for its echo (kCsFlagEcho), which crosses the way down
    // ahead of the probe as the warm-up crosses the way up. An old master drops it all the same.
    bool warmup_echo = true;
    uint64_t probe_timeout_ns = 10'000'000;
    uint64_t sample_period_ns = 1'000'000;  // the ε grid
    double drift_bound_ppm = kDefaultDriftBoundPpm;
    // How a round's probes make the sync (--estimator, ClockEstimator).
    Estimator estimator = Estimator::intersect;
    // min_rtt: a round's best probe replaces the sync only when it is the tighter bound, or the
    // sync is older than this (ClockEstimator::keeps_previous); 0: every answered round replaces
    // it.
    uint64_t keep_sync_ns = 0;
    std::optional<SimClock> sim;  // verification mode: count violations against the true offset
    // --key: requests and warm-ups are signed (sign), answers taken only when their trailer is
    // the key's (else bad_auth, before anything of them is used).
    std::optional<auth::Key> key;
};

struct ProbeToSend {
    uint32_t client_id = 0;
    uint64_t seq = 0;
    bool warmup = false;  // a warm-up frame (build_warmup): no seq, no answer, no sent()
    bool echo = false;    // the warm-up asks for its echo
};

// Stamps the client's XDP hook (the steering program) took of an answer, in local time.
struct HookStamps {
    std::optional<uint64_t> t4;  // its arrival
    std::optional<uint64_t> t1;  // --xdp-turn: when its request left the hook (the echo turned)
};

struct EpsilonSummary {
    double mean = 0;
    uint64_t p50 = 0, p99 = 0, p999 = 0, max = 0;
};
struct RttSummary {
    uint64_t min = 0, p50 = 0, p99 = 0;
};

// The figures of the JSON report (keys syncs, violations, epsilon_ns, rtt_ns, drops).
struct ClientSummary {
    uint64_t syncs = 0;
    uint64_t rounds = 0;
    uint64_t rounds_kept = 0;  // of the syncs: the sync in use stayed, the tighter bound
    // Of the syncs: a sync kept keep_sync_ns long replaced by an earlier round's tighter probe.
    uint64_t rounds_runner_up = 0;
    // Of the syncs (intersect): rounds whose bounds had no point in common, synced from their
    // least-delay probe alone.
    uint64_t intersections_empty = 0;
    uint64_t probes_sent = 0;
    uint64_t warmups_sent = 0;
    uint64_t warmup_echoes = 0;  // echoes of this client's warm-up frames received (no drops)
    uint64_t responses = 0;      // accepted
    uint64_t samples = 0;        // ε samples (grid + pre-sync)
    uint64_t samples_skipped = 0;
    // The unsynchronized start, apart from the ε statistics (which begin at the first sync):
    // time from the first probe to the first sync, and ε right then. 0 while never synced.
    uint64_t first_sync_after_ns = 0;
    uint64_t first_sync_epsilon_ns = 0;
    uint64_t violations = 0;
    int64_t max_abs_error_ns = 0;  // verification mode: max |true offset − θ| at samples
    EpsilonSummary epsilon_ns;
    RttSummary rtt_ns;
    // Verification mode: the one-way delays of the answered probes, client to master (up) and
    // back (down), from the true offset: where a round trip's time goes.
    RttSummary up_ns, down_ns;
    DropCounters drops;
    uint64_t timeouts = 0;  // probes that got no response within the timeout
    // Probes neither answered nor timed out when the summary was taken (the run's end):
    // probes_sent = responses + timeouts + probes_in_flight.
    uint64_t probes_in_flight = 0;
};

class ClientSession {
  public:
    explicit ClientSession(const ClientConfig& cfg);  // throws std::invalid_argument

    uint16_t udp_port() const { return cfg_.udp_port; }

    // With a key (ClientConfig::key): frames carry the trailer; build them frame_len() bytes long
    // (trailer_len() of room, build_request's `trailer`) and sign() each once it is complete.
    bool keyed() const { return mac_.has_value(); }
    size_t trailer_len() const { return mac_ ? auth::kTrailerLen : 0; }
    size_t frame_len() const { return kCsFrameLen + trailer_len(); }
    void sign(uint8_t* frame) { sign_request(*mac_, frame); }

    // Expires probes older than the timeout (completing their round) and takes the ε samples
    // due up to `now`. Call it every loop iteration.
    void tick(uint64_t now);
    // The probe to send now, if one is due: a round starts every sync period and sends K
    // probes, after a warm-up frame `warmup_ns` ahead of it (the first round too: it starts
    // warmup_ns after the first call). `now` is
    // recorded as the probe's t1 unless sent() gives a later one.
    std::optional<ProbeToSend> next_probe(uint64_t now);
    // The real t1 of the probe next_probe just handed out: read after its frame was built,
    // right before TX, so building it is not part of its round trip. Put the same value in the
    // frame.
    void sent(uint64_t t1);
    // A parsed packet that arrived at local time t4: true when accepted as a probe's answer;
    // the echo of a warm-up frame is counted (warmup_echoes), anything else under its drop
    // reason. `hook.t4`: the same arrival stamped earlier, in the XDP hook: the answer's t4
    // when it lies between its probe's t1 and t4 (rx_stamps), else t4 is (rx_stamps_refused).
    // `hook.t1`: the request left the hook then, later than the t1 sent() recorded (the trigger
    // frame's): the probe's t1 when it lies between that t1 and the answer's t4 (turn_stamps),
    // else the recorded t1 stays (turn_stamps_refused). A stamp is only ever trusted where it
    // cannot loosen the bound.
    bool on_packet(const CsPacket& p, uint64_t t4, HookStamps hook = {});
    bool on_frame(const uint8_t* frame, size_t len, uint64_t t4, pkt::RxChecksums port = {},
                  HookStamps hook = {});

    // The synchronized clock and its bound (copy the state to hand it to other code).
    const SyncState& sync() const { return est_.state(); }
    uint64_t to_master(uint64_t local) const { return est_.state().to_master(local); }
    uint64_t epsilon_at(uint64_t local) const { return est_.state().epsilon_at(local); }

    // True while a probe sent is neither answered nor lost.
    bool awaiting_answer() const { return pending_ > 0; }

    const stats::LogHistogram& epsilon_histogram() const { return eps_hist_; }
    const stats::LogHistogram& rtt_histogram() const { return rtt_hist_; }
    const DropCounters& drops() const { return counted_.drops; }
    uint64_t violations() const { return counted_.violations; }
    uint64_t timeouts() const { return counted_.timeouts; }
    // Responses accepted with a UDP checksum left to the sender's TX offload.
    uint64_t udp_checksum_offloaded() const { return udp_checksum_offloaded_; }
    // Answers whose t4 is the XDP hook's stamp, and stamps outside their probe's [t1, t4].
    uint64_t rx_stamps() const { return rx_stamps_; }
    uint64_t rx_stamps_refused() const { return rx_stamps_refused_; }
    // Answers whose t1 is the hook's stamp of the turned request, and stamps refused.
    uint64_t turn_stamps() const { return turn_stamps_; }
    uint64_t turn_stamps_refused() const { return turn_stamps_refused_; }
    uint64_t syncs() const { return est_.syncs(); }
    ClientSummary summary() const;

  private:
    struct Probe {
        uint64_t t1 = 0;
        bool pending = false;
    };

    std::optional<ProbeToSend> warmup_due(uint64_t now);
    std::optional<ProbeToSend> probe_warmup_due(uint64_t now);
    ProbeToSend counted_warmup();
    bool warms_each_probe() const {
        return cfg_.warmup_ns != 0 && cfg_.probe_gap_ns > cfg_.warmup_ns;
    }
    void resolve(unsigned idx, uint64_t at);
    void complete_round(uint64_t at);
    void sample_until(uint64_t t);
    void sample(uint64_t t);
    void record_one_way(const Timestamps& ts);

    ClientConfig cfg_;
    ClockEstimator est_;
    // --key: signs requests and verifies answers, on the thread that runs the session.
    std::optional<auth::MessageMac> mac_;

    bool started_ = false;
    uint64_t started_at_ = 0;  // the first probe
    uint64_t next_round_at_ = 0;
    bool round_open_ = false;
    bool warmed_ = false;        // the next round's warm-up frame has gone (next_round_at_ set)
    bool probe_warmed_ = false;  // the round's next probe's warm-up has gone (warms_each_probe)
    uint64_t round_first_seq_ = 0;
    unsigned sent_in_round_ = 0;
    unsigned pending_ = 0;
    uint64_t next_probe_at_ = 0;
    uint64_t next_seq_ = 1;
    std::array<Probe, kMaxProbes> probes_{};  // probe i of the round has seq round_first_seq_ + i

    bool sampling_ = false;  // from the first sync on
    uint64_t next_sample_at_ = 0;

    stats::LogHistogram eps_hist_;
    stats::LogHistogram rtt_hist_;
    stats::LogHistogram up_hist_, down_hist_;  // verification mode
    // The summary's figures that are counted as they happen (rounds, probes, drops, timeouts,
    // the first sync, violations); summary() adds those read from the estimator and histograms.
    ClientSummary counted_;
    uint64_t udp_checksum_offloaded_ = 0;
    uint64_t rx_stamps_ = 0;
    uint64_t rx_stamps_refused_ = 0;
    uint64_t turn_stamps_ = 0;
    uint64_t turn_stamps_refused_ = 0;
};

}  // namespace linerate::clocksync
