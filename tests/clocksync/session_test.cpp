#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "clocksync/client_session.hpp"
#include "clocksync/master.hpp"
#include "clocksync/options.hpp"
#include "pkt/build.hpp"
#include "pkt/bytes.hpp"

using namespace linerate::clocksync;
using linerate::pkt::UdpFrameSpec;

namespace {

using Frame = std::array<uint8_t, kCsFrameLen>;

// Path delays of one probe, in master ns.
struct Delays {
    uint64_t up = 0, turn = 0, down = 0;
};

// Client and master on one simulated timeline: master time m is the truth, the client reads
// sim.local(m). Probes go through the real encoders: build_request, answer_request, on_frame.
class Harness {
  public:
    Harness(ClientConfig cfg, uint64_t start_m, uint64_t seed)
        : cfg_(cfg), session_(std::make_unique<ClientSession>(cfg)), m_(start_m), rng_(seed) {
        spec_.src_port = spec_.dst_port = kCsUdpPort;
    }

    // Delays for each probe; default: 1-50 µs each way, independently (asymmetric).
    std::function<Delays(std::mt19937_64&)> delays = [](std::mt19937_64& r) {
        return Delays{1000 + r() % 49000, 200 + r() % 800, 1000 + r() % 49000};
    };
    double loss = 0;     // share of probes lost
    double garbage = 0;  // share of responses followed by a forged copy
    // Each answer with the XDP hook's receive stamp, this long before the loop's reading.
    std::optional<uint64_t> hook_early_ns;

    void run(uint64_t duration_ns, uint64_t step_ns = 10'000) {
        for (uint64_t t = 0; t < duration_ns; t += step_ns, m_ += step_ns) {
            uint64_t now = cfg_.sim->local(m_);
            deliver_until(m_);
            session_->tick(now);
            while (auto p = session_->next_probe(now))
                if (!p->warmup) send(*p, now);  // a warm-up frame: nothing to answer here
        }
    }

    ClientSession& session() { return *session_; }
    uint64_t forged_wrong_client = 0, forged_bad_magic = 0, forged_duplicates = 0;
    uint64_t lost = 0;

  private:
    struct InFlight {
        uint64_t arrive_m;
        Frame frame;
    };

    void send(const ProbeToSend& p, uint64_t t1) {
        Frame f{};
        ASSERT_EQ(build_request(f.data(), f.size(), spec_, p.client_id, p.seq, t1), kCsFrameLen);
        if (uniform() < loss) {
            ++lost;
            return;
        }
        Delays d = delays(rng_);
        uint64_t t2 = m_ + d.up, t3 = t2 + d.turn;
        ASSERT_TRUE(answer_request(f.data(), f.size(), t2, t3).ok);
        flight_.push_back({t3 + d.down, f});
        if (uniform() < garbage) {
            Frame g = f;
            switch (rng_() % 3) {
                case 0:
                    linerate::pkt::store_be32(&g[48], p.client_id + 1);
                    ++forged_wrong_client;
                    break;
                case 1:
                    g[42] ^= 0xFF;
                    ++forged_bad_magic;
                    break;
                default:
                    ++forged_duplicates;  // arrives after the original: unknown sequence
                    break;
            }
            flight_.push_back({t3 + d.down + 1, g});
        }
    }

    void deliver_until(uint64_t m) {
        // In arrival order; t4 is the client's reading at the arrival instant.
        for (;;) {
            auto it = flight_.end();
            for (auto i = flight_.begin(); i != flight_.end(); ++i) {
                if (int64_t(m - i->arrive_m) >= 0 &&
                    (it == flight_.end() || int64_t(it->arrive_m - i->arrive_m) > 0)) {
                    it = i;
                }
            }
            if (it == flight_.end()) return;
            const uint64_t t4 = cfg_.sim->local(it->arrive_m);
            HookStamps hook;
            if (hook_early_ns) hook.t4 = t4 - *hook_early_ns;
            session_->on_frame(it->frame.data(), it->frame.size(), t4, {}, hook);
            flight_.erase(it);
        }
    }

    double uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

    ClientConfig cfg_;
    std::unique_ptr<ClientSession> session_;
    UdpFrameSpec spec_;
    uint64_t m_;
    std::mt19937_64 rng_;
    std::vector<InFlight> flight_;
};

ClientConfig sim_config(int64_t offset_ns, double drift_ppm, uint64_t epoch = 0) {
    ClientConfig c;
    c.client_id = 77;
    c.sim = SimClock::from_ppm(offset_ns, drift_ppm, epoch);
    return c;
}

constexpr uint64_t kSecond = 1'000'000'000;

}  // namespace

