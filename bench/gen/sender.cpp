#include "gen/sender.hpp"

#include <fmt/core.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pkt/headers.hpp"
#include "runtime/forward_loop.hpp"
#include "runtime/rx_step.hpp"
#include "stats/report.hpp"
#include "worker/pacer.hpp"
#include "worker/quiescence.hpp"

namespace linerate::gen {

namespace {

unsigned idx(GenCounter c) {
    return unsigned(c);
}

// Copies a frame longer than one mbuf's room into a chain of segments from `pool`; the caller
// frees the whole chain on failure.
bool fill_chain(rte_mempool* pool, rte_mbuf* head, const uint8_t* data, size_t len) {
    rte_mbuf* m = head;
    size_t off = 0;
    for (;;) {
        const size_t k = std::min<size_t>(rte_pktmbuf_tailroom(m), len - off);
        std::memcpy(rte_pktmbuf_mtod(m, uint8_t*), data + off, k);
        m->data_len = uint16_t(k);
        off += k;
        if (off == len) break;
        rte_mbuf* seg = rte_pktmbuf_alloc(pool);
        if (!seg) return false;
        m->next = seg;
        ++head->nb_segs;
        m = seg;
    }
    head->pkt_len = uint32_t(len);
    return true;
}

}  // namespace

struct Sender::Worker {
    Worker(const TrafficPlan& plan, unsigned index, unsigned workers, TscClock clock)
        : traffic(plan, index, workers), returns(plan.config(), clock) {}
    Traffic traffic;
    ReturnTracker returns;
    stats::HistogramMirror latency;  // returns' round trips, copied about once a second
    uint64_t quota = std::numeric_limits<uint64_t>::max();
    uint64_t send_start = 0, send_end = 0;
    std::vector<uint8_t> scratch;  // frames longer than an mbuf are built here, then copied
};

Sender::Sender(Runtime& runtime, const GenOptions& options, const TrafficPlan& plan)
    : rt_(runtime), opt_(options), plan_(plan) {
    for (const auto& slot : rt_.workers().slots())
        if (!slot.queues.empty()) ++active_;
    clock_ = {rte_rdtsc(), 1e9 / double(rte_get_tsc_hz())};
    const uint16_t room = rte_pktmbuf_data_room_size(rt_.pool()) - RTE_PKTMBUF_HEADROOM;
    for (unsigned w = 0; w < active_; ++w) {
        auto worker = std::make_unique<Worker>(plan, w, active_, clock_);
        if (opt_.count) worker->quota = opt_.count / active_ + (w < opt_.count % active_);
        if (plan.frame_len() > room) worker->scratch.resize(plan.frame_len());
        workers_.push_back(std::move(worker));
    }
    figure_set_ = declare_figures();
    rt_.add_feature(*this);
}

// The JSON's key that is not a figure: the kind of traffic.
void Sender::add_json(nlohmann::json& j) const {
    j["kind"] = kind_name(plan_.config().kind);
}

Sender::~Sender() = default;

namespace {

// 1 µs to 100 ms: a host's loop to a congested path.
constexpr double kRttBuckets[] = {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5,
                                  1e-4, 2.5e-4, 5e-4, 1e-3, 1e-2,   1e-1};

// One live render's round trips (FigureSet::take_live): the workers' copies (made about once a
// second) merged, so the histogram and its percentiles agree. thread_local: --metrics renders
// on its own thread.
thread_local stats::LogHistogram live_rtt;

using stats::Figure;
using stats::FigureKind;
using stats::FigureReading;
using stats::FigureUnit;
using stats::HistStat;

}  // namespace

stats::FigureSet Sender::declare_figures() const {
    stats::FigureSet set{"", "", sent_figures()};
    set.take_live = [this] {
        live_rtt = stats::LogHistogram();
        for (const auto& w : workers_) live_rtt.merge(w->latency.read());
    };
    for (auto part : {return_figures(), expect_figures()})
        set.figures.insert(set.figures.end(), part.begin(), part.end());
    return set;
}

// The summary's first line: how long sending took, the rate sent, the rate asked for.
std::vector<Figure> Sender::sent_figures() const {
    const auto final = [this](const char* json, const char* text, auto read) {
        return Figure{.json = json, .text = text, .read_final = [this, read](unsigned) {
                          stats::Totals sent = rt_.stats().totals();
                          sent.rx_packets = sent.rx_bytes = 0;
                          return FigureReading{read(stats::rates(sent, send_s_))};
                      }};
    };
    std::vector<Figure> f = {
        {.unit = FigureUnit::s,
         .json = "send_s",
         .text = "over",
         .read_final = [this](unsigned) { return FigureReading{send_s_}; }},
        final("sent_mpps", "Mpps", [](const stats::Rates& r) { return r.tx_mpps; }),
        final("sent_gbps", "Gbps", [](const stats::Rates& r) { return r.tx_gbps; }),
        {.json = "sent_pps_target",
         .text = "target pps (0: full rate)",
         .read_final = [this](unsigned) { return FigureReading{target_pps(opt_)}; }},
    };
    for (Figure& sent : f) sent.line = "sent";
    return f;
}

// What should come back and has not (yet; `lost` at exit), and the round trips: the summary's
// returns lines when anything was to come back.
std::vector<Figure> Sender::return_figures() const {
    const auto outstanding = [this](unsigned) {
        const stats::Totals t = rt_.stats().totals();
        const uint64_t back = t.app[idx(GenCounter::expected_back)];
        const uint64_t returned = t.app[idx(GenCounter::returned)];
        return FigureReading{back > returned ? back - returned : 0};
    };
    std::vector<Figure> f = {
        {.kind = FigureKind::gauge,
         .json = "lost",
         .metric = "linerate_gen_outstanding",
         .help = "Frames sent that should come back and have not (yet)",
         .text = "lost",
         .line = "returns",
         .shown = [this] { return rt_.stats().totals().app[idx(GenCounter::expected_back)] > 0; },
         .read_live = outstanding,
         .read_final = outstanding},
        {.kind = FigureKind::histogram,
         .unit = FigureUnit::ns,
         .json = "latency_ns",
         .metric = "linerate_gen_rtt_seconds",
         .help = "Round trips of the frames that came back",
         .text = "round trip",
         .json_stats = {HistStat::p50, HistStat::p99, HistStat::p999, HistStat::max, HistStat::mean,
                        HistStat::count},
         .buckets = kRttBuckets,
         .live_histogram = [](unsigned) { return live_rtt; },
         .final_histogram = [this](unsigned) { return latency_; }},
    };
    for (auto [q, key] : {std::pair{0.5, "p50"}, {0.99, "p99"}, {0.999, "p999"}})
        f.push_back({.kind = FigureKind::gauge,
                     .unit = FigureUnit::ns,
                     .metric = "linerate_gen_rtt_percentile_seconds",
                     .help = "Round-trip percentiles so far",
                     .labels = {{"percentile", key}},
                     .read_live = [q](unsigned) { return FigureReading{live_rtt.percentile(q)}; }});
    return f;
}

// --expect: the sums written, in the JSON's `expect` and a summary line (known once merged).
std::vector<Figure> Sender::expect_figures() const {
    const auto expected = [this](const char* json, const char* text, auto read) {
        return Figure{.json = json,
                      .text = text,
                      .line = "expected sums",
                      .read_final = [this, read](unsigned) {
                          return FigureReading{read(expected_.totals()), expected_.enabled()};
                      }};
    };
    return {
        expected("expect.keys", "keys", [](const ExpectedTotals& e) { return e.keys; }),
        expected("expect.tuples", "tuples", [](const ExpectedTotals& e) { return e.tuples; }),
        expected("expect.sum", "total", [](const ExpectedTotals& e) { return e.sum; }),
        {.json = "expect.file",
         .text = "file",
         .line = "expected sums",
         .read_final =
             [this](unsigned) {
                 return FigureReading{opt_.expect_path, expected_.enabled()};
             }},
    };
}

int Sender::run() {
    return rt_.run([this](WorkerContext& ctx) { work(ctx); });
}

void Sender::merge_and_write() {
    uint64_t hz = rte_get_tsc_hz();
    for (const auto& w : workers_) {
        latency_.merge(w->returns.latency_ns());
        if (w->traffic.expected().enabled()) expected_.merge(w->traffic.expected());
        send_s_ = std::max(send_s_, double(w->send_end - w->send_start) / double(hz));
    }
    if (expected_.enabled()) {
        try {
            expected_.write_csv(opt_.expect_path);
        } catch (const std::exception& e) {
            fmt::print(stderr, "gen: error: {}\n", e.what());
        }
    }
}

// One worker's run: it builds bursts into the queues' pending slots, paced, sends them, counts
// what comes back, and at the end frees what never went out and drains the returns.
class Sender::Loop {
  public:
    Loop(Sender& sender, WorkerContext& ctx);
    void run();

