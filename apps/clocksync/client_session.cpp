#include "clocksync/client_session.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace linerate::clocksync {

namespace {
// A stalled caller catches up at most this many grid samples; older ones are counted as skipped
// (bounds the work of one tick after a long pause or a clock jump).
constexpr uint64_t kMaxCatchUpSamples = 100'000;

// A stamp the client's XDP hook took of an exchange, used only where it lies in the exchange's
// [t1, t4] (counted in `taken`); outside it cannot be this exchange's (a stale stamp, another
// clock), and the client's own reading `own` stays (the stamp counted in `refused`).
uint64_t hook_stamp_or(uint64_t own, std::optional<uint64_t> stamp, uint64_t t1, uint64_t t4,
                       uint64_t& taken, uint64_t& refused) {
    if (!stamp) return own;
    if (diff_ns(*stamp, t1) >= 0 && diff_ns(t4, *stamp) >= 0) {
        ++taken;
        return *stamp;
    }
    ++refused;
    return own;
}
}  // namespace

ClientSession::ClientSession(const ClientConfig& cfg)
    : cfg_(cfg), est_(cfg.drift_bound_ppm, cfg.estimator) {
    if (cfg.probes < 1 || cfg.probes > kMaxProbes) {
        throw std::invalid_argument("probes per round must be within [1, 64]");
    }
    if (cfg.sync_period_ns == 0 || cfg.sample_period_ns == 0 || cfg.probe_timeout_ns == 0) {
        throw std::invalid_argument("sync period, sample period and timeout must be > 0");
    }
    if (cfg.key) mac_.emplace(*cfg.key);
}

void ClientSession::tick(uint64_t now) {
    for (unsigned i = 0; round_open_ && i < sent_in_round_; ++i) {
        if (probes_[i].pending && diff_ns(now, probes_[i].t1) >= int64_t(cfg_.probe_timeout_ns)) {
            ++counted_.timeouts;
            resolve(i, now);
        }
    }
    sample_until(now);
}

ProbeToSend ClientSession::counted_warmup() {
    ++counted_.warmups_sent;
    return ProbeToSend{.client_id = cfg_.client_id, .warmup = true, .echo = cfg_.warmup_echo};
}

// The warm-up frame, warmup_ns ahead of the next round; the first one at once, and the first
// round then waits for it.
std::optional<ProbeToSend> ClientSession::warmup_due(uint64_t now) {
    if (!cfg_.warmup_ns || warmed_) return std::nullopt;
    if (started_ && diff_ns(now, next_round_at_ - cfg_.warmup_ns) < 0) return std::nullopt;
    warmed_ = true;
    if (!started_) next_round_at_ = now + cfg_.warmup_ns;
    return counted_warmup();
}

// Within a round: a warm-up frame warmup_ns ahead of each later probe when the probes are
// further apart than that (ClientConfig::warmup_ns); the probe then goes no sooner than warmup_ns
// after it.
std::optional<ProbeToSend> ClientSession::probe_warmup_due(uint64_t now) {
    if (!warms_each_probe() || sent_in_round_ == 0 || probe_warmed_) return std::nullopt;
    if (diff_ns(now, next_probe_at_ - cfg_.warmup_ns) < 0) return std::nullopt;
    probe_warmed_ = true;
    if (diff_ns(now + cfg_.warmup_ns, next_probe_at_) > 0) next_probe_at_ = now + cfg_.warmup_ns;
    return counted_warmup();
}