TEST(CsSession, RoundsFollowThePeriod) {
    ClientConfig cfg;
    cfg.probes = 3;
    cfg.pipeline = true;  // all three at once
    ClientSession s(cfg);
    std::vector<uint64_t> seqs;
    while (auto p = s.next_probe(1000)) seqs.push_back(p->seq);
    EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 2, 3}));
    EXPECT_FALSE(s.next_probe(1000 + 100'000'000));  // previous round still open
    s.tick(1000 + 10'000'000);                       // all three time out
    EXPECT_EQ(s.timeouts(), 3u);
    EXPECT_EQ(s.syncs(), 0u);
    EXPECT_FALSE(s.next_probe(1000 + 99'999'999));
    auto p = s.next_probe(1000 + 100'000'000);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->seq, 4u);
    EXPECT_EQ(p->client_id, 1u);
}

// --warmup-us: one warm-up frame warmup_ns before each round, neither a probe nor awaited; the
// first one at once, and the first round warmup_ns later; the round's probes then follow on
// their own schedule.
TEST(CsSession, WarmupFrameGoesAheadOfEachRound) {
    ClientConfig cfg;
    cfg.warmup_ns = 20'000;
    cfg.probe_timeout_ns = 1'000'000;
    ClientSession s(cfg);
    auto w = s.next_probe(0);
    ASSERT_TRUE(w);
    EXPECT_TRUE(w->warmup);  // the first round's warm-up
    EXPECT_FALSE(s.next_probe(19'999));
    auto p = s.next_probe(20'000);
    ASSERT_TRUE(p);
    EXPECT_FALSE(p->warmup);
    EXPECT_EQ(p->seq, 1u);
    s.tick(1'020'000);  // lost
    const uint64_t round2 = 20'000 + 100'000'000;
    EXPECT_FALSE(s.next_probe(round2 - 20'001));
    w = s.next_probe(round2 - 20'000);
    ASSERT_TRUE(w);
    EXPECT_TRUE(w->warmup);
    EXPECT_EQ(w->client_id, 1u);
    EXPECT_FALSE(s.awaiting_answer());
    EXPECT_FALSE(s.next_probe(round2 - 1));  // one warm-up per round
    p = s.next_probe(round2);
    ASSERT_TRUE(p);
    EXPECT_FALSE(p->warmup);
    EXPECT_EQ(p->seq, 2u);
    s.tick(round2 + 1'000'000);
    EXPECT_TRUE(s.next_probe(round2 + 100'000'000 - 20'000)->warmup);
    const ClientSummary sum = s.summary();
    EXPECT_EQ(sum.probes_sent, 2u);
    EXPECT_EQ(sum.warmups_sent, 3u);
    EXPECT_EQ(sum.timeouts, 2u);
}

// The echo of a warm-up frame (asked for by default): counted, neither a response nor a drop,
// never offered to the estimator; another client's echo is wrong_client. --no-warmup-echo: the
// frame does not ask, and the master drops it.
TEST(CsSession, WarmupEchoIsCountedAndNeverUsed) {
    ClientConfig cfg;
    cfg.warmup_ns = 20'000;
    ClientSession s(cfg);
    auto w = s.next_probe(0);
    ASSERT_TRUE(w && w->warmup);
    EXPECT_TRUE(w->echo);
    UdpFrameSpec spec;
    spec.src_port = spec.dst_port = kCsUdpPort;
    Frame f{};
    ASSERT_EQ(build_warmup(f.data(), f.size(), spec, w->client_id, w->echo), kCsFrameLen);
    ASSERT_EQ(answer_request(f.data(), f.size(), 1, 2).type, CsType::warmup_echo);
    const Frame echo = f;
    EXPECT_FALSE(s.on_frame(f.data(), f.size(), 5'000));
    f = echo;
    linerate::pkt::store_be32(&f[linerate::pkt::kUdpPayloadOffset + kCsOffClientId], 2);
    EXPECT_FALSE(s.on_frame(f.data(), f.size(), 6'000));
    EXPECT_FALSE(s.awaiting_answer());
    ClientSummary sum = s.summary();
    EXPECT_EQ(sum.warmup_echoes, 1u);
    EXPECT_EQ(sum.responses, 0u);
    EXPECT_EQ(sum.syncs, 0u);
    EXPECT_EQ(sum.rtt_ns.min, 0u);
    EXPECT_EQ(sum.drops.total(), 1u);
    EXPECT_EQ(sum.drops[Drop::wrong_client], 1u);

    cfg.warmup_echo = false;
    ClientSession quiet(cfg);
    w = quiet.next_probe(0);
    ASSERT_TRUE(w && w->warmup);
    EXPECT_FALSE(w->echo);
    ASSERT_EQ(build_warmup(f.data(), f.size(), spec, w->client_id, w->echo), kCsFrameLen);
    EXPECT_EQ(answer_request(f.data(), f.size(), 1, 2).drop, Drop::warmup);
}

TEST(CsSession, ProbeGapSpacesProbes) {
    ClientConfig cfg;
    cfg.probes = 2;
    cfg.probe_gap_ns = 50'000;
    cfg.pipeline = true;
    ClientSession s(cfg);
    EXPECT_TRUE(s.next_probe(0));
    EXPECT_FALSE(s.next_probe(0));
    EXPECT_FALSE(s.next_probe(49'999));
    EXPECT_TRUE(s.next_probe(50'000));
    EXPECT_FALSE(s.next_probe(100'000));
}

// Probes further apart than the warm-up: each later probe of the round gets its own warm-up frame
// warmup_ns ahead of it (a 12.5 ms gap leaves the path as cold as the period does); the probe
// goes no sooner than warmup_ns after it, even when the previous answer came late. Probes closer
// than the warm-up: the round's one warm-up only.
TEST(CsSession, WarmupFrameGoesAheadOfEachSpreadProbe) {
    ClientConfig cfg;
    cfg.probes = 3;
    cfg.probe_gap_ns = 50'000;
    cfg.warmup_ns = 20'000;
    cfg.probe_timeout_ns = 10'000;
    ClientSession s(cfg);
    ASSERT_TRUE(s.next_probe(0)->warmup);  // the round's
    auto p = s.next_probe(20'000);
    ASSERT_TRUE(p && !p->warmup);
    s.tick(30'000);                      // lost
    EXPECT_FALSE(s.next_probe(49'999));  // the next probe's warm-up: at 70'000 − 20'000
    auto w = s.next_probe(50'000);
    ASSERT_TRUE(w && w->warmup);
    EXPECT_TRUE(w->echo);
    EXPECT_FALSE(s.next_probe(69'999));
    p = s.next_probe(70'000);
    ASSERT_TRUE(p && !p->warmup);
    EXPECT_EQ(p->seq, 2u);
    s.tick(200'000);  // lost; the third probe's warm-up is overdue
    ASSERT_TRUE(s.next_probe(200'000)->warmup);
    EXPECT_FALSE(s.next_probe(219'999));  // warmup_ns after its warm-up, not at 120'000
    p = s.next_probe(220'000);
    ASSERT_TRUE(p && !p->warmup);
    EXPECT_EQ(p->seq, 3u);
    EXPECT_EQ(s.summary().warmups_sent, 3u);

    cfg.probe_gap_ns = cfg.warmup_ns;  // not further apart: no warm-up but the round's
    ClientSession close(cfg);
    ASSERT_TRUE(close.next_probe(0)->warmup);
    ASSERT_FALSE(close.next_probe(20'000)->warmup);
    close.tick(30'000);
    p = close.next_probe(40'000);
    ASSERT_TRUE(p && !p->warmup);
    EXPECT_EQ(close.summary().warmups_sent, 1u);
}

// Not pipelined (the default): each probe waits for the previous one's answer or timeout, then
// the gap, counted from the t1 that sent() gave.
TEST(CsSession, ProbesWaitForThePreviousAnswer) {
    ClientConfig cfg;
    cfg.probes = 3;
    cfg.probe_gap_ns = 1000;
    ClientSession s(cfg);
    UdpFrameSpec spec;
    spec.src_port = spec.dst_port = kCsUdpPort;
    auto p1 = s.next_probe(0);
    ASSERT_TRUE(p1);
    s.sent(400);                       // t1: built, then stamped right before TX
    EXPECT_FALSE(s.next_probe(5000));  // p1 unanswered
    Frame f{};
    build_request(f.data(), f.size(), spec, 1, p1->seq, 400);
    answer_request(f.data(), f.size(), 1000, 1100);
    EXPECT_TRUE(s.on_frame(f.data(), f.size(), 1300));
    EXPECT_EQ(s.rtt_histogram().min(), 800u);  // (1300 − 400) − (1100 − 1000)
    EXPECT_FALSE(s.next_probe(1399));          // gap from t1 = 400
    auto p2 = s.next_probe(1400);
    ASSERT_TRUE(p2);
    EXPECT_FALSE(s.next_probe(2400));
    s.tick(1400 + cfg.probe_timeout_ns);  // p2 lost: the round goes on
    EXPECT_EQ(s.timeouts(), 1u);
    EXPECT_TRUE(s.next_probe(1400 + cfg.probe_timeout_ns));
}

// A session whose one probe left at 400 (sent()), answered with t2 1000, t3 1100 and read by the
// loop at 1300, with the hook's stamps `hook`.
namespace {
std::unique_ptr<ClientSession> answered_at_1300(HookStamps hook) {
    UdpFrameSpec spec;
    spec.src_port = spec.dst_port = kCsUdpPort;
    ClientConfig cfg;
    cfg.warmup_ns = 0;
    auto s = std::make_unique<ClientSession>(cfg);
    auto p = s->next_probe(0);
    EXPECT_TRUE(p && !p->warmup);
    s->sent(400);
    Frame f{};
    build_request(f.data(), f.size(), spec, 1, p->seq, 400);
    answer_request(f.data(), f.size(), 1000, 1100);
    EXPECT_TRUE(s->on_frame(f.data(), f.size(), 1300, {}, hook));
    return s;
}
}  // namespace

// The XDP hook's receive stamp is the answer's t4 where it lies in [t1, t4] of its probe: the
// round trip shrinks by what the loop took to see the frame. A stamp outside (before the
// request left, after the loop's own read) cannot be this answer's arrival: t4 is kept and the
// stamp counted as refused.
TEST(CsSession, HookStampIsT4OnlyInsideItsProbesRoundTrip) {
    auto answered = [](std::optional<uint64_t> hook_t4) { return answered_at_1300({hook_t4}); };
    auto s = answered(1250);
    EXPECT_EQ(s->rtt_histogram().min(), 750u);  // (1250 − 400) − (1100 − 1000)
    EXPECT_EQ(s->rx_stamps(), 1u);
    EXPECT_EQ(s->rx_stamps_refused(), 0u);
    s = answered(1300);  // the loop's own read is the latest the stamp may be
    EXPECT_EQ(s->rtt_histogram().min(), 800u);
    EXPECT_EQ(s->rx_stamps(), 1u);
    for (uint64_t outside : {399u, 1301u, 0u}) {
        s = answered(outside);
        EXPECT_EQ(s->rtt_histogram().min(), 800u) << outside;
        EXPECT_EQ(s->rx_stamps(), 0u);
        EXPECT_EQ(s->rx_stamps_refused(), 1u);
    }
    s = answered(std::nullopt);
    EXPECT_EQ(s->rtt_histogram().min(), 800u);
    EXPECT_EQ(s->rx_stamps() + s->rx_stamps_refused(), 0u);
}

// At the defaults (16 probes 0.5 ms apart each 100 ms, a warm-up ahead of each) every
// answer's hook stamp lies in its probe's round trip: each is its t4, none refused.
TEST(CsSession, AtTheDefaultsEveryHookStampIsTaken) {
    ClientConfig cfg = make_client_config(Options{}, 0);
    ASSERT_EQ(cfg.probes, 16u);
    ASSERT_GT(cfg.probe_gap_ns, 0u);
    ASSERT_GT(cfg.warmup_ns, 0u);
    cfg.sim = SimClock::from_ppm(5'000'000, 8, 0);
    Harness h(cfg, 1'000'000, 3);
    h.hook_early_ns = 500;
    h.run(kSecond);
    const ClientSession& s = h.session();
    const ClientSummary sum = s.summary();
    EXPECT_EQ(sum.probes_sent, 160u);
    EXPECT_EQ(sum.responses, sum.probes_sent);
    EXPECT_EQ(s.rx_stamps(), sum.responses);
    EXPECT_EQ(s.rx_stamps_refused(), 0u);
    EXPECT_EQ(sum.violations, 0u);
}

// --xdp-turn: sent() recorded the trigger's departure; the hook's t1 of the turned request is the
// probe's t1 where it lies between that and the answer's t4 (the hook's t4 when there is one):
// the round trip loses the trigger's own trip. Outside it cannot be this request's departure:
// the recorded t1 stays and the stamp is counted as refused.
TEST(CsSession, HookT1IsTheRequestsDepartureOnlyInsideItsRoundTrip) {
    auto answered = answered_at_1300;
    auto s = answered({std::nullopt, 900});
    EXPECT_EQ(s->rtt_histogram().min(), 300u);  // (1300 − 900) − (1100 − 1000)
    EXPECT_EQ(s->turn_stamps(), 1u);
    EXPECT_EQ(s->turn_stamps_refused(), 0u);
    s = answered({1250, 400});  // the trigger's own departure is the earliest
    EXPECT_EQ(s->rtt_histogram().min(), 750u);
    EXPECT_EQ(s->turn_stamps(), 1u);
    for (uint64_t outside : {399u, 1251u, 0u}) {
        s = answered({1250, outside});
        EXPECT_EQ(s->rtt_histogram().min(), 750u) << outside;
        EXPECT_EQ(s->turn_stamps(), 0u);
        EXPECT_EQ(s->turn_stamps_refused(), 1u);
        EXPECT_EQ(s->rx_stamps(), 1u);
    }
}

TEST(CsSession, RejectsBadConfig) {
    ClientConfig cfg;
    cfg.probes = 0;
    EXPECT_THROW(ClientSession{cfg}, std::invalid_argument);
    cfg.probes = kMaxProbes + 1;
    EXPECT_THROW(ClientSession{cfg}, std::invalid_argument);
    cfg.probes = 1;
    cfg.sync_period_ns = 0;
    EXPECT_THROW(ClientSession{cfg}, std::invalid_argument);
    cfg.sync_period_ns = 1;
    cfg.drift_bound_ppm = -1;
    EXPECT_THROW(ClientSession{cfg}, std::invalid_argument);
}

TEST(CsSession, AcceptsAnswerAndCountsEveryDropReason) {
    ClientConfig cfg;
    cfg.client_id = 5;
    cfg.probes = 2;
    cfg.pipeline = true;  // both probes out before any answer
    ClientSession s(cfg);
    UdpFrameSpec spec;
    spec.src_port = spec.dst_port = kCsUdpPort;
    auto make = [&](uint64_t seq, uint64_t t1, uint64_t t2, uint64_t t3) {
        Frame f{};
        build_request(f.data(), f.size(), spec, 5, seq, t1);
        answer_request(f.data(), f.size(), t2, t3);
        return f;
    };
    auto p1 = s.next_probe(1000);
    auto p2 = s.next_probe(1000);
    ASSERT_TRUE(p1 && p2);

    Frame ok = make(p1->seq, 1000, 5000, 5100);
    EXPECT_TRUE(s.on_frame(ok.data(), ok.size(), 3100));
    EXPECT_FALSE(s.on_frame(ok.data(), ok.size(), 3200));  // duplicate
    EXPECT_EQ(s.drops()[Drop::unknown_sequence], 1u);

    Frame other = make(p2->seq, 1000, 5000, 5100);
    linerate::pkt::store_be32(&other[48], 6);
    EXPECT_FALSE(s.on_frame(other.data(), other.size(), 3100));
    EXPECT_EQ(s.drops()[Drop::wrong_client], 1u);

    Frame req{};
    build_request(req.data(), req.size(), spec, 5, p2->seq, 1000);  // our own request looped
    EXPECT_FALSE(s.on_frame(req.data(), req.size(), 3100));
    EXPECT_EQ(s.drops()[Drop::bad_type], 1u);

    Frame junk = ok;
    junk[44] = 3;
    EXPECT_FALSE(s.on_frame(junk.data(), junk.size(), 3100));
    EXPECT_EQ(s.drops()[Drop::bad_version], 1u);
    junk = ok;
    junk[42] = 0;
    EXPECT_FALSE(s.on_frame(junk.data(), junk.size(), 3100));
    EXPECT_EQ(s.drops()[Drop::bad_magic], 1u);
    junk = ok;
    linerate::pkt::store_be16(&junk[36], 53);
    EXPECT_FALSE(s.on_frame(junk.data(), junk.size(), 3100));
    EXPECT_EQ(s.drops()[Drop::not_clocksync], 1u);
    EXPECT_FALSE(s.on_frame(junk.data(), 20, 3100));
    EXPECT_EQ(s.drops()[Drop::not_clocksync], 2u);

    // The master claims a turnaround longer than the client's round trip: δ < 0. The probe is
    // consumed, so the round completes now with the first probe's sync.
    Frame neg = make(p2->seq, 1000, 5000, 9000);
    EXPECT_FALSE(s.on_frame(neg.data(), neg.size(), 3100));
    EXPECT_EQ(s.drops()[Drop::negative_rtt], 1u);
    EXPECT_EQ(s.syncs(), 1u);
    EXPECT_EQ(s.sync().theta_ns, 3000);  // ((5000 − 1000) + (5100 − 3100)) / 2
    EXPECT_EQ(s.sync().delta_ns, 2000u);
    EXPECT_EQ(s.rtt_histogram().count(), 1u);

    // t3 < t2 from the master is malformed; the next round shows it.
    auto p3 = s.next_probe(1000 + 100'000'000);
    auto p4 = s.next_probe(1000 + 100'000'000);
    ASSERT_TRUE(p3 && p4);
    Frame back = make(p3->seq, 0, 5000, 4999);
    EXPECT_FALSE(s.on_frame(back.data(), back.size(), 100'003'000));
    EXPECT_EQ(s.drops()[Drop::malformed], 1u);
    // A late answer to a probe of the previous round.
    Frame late = make(p1->seq, 1000, 5000, 5100);
    EXPECT_FALSE(s.on_frame(late.data(), late.size(), 100'003'000));
    EXPECT_EQ(s.drops()[Drop::unknown_sequence], 2u);
    s.tick(1000 + 100'000'000 + 10'000'000);  // p4 times out: round done, nothing usable
    EXPECT_EQ(s.timeouts(), 1u);
    EXPECT_EQ(s.syncs(), 1u);
    auto sum = s.summary();
    EXPECT_EQ(sum.rounds, 2u);
    EXPECT_EQ(sum.probes_sent, 4u);
    EXPECT_EQ(sum.responses, 1u);
    EXPECT_EQ(sum.drops.total(), 10u);  // the timeout is no packet: counted apart
    EXPECT_EQ(sum.timeouts, 1u);
}

TEST(CsSession, EpsilonSampledOnGridAndBeforeSync) {
    // Fixed 1 µs each way, no offset, no drift: every sync has δ = 2 µs.
    ClientConfig cfg = sim_config(0, 0);
    Harness h(cfg, 1'000'000'000, 1);
    h.delays = [](std::mt19937_64&) { return Delays{1000, 0, 1000}; };
    h.run(kSecond + 5'000'000);  // rounds at 0, 100 ms, ..., 1 s: 11 syncs
    auto sum = h.session().summary();
    EXPECT_EQ(sum.syncs, 11u);
    EXPECT_EQ(sum.rounds, 11u);
    EXPECT_EQ(sum.violations, 0u);
    // Samples: each ms after the first sync (1000 + 5 - a few), plus 10 pre-sync samples.
    EXPECT_NEAR(double(sum.samples), 1005.0 + 10, 3);
    EXPECT_EQ(sum.rtt_ns.min, 2000u);
    EXPECT_EQ(sum.rtt_ns.p99, 2000u);
    // ε = 1000 + 3 + ρ·(t − t1): from ~1003 to ~2003 over a period; mean ~ floor δ/2 + ρT/2.
    EXPECT_GE(h.session().epsilon_histogram().min(), 1003u);
    EXPECT_NEAR(sum.epsilon_ns.max, 1003 + 1000 + 1, 2);
    EXPECT_NEAR(sum.epsilon_ns.mean, 1003 + 505 + 5, 15);  // grid at 1..100 ms after t4
    EXPECT_EQ(sum.max_abs_error_ns, 0);
    // The start, apart: the first round's answer came 2 µs after its probe, with ε ~1003 ns.
    EXPECT_EQ(sum.first_sync_after_ns, 2000u);
    EXPECT_NEAR(double(sum.first_sync_epsilon_ns), 1003, 2);
}

TEST(CsSession, Offset5msDrift8ppmNoViolations) {
    for (unsigned k : {1u, 4u}) {
        ClientConfig cfg = sim_config(5'000'000, 8);
        cfg.probes = k;
        Harness h(cfg, 3 * kSecond, 100 + k);
        h.loss = 0.05;
        h.garbage = 0.05;
        h.run(20 * kSecond);
        h.loss = h.garbage = 0;
        h.run(30'000'000);  // drain: every probe answered or timed out
        auto sum = h.session().summary();
        SCOPED_TRACE(k);
        EXPECT_EQ(sum.violations, 0u);
        EXPECT_GE(sum.syncs, 180u);
        EXPECT_GE(sum.probes_sent, 200u * k);  // the clock runs fast: maybe one more round
        EXPECT_LE(sum.probes_sent, 201u * k);
        EXPECT_EQ(sum.timeouts, h.lost);
        EXPECT_EQ(sum.drops[Drop::wrong_client], h.forged_wrong_client);
        EXPECT_EQ(sum.drops[Drop::bad_magic], h.forged_bad_magic);
        EXPECT_EQ(sum.drops[Drop::unknown_sequence], h.forged_duplicates);
        EXPECT_GT(sum.samples, 19'900u);
        EXPECT_LT(sum.epsilon_ns.max, 60'000u);  // δ/2 ≤ 50 µs, + ρ·(2 periods if a round is lost)
        EXPECT_GT(sum.max_abs_error_ns, 0);
        EXPECT_NEAR(double(h.session().sync().theta_ns), -5'000'000 - 8 * 23.0 * 1000, 50'000);
    }
}

// Keeping the tighter sync (--keep-sync-rounds): still sound at the worst drift, in both
// directions and with the delay all on one side, and ε lower on average than taking every round.
TEST(CsSession, KeepingTheTighterSyncStaysSoundAndLowersEpsilon) {
    double mean[2] = {0, 0};
    for (uint64_t keep : {uint64_t(0), uint64_t(400'000'000)})
        for (double drift : {10.0, -10.0})
            for (bool up : {true, false}) {
                ClientConfig cfg = sim_config(5'000'000, drift);
                cfg.estimator = Estimator::min_rtt;
                cfg.keep_sync_ns = keep;
                Harness h(cfg, kSecond, 11);
                h.delays = [up](std::mt19937_64& r) {
                    const uint64_t d = 1000 + r() % 20'000;
                    return up ? Delays{d, 0, 0} : Delays{0, 0, d};
                };
                h.loss = 0.05;
                h.run(10 * kSecond, 3'000);
                const ClientSummary sum = h.session().summary();
                SCOPED_TRACE(keep);
                SCOPED_TRACE(drift);
                SCOPED_TRACE(up);
                EXPECT_EQ(sum.violations, 0u);
                EXPECT_EQ(sum.syncs + h.lost, sum.rounds);
                EXPECT_EQ(sum.rounds_kept > 0, keep > 0);
                // A sync kept 400 ms goes to the tightest round since it, not the last one.
                EXPECT_EQ(sum.rounds_runner_up > 0, keep > 0);
                mean[keep > 0] += sum.epsilon_ns.mean;
            }
    EXPECT_LT(mean[1], 0.8 * mean[0]);
}

// The default estimator (intersect): sound at the worst drift, with the delay all on one side
// or on either at random, no intersection empty, and ε lower on average than min-RTT's.
TEST(CsSession, IntersectingTheBoundsStaysSoundAndLowersEpsilon) {
    for (double drift : {10.0, -10.0})
        for (int side : {0, 1, 2}) {
            double mean[2] = {0, 0};
            for (Estimator rule : {Estimator::min_rtt, Estimator::intersect}) {
                ClientConfig cfg = sim_config(5'000'000, drift);
                cfg.estimator = rule;
                cfg.probes = 4;
                Harness h(cfg, kSecond, 13);
                h.delays = [side](std::mt19937_64& r) {
                    const uint64_t d = 1000 + r() % 20'000, e = 1000 + r() % 20'000;
                    return side == 0   ? Delays{d, 0, 0}
                           : side == 1 ? Delays{0, 0, d}
                                       : Delays{d, 0, e};
                };
                h.loss = 0.05;
                h.run(10 * kSecond, 3'000);
                const ClientSummary sum = h.session().summary();
                SCOPED_TRACE(drift);
                SCOPED_TRACE(side);
                EXPECT_EQ(sum.violations, 0u);
                EXPECT_EQ(sum.intersections_empty, 0u);
                EXPECT_EQ(sum.rounds_kept, 0u);
                EXPECT_GT(sum.syncs, 90u);
                mean[rule == Estimator::intersect] = sum.epsilon_ns.mean;
            }
            EXPECT_LT(mean[1], mean[0]);
        }
}

// Verification mode knows the true offset, so it splits each round trip into its two ways.
TEST(CsSession, OneWayDelaysFromTheTrueOffset) {
    ClientConfig cfg = sim_config(5'000'000, 8);
    Harness h(cfg, kSecond, 4);
    h.delays = [](std::mt19937_64&) { return Delays{1000, 300, 3000}; };
    h.run(2 * kSecond);
    const ClientSummary sum = h.session().summary();
    EXPECT_NEAR(double(sum.up_ns.min), 1000, 16);  // LogHistogram: within 1.6%
    EXPECT_NEAR(double(sum.up_ns.p99), 1000, 16);
    EXPECT_NEAR(double(sum.down_ns.min), 3000, 48);
    EXPECT_NEAR(double(sum.down_ns.p50), 3000, 48);
    EXPECT_NEAR(double(sum.rtt_ns.p50), 4000, 64);
}

TEST(CsSession, NegativeOffsetSlowClockNoViolations) {
    ClientConfig cfg = sim_config(-5'000'000, -8);
    Harness h(cfg, 0, 7);
    h.run(10 * kSecond);
    auto sum = h.session().summary();
    EXPECT_EQ(sum.violations, 0u);
    EXPECT_EQ(sum.syncs, 100u);
}

TEST(CsSession, WorstCaseAsymmetryAtDriftEqualToBoundNoViolations) {
    // All delay on one direction makes θ off by exactly δ/2; drift at exactly ρ (both signs)
    // makes the offset move as fast as ε allows: the bound must still hold.
    for (double drift : {10.0, -10.0}) {
        for (bool up : {true, false}) {
            ClientConfig cfg = sim_config(123'456'789, drift);
            Harness h(cfg, 42, 9);
            h.delays = [up](std::mt19937_64& r) {
                uint64_t d = 100 + r() % 5000;
                return up ? Delays{d, 0, 0} : Delays{0, 0, d};
            };
            h.run(5 * kSecond, 3'000);
            auto sum = h.session().summary();
            SCOPED_TRACE(drift);
            SCOPED_TRACE(up);
            EXPECT_EQ(sum.violations, 0u);
            EXPECT_GE(sum.syncs, 50u);
            EXPECT_LE(sum.syncs, 51u);
        }
    }
}

TEST(CsSession, CountersWrapDuringRun) {
    // Master counter wraps 1.5 s in, the client's (offset −5 ms) 5 ms later.
    const uint64_t start = std::numeric_limits<uint64_t>::max() - 1'500'000'000 + 1;
    ClientConfig cfg = sim_config(-5'000'000, 8, start);
    Harness h(cfg, start, 5);
    h.loss = 0.05;
    h.run(4 * kSecond);
    auto sum = h.session().summary();
    EXPECT_EQ(sum.violations, 0u);
    EXPECT_GE(sum.syncs, 35u);
    EXPECT_GE(sum.rounds, 40u);
    EXPECT_LE(sum.rounds, 41u);
    EXPECT_GT(sum.samples, 3'900u);
    EXPECT_EQ(sum.samples_skipped, 0u);
    EXPECT_LT(sum.epsilon_ns.max, 60'000u);
}

TEST(CsSession, DriftAboveBoundIsDetected) {
    // 20 ppm against ρ = 10 ppm with tight 200 ns paths: the error outruns ε within a period.
    ClientConfig cfg = sim_config(5'000'000, 20);
    Harness h(cfg, kSecond, 3);
    h.delays = [](std::mt19937_64&) { return Delays{200, 0, 200}; };
    h.run(5 * kSecond);
    auto sum = h.session().summary();
    EXPECT_GT(sum.violations, 1000u);
    EXPECT_GE(sum.syncs, 50u);
}

TEST(CsSession, LostRoundsLetEpsilonGrow) {
    for (Estimator rule : {Estimator::min_rtt, Estimator::intersect}) {
        SCOPED_TRACE(int(rule));
        ClientConfig cfg = sim_config(0, 0);
        cfg.estimator = rule;
        Harness h(cfg, 0, 2);
        h.delays = [](std::mt19937_64&) { return Delays{1000, 0, 1000}; };
        h.run(150'000'000);  // two syncs (0 and 100 ms)
        EXPECT_EQ(h.session().syncs(), 2u);
        uint64_t max_before = h.session().epsilon_histogram().max();
        h.loss = 1;
        h.run(500'000'000);  // five rounds lost
        EXPECT_EQ(h.session().syncs(), 2u);
        EXPECT_EQ(h.session().timeouts(), 5u);
        // ε just before the 100 ms sync: min-RTT's from the probe's t1; intersect's from its t4,
        // ε₀ then its bound there (1003 + drift(2 µs)): 1 ns of rounding more.
        EXPECT_EQ(max_before, rule == Estimator::min_rtt ? 1003u + 1001 : 1004u + 1001);
        // Last sync's t1 at 100 ms, last sample at ~649 ms: ε = 1003 + ρ·549 ms.
        EXPECT_GE(h.session().epsilon_histogram().max(), 1003u + 5490);
        EXPECT_EQ(h.session().violations(), 0u);
        h.loss = 0;
        h.run(200'000'000);
        EXPECT_EQ(h.session().syncs(), 4u);
        EXPECT_LT(h.session().epsilon_at(h.session().sync().t4), 1010u);
    }
}