  private:
    // A burst per queue that TX has not taken yet. It waits for the next turn (re-stamped
    // then) instead of being dropped: a full ring slows the generator down, the device under
    // test sets the pace, and every frame built either goes out or is accounted for at stop.
    struct Pending {
        rte_mbuf* pkts[kMaxBurst];
        FrameInfo info[kMaxBurst];
        uint16_t n = 0, off = 0;
    };

    worker::Pacer start_pacer();
    void receive(const worker::QueueRef& q);
    bool build(Pending& p);
    uint16_t fill(Pending& p, uint16_t n);
    void send(const worker::QueueRef& q, Pending& p);
    void count_sent(const Pending& p, uint16_t sent);
    void abandon(Pending& p);
    void drain();

    const Sender& s_;
    Worker& me_;
    Traffic& traffic_;
    stats::WorkerCounters& c_;
    const std::vector<worker::QueueRef>& queues_;
    rte_mempool* const pool_;
    const uint16_t burst_;
    const uint64_t hz_ = rte_get_tsc_hz();
    const bool by_bytes_;
    // Units (frames, or wire bytes) a normal frame costs.
    const double frame_units_;
    worker::Pacer pacer_;
    const bool kv_;
    const uint64_t tuples_;
    std::vector<Pending> pending_;
    rte_mbuf* rx_[kMaxBurst];
    // Every frame that comes back is the generator's to count (foreign ones included); the
    // RX step sends what the host's kernel sent, with --exception-path.
    RxStep rx_step_;
    uint64_t next_offer_ = 0;  // of the round trips to --metrics
};

Sender::Loop::Loop(Sender& sender, WorkerContext& ctx)
    : s_(sender),
      me_(*sender.workers_[ctx.slot.index]),
      traffic_(me_.traffic),
      c_(ctx.counters),
      queues_(ctx.slot.queues),
      pool_(sender.rt_.pool()),
      burst_(uint16_t(ctx.burst)),
      by_bytes_(sender.opt_.rate_gbps > 0),
      frame_units_(by_bytes_ ? double(sender.plan_.frame_len() + pkt::kWireOverhead) : 1.0),
      pacer_(start_pacer()),
      kv_(sender.plan_.config().kind == Kind::kvagg),
      tuples_(sender.plan_.config().tuples),
      pending_(ctx.slot.queues.size()),
      rx_step_(ctx) {}

// Marks the start of sending. After a stall (preempted, TX ring full) the worker catches up by
// a burst or --catch-up of traffic, whichever is more.
worker::Pacer Sender::Loop::start_pacer() {
    const GenOptions& opt = s_.opt_;
    const double rate = by_bytes_ ? opt.rate_gbps * 1e9 / 8 : opt.rate_pps;
    const double worker_rate = rate / s_.active_;
    me_.send_start = rte_rdtsc();
    if (rate <= 0) return worker::Pacer();
    return worker::Pacer(worker_rate, hz_, me_.send_start,
                         std::max(burst_ * frame_units_, worker_rate * opt.catch_up_s));
}

void Sender::Loop::receive(const worker::QueueRef& q) {
    const RxBurst b = rx_step_.receive(q, rx_, ServesAll{});
    const uint16_t n = b.kept;
    if (n == 0) return;
    const uint64_t now = rte_rdtsc();
    if (now >= next_offer_) {
        me_.latency.offer(me_.returns.latency_ns());
        next_offer_ = now + hz_;
    }
    uint64_t bytes = 0, counts[3] = {0, 0, 0};
    for (uint16_t i = 0; i < n; ++i) {
        bytes += rte_pktmbuf_pkt_len(rx_[i]);
        ++counts[unsigned(me_.returns.on_frame(rte_pktmbuf_mtod(rx_[i], const uint8_t*),
                                               rte_pktmbuf_data_len(rx_[i]), now))];
    }
    rte_pktmbuf_free_bulk(rx_, n);
    c_.app[idx(GenCounter::foreign)].add(counts[unsigned(Return::foreign)]);
    c_.app[idx(GenCounter::reordered)].add(counts[unsigned(Return::reordered)]);
    c_.app[idx(GenCounter::returned)].add(counts[unsigned(Return::in_order)] +
                                          counts[unsigned(Return::reordered)]);
    rx_step_.count(b, bytes);
}

// Builds a new burst into p; false when the pacer or the pool says not now.
bool Sender::Loop::build(Pending& p) {
    uint64_t want = std::min<uint64_t>(burst_, me_.quota);
    if (pacer_.paced()) {
        const double credit = pacer_.credit(rte_rdtsc());
        if (credit <= 0) return false;
        want = std::min<uint64_t>(want, uint64_t(std::ceil(credit / frame_units_)));
    }
    const auto n = uint16_t(want);
    if (n == 0 || rte_pktmbuf_alloc_bulk(pool_, p.pkts, n) != 0) return false;
    p.n = fill(p, n);
    p.off = 0;
    return p.n > 0;
}

// Writes the next n frames into p's mbufs; frames longer than an mbuf are built in the
// scratch buffer and copied into a chain. Returns how many were built (fewer when the pool ran
// out of segments: the rest are freed and counted).
uint16_t Sender::Loop::fill(Pending& p, uint16_t n) {
    for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = p.pkts[i];
        if (me_.scratch.empty()) {
            p.info[i] = traffic_.next(rte_pktmbuf_mtod(m, uint8_t*));
            m->data_len = uint16_t(p.info[i].len);
            m->pkt_len = p.info[i].len;
            continue;
        }
        p.info[i] = traffic_.next(me_.scratch.data());
        if (!fill_chain(pool_, m, me_.scratch.data(), p.info[i].len)) {
            traffic_.unsend(me_.scratch.data(), p.info[i]);
            c_.drop(GenDrop::no_mbuf).add(1);
            rte_pktmbuf_free_bulk(p.pkts + i, n - i);
            return i;
        }
    }
    return n;
}