std::optional<ProbeToSend> ClientSession::next_probe(uint64_t now) {
    if (!round_open_) {
        if (auto w = warmup_due(now)) return w;
        if ((started_ || warmed_) && diff_ns(now, next_round_at_) < 0) return std::nullopt;
        // Rounds keep a fixed cadence; one that starts a whole period late restarts it.
        if (!started_) started_at_ = now;
        next_round_at_ = started_ ? next_round_at_ + cfg_.sync_period_ns : now;
        if (diff_ns(now, next_round_at_) >= 0) next_round_at_ = now + cfg_.sync_period_ns;
        started_ = true;
        round_open_ = true;
        warmed_ = false;
        probe_warmed_ = false;
        round_first_seq_ = next_seq_;
        sent_in_round_ = 0;
        pending_ = 0;
        next_probe_at_ = now;
        est_.begin_round();
    }
    if (sent_in_round_ == cfg_.probes) return std::nullopt;
    if (sent_in_round_ > 0 && !cfg_.pipeline && probes_[sent_in_round_ - 1].pending)
        return std::nullopt;
    if (auto w = probe_warmup_due(now)) return w;
    if (diff_ns(now, next_probe_at_) < 0) return std::nullopt;
    probe_warmed_ = false;
    probes_[sent_in_round_++] = Probe{now, true};
    ++pending_;
    ++counted_.probes_sent;
    next_probe_at_ = now + cfg_.probe_gap_ns;
    return ProbeToSend{cfg_.client_id, next_seq_++};
}

void ClientSession::sent(uint64_t t1) {
    if (!round_open_ || sent_in_round_ == 0) return;
    Probe& p = probes_[sent_in_round_ - 1];
    if (!p.pending) return;  // already resolved: nothing to correct
    p.t1 = t1;
    next_probe_at_ = t1 + cfg_.probe_gap_ns;
}

bool ClientSession::on_packet(const CsPacket& p, uint64_t t4, HookStamps hook) {
    auto reject = [this](Drop d) {
        counted_.drops.add(d);
        return false;
    };
    if (!p.ok) return reject(p.drop);
    if (p.type != CsType::response && p.type != CsType::warmup_echo) return reject(Drop::bad_type);
    if (p.client_id != cfg_.client_id) return reject(Drop::wrong_client);
    if (p.type == CsType::warmup_echo) {  // it warmed the way down: no times in it to use
        ++counted_.warmup_echoes;
        return false;
    }
    uint64_t idx = p.seq - round_first_seq_;  // wraps to huge for older sequences
    if (!round_open_ || idx >= sent_in_round_ || !probes_[idx].pending) {
        return reject(Drop::unknown_sequence);
    }
    // The probe's own t1 is used, not the echoed one: the client trusts its own record (and
    // its own hook's). t4: the hook's receive stamp, else the loop's read (late but sound); t1:
    // the hook's stamp of the turned request, else the trigger's departure (early but sound).
    const uint64_t sent_at = probes_[idx].t1;
    const uint64_t at = hook_stamp_or(t4, hook.t4, sent_at, t4, rx_stamps_, rx_stamps_refused_);
    Timestamps ts{hook_stamp_or(sent_at, hook.t1, sent_at, at, turn_stamps_, turn_stamps_refused_),
                  p.t2, p.t3, at};
    // A broken answer still consumes the probe, so the round need not wait for its timeout.
    std::optional<Drop> bad;
    if (diff_ns(p.t3, p.t2) < 0) {
        bad = Drop::malformed;
    } else if (!est_.offer(ts)) {
        bad = Drop::negative_rtt;
    } else {
        rtt_hist_.record(uint64_t(diff_ns(ts.t4, ts.t1) - diff_ns(p.t3, p.t2)));
        record_one_way(ts);
        ++counted_.responses;
    }
    resolve(unsigned(idx), t4);
    return bad ? reject(*bad) : true;
}

bool ClientSession::on_frame(const uint8_t* frame, size_t len, uint64_t t4, pkt::RxChecksums port,
                             HookStamps hook) {
    const CsPacket p = parse_cs_packet(frame, len, cfg_.udp_port,
                                       {cfg_.verify_checksums, port, !cfg_.strict_checksums},
                                       mac_ ? &*mac_ : nullptr);
    udp_checksum_offloaded_ += p.udp_checksum_offloaded;
    return on_packet(p, t4, hook);
}

// Up = t2 − (t1 + offset at t1), down = (t4 + offset at t4) − t3; 0 if rounding makes one
// negative.
void ClientSession::record_one_way(const Timestamps& ts) {
    if (!cfg_.sim) return;
    const int64_t up = diff_ns(ts.t2, ts.t1) - cfg_.sim->true_offset_at(ts.t1);
    const int64_t down = diff_ns(ts.t4, ts.t3) + cfg_.sim->true_offset_at(ts.t4);
    up_hist_.record(uint64_t(std::max<int64_t>(up, 0)));
    down_hist_.record(uint64_t(std::max<int64_t>(down, 0)));
}

void ClientSession::resolve(unsigned idx, uint64_t at) {
    probes_[idx].pending = false;
    --pending_;
    if (sent_in_round_ == cfg_.probes && pending_ == 0) complete_round(at);
}

void ClientSession::complete_round(uint64_t at) {
    round_open_ = false;
    ++counted_.rounds;
    sample_until(at);
    if (!est_.has_candidate()) return;  // nothing usable: the old sync stays, ε keeps growing
    // The old sync's worst point, just before a new one replaces it.
    const bool replaces = !est_.keeps_previous(cfg_.keep_sync_ns);
    if (replaces && est_.state().synced) sample(at);
    est_.end_round(cfg_.keep_sync_ns);
    if (!replaces) return;  // kept: the sync in use is still the tighter bound
    if (est_.syncs() == 1 && counted_.first_sync_after_ns == 0) {
        counted_.first_sync_after_ns = uint64_t(diff_ns(at, started_at_));
        counted_.first_sync_epsilon_ns = est_.state().eps0_ns;
    }
    if (!sampling_) {
        sampling_ = true;
        next_sample_at_ = at + cfg_.sample_period_ns;
    }
}

void ClientSession::sample_until(uint64_t t) {
    if (!sampling_ || diff_ns(t, next_sample_at_) < 0) return;
    uint64_t behind = uint64_t(diff_ns(t, next_sample_at_)) / cfg_.sample_period_ns + 1;
    if (behind > kMaxCatchUpSamples) {
        uint64_t skip = behind - kMaxCatchUpSamples;
        counted_.samples_skipped += skip;
        next_sample_at_ += skip * cfg_.sample_period_ns;
    }
    for (; diff_ns(t, next_sample_at_) >= 0; next_sample_at_ += cfg_.sample_period_ns) {
        sample(next_sample_at_);
    }
}

void ClientSession::sample(uint64_t t) {
    const SyncState& s = est_.state();
    uint64_t eps = s.epsilon_at(t);
    eps_hist_.record(eps);
    if (!cfg_.sim) return;
    if (!cfg_.sim->within(t, s.theta_ns, eps)) ++counted_.violations;
    // θ comes off the wire and may be anything: the difference is taken wide and saturated.
    __int128 diff = __int128(cfg_.sim->true_offset_at(t)) - s.theta_ns;
    if (diff < 0) diff = -diff;
    const int64_t err = diff > INT64_MAX ? INT64_MAX : int64_t(diff);
    if (err > counted_.max_abs_error_ns) counted_.max_abs_error_ns = err;
}

ClientSummary ClientSession::summary() const {
    ClientSummary r = counted_;
    r.syncs = est_.syncs();
    r.rounds_kept = est_.kept();
    r.rounds_runner_up = est_.runner_up_syncs();
    r.intersections_empty = est_.intersections_empty();
    r.probes_in_flight = pending_;
    r.samples = eps_hist_.count();
    r.epsilon_ns = {eps_hist_.mean(), eps_hist_.percentile(0.5), eps_hist_.percentile(0.99),
                    eps_hist_.percentile(0.999), eps_hist_.max()};
    auto summary_of = [](const stats::LogHistogram& h) {
        return RttSummary{h.min(), h.percentile(0.5), h.percentile(0.99)};
    };
    r.rtt_ns = summary_of(rtt_hist_);
    r.up_ns = summary_of(up_hist_);
    r.down_ns = summary_of(down_hist_);
    return r;
}

}  // namespace linerate::clocksync