void Sender::Loop::send(const worker::QueueRef& q, Pending& p) {
    if (p.n == 0 && !build(p)) return;
    // One TX time for the burst, read as late as possible.
    const uint64_t tsc = rte_rdtsc();
    const uint64_t ns = s_.clock_.ns(tsc);
    for (uint16_t i = p.off; i < p.n; ++i)
        if (p.info[i].expects_return)
            traffic_.stamp_tx(rte_pktmbuf_mtod(p.pkts[i], uint8_t*), tsc, ns);
    const uint16_t sent = rte_eth_tx_burst(q.port, q.queue, p.pkts + p.off, p.n - p.off);
    count_sent(p, sent);
    p.off += sent;
    if (p.off == p.n) p.n = p.off = 0;
}

// The `sent` frames from p.off on: paid to the pacer, off the quota, counted.
void Sender::Loop::count_sent(const Pending& p, uint16_t sent) {
    uint64_t bytes = 0, back = 0, kv_tuples = 0;
    for (uint16_t i = p.off; i < p.off + sent; ++i) {
        bytes += p.info[i].len;
        back += p.info[i].expects_return;
        kv_tuples += kv_ && p.info[i].cls == FrameClass::normal ? tuples_ : 0;
    }
    if (pacer_.paced()) pacer_.spend(by_bytes_ ? double(bytes + sent * pkt::kWireOverhead) : sent);
    me_.quota -= sent;
    c_.app[idx(GenCounter::expected_back)].add(back);
    c_.app[idx(GenCounter::tuples)].add(kv_tuples);
    c_.tx_bytes.add(bytes);
    c_.tx_packets.add(sent);
}

// Frames still waiting at a stop never went out: freed, counted, and out of the expected
// sums (newest first).
void Sender::Loop::abandon(Pending& p) {
    for (uint16_t i = p.n; i-- > p.off;) {
        const uint8_t* data = rte_pktmbuf_mtod(p.pkts[i], const uint8_t*);
        if (p.pkts[i]->nb_segs > 1)
            data = static_cast<const uint8_t*>(
                rte_pktmbuf_read(p.pkts[i], 0, p.info[i].len, me_.scratch.data()));
        traffic_.unsend(data, p.info[i]);
    }
    if (p.n > p.off) {
        rte_pktmbuf_free_bulk(p.pkts + p.off, p.n - p.off);
        c_.tx_full().add(p.n - p.off);
    }
    p.n = p.off = 0;
}

// Returns still in flight: keep receiving for the drain time.
void Sender::Loop::drain() {
    const uint64_t until = me_.send_end + uint64_t(s_.opt_.drain_s * double(hz_));
    while (rte_rdtsc() < until) {
        worker::report_quiescent();
        rx_step_.start_round();
        for (const worker::QueueRef& q : queues_) receive(q);
    }
}

void Sender::Loop::run() {
    while (me_.quota > 0 && worker::keep_polling()) {
        rx_step_.start_round();
        for (size_t i = 0; i < queues_.size(); ++i) {
            if (me_.quota > 0) send(queues_[i], pending_[i]);
            receive(queues_[i]);
        }
    }
    me_.send_end = rte_rdtsc();
    for (Pending& p : pending_) abandon(p);
    if (!kv_) drain();  // kvagg returns nothing
}

void Sender::work(WorkerContext& ctx) {
    Loop(*this, ctx).run();
    if (finished_.fetch_add(1) + 1 == active_) worker::request_stop();
}

}  // namespace linerate::gen
