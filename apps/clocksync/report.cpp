#include "clocksync/report.hpp"

#include <fmt/core.h>

#include <cstdlib>
#include <span>

#include "clocksync/clockbound.hpp"
#include "pkt/address.hpp"

namespace linerate::clocksync {

namespace {

// A duration in ns for people: "40 ns", "1.2 µs", "45.1 ms", "3.2 s" (a sign kept).
std::string human_ns(int64_t ns) {
    const double a = std::abs(double(ns));
    if (a < 1e3) return fmt::format("{} ns", ns);
    if (a < 1e6) return fmt::format("{:.1f} µs", double(ns) / 1e3);
    if (a < 1e9) return fmt::format("{:.1f} ms", double(ns) / 1e6);
    return fmt::format("{:.1f} s", double(ns) / 1e9);
}

}  // namespace

std::string client_status(const SyncState& s, uint64_t now_local, uint64_t max_age_ns,
                          uint32_t master_ip) {
    const std::string master = pkt::format_ipv4(master_ip);
    if (!s.synced) return "not synchronized: no sync from " + master + " yet";
    const int64_t age_ns = diff_ns(now_local, s.t4);
    const std::string epsilon = human_ns(int64_t(s.epsilon_at(now_local)));
    if (clockbound_status(s, now_local, max_age_ns) != ClockBoundStatus::synchronized)
        return fmt::format("not synchronized: no sync from {} for {:.1f} s, ε {}", master,
                           double(age_ns) / 1e9, epsilon);
    return fmt::format("synchronized, ε {}, θ {}, last sync {:.1f} s ago", epsilon,
                       human_ns(s.theta_ns), double(age_ns) / 1e9);
}

void add_client_json(nlohmann::json& j, const ClientReport& r) {
    const ClientSummary& s = r.summary;
    if (!s.syncs) j["first_sync"] = nullptr;  // its keys are figures once there is a sync
    if (r.master_mac)
        j["master_mac"] = format_mac(*r.master_mac);
    else
        j["master_mac"] = nullptr;
    if (r.verification) {
        auto one_way = [](const RttSummary& d) {
            return nlohmann::json{{"min", d.min}, {"p50", d.p50}, {"p99", d.p99}};
        };
        j["one_way_ns"] = {{"up", one_way(s.up_ns)}, {"down", one_way(s.down_ns)}};
    }
}

namespace {

// 100 ns to 10 ms: ε and RTT on a host (a few µs) to a congested path.
constexpr double kClockBuckets[] = {1e-7,   2.5e-7, 5e-7, 1e-6,   2.5e-6, 5e-6, 1e-5,
                                    2.5e-5, 5e-5,   1e-4, 2.5e-4, 5e-4,   1e-3, 1e-2};

using stats::Figure;
using stats::FigureKind;
using stats::FigureReading;
using stats::FigureUnit;
using stats::HistStat;
using stats::LogHistogram;

// One live render's view of the clock (FigureSet::take_live): the sync in force and the clock
// read from it, so that a telemetry reply's θ, ε, local and master time belong together, as
// they did when one function wrote them. thread_local: telemetry and --metrics render on their
// own threads.
struct LiveView {
    SyncSnapshot snap;
    ClockReading now;
};
thread_local LiveView live_view;

void take_live_view(const SyncedClock& synced) {
    live_view.snap = synced.snapshot();
    live_view.now = SyncedClock::at(live_view.snap, synced.local().now());
}

// The synchronized clock's state: θ, δ, ε₀ and flags of the sync in force, each a gauge read
// live from the render's view and at the end from the session (those with a JSON key), under
// one name in the JSON and telemetry. θ and δ end the summary's "last sync" line once synced.
std::vector<Figure> sync_state_figures(const ClientSession& session) {
    const auto state = [&session](auto SyncState::*field, Figure f) {
        f.kind = FigureKind::gauge;
        f.read_live = [field](unsigned) { return FigureReading{live_view.snap.state.*field}; };
        if (!f.json.empty())
            f.read_final = [&session, field](unsigned) {
                return FigureReading{session.sync().*field};
            };
        if (!f.text.empty()) f.shown = [&session] { return session.sync().synced; };
        return f;
    };
    constexpr FigureUnit ns = FigureUnit::ns;
    return {
        state(&SyncState::synced, {.json = "synced",
                                   .telemetry = "synced",
                                   .metric = "linerate_clocksync_synced",
                                   .help = "1 once the client has a good sync, else 0"}),
        state(&SyncState::theta_ns,
              {.unit = ns,
               .json = "theta_ns",
               .telemetry = "theta_ns",
               .metric = "linerate_clocksync_theta_seconds",
               .help = "The offset of the master's clock from the local clock (theta), last sync",
               .text = "theta",
               .line = "last sync"}),
        state(&SyncState::delta_ns, {.unit = ns,
                                     .json = "delta_ns",
                                     .telemetry = "delta_ns",
                                     .text = "delta",
                                     .line = "last sync"}),
        state(&SyncState::eps0_ns, {.unit = ns, .telemetry = "eps0_ns"}),
    };
}

// The clock now: ε (served at --metrics once synced; before, telemetry's unbounded UINT64_MAX),
// the local and the master's time, in telemetry under their names.
std::vector<Figure> clock_now_figures() {
    const auto now = [](const char* key, uint64_t ClockReading::*field) {
        return Figure{
            .kind = FigureKind::gauge,
            .unit = FigureUnit::ns,
            .telemetry = key,
            .read_live = [field](unsigned) { return FigureReading{live_view.now.*field}; }};
    };
    std::vector<Figure> f = {now("epsilon_ns", &ClockReading::epsilon_ns),
                             now("local_ns", &ClockReading::local_ns),
                             now("master_ns", &ClockReading::master_ns)};
    f[0].metric = "linerate_clocksync_epsilon_seconds";
    f[0].help = "The bound now on |master's clock - the synchronized clock| (epsilon)";
    f[0].read_live = [](unsigned) {
        return FigureReading{live_view.now.epsilon_ns, live_view.now.synced};
    };
    return f;
}

// The syncs so far: a total live and final, first on the summary's first line.
Figure syncs_figure(const ClientSession& session) {
    return {.json = "syncs",
            .telemetry = "syncs",
            .metric = "linerate_clocksync_syncs_total",
            .help = "Good synchronizations",
            .text = "syncs",
            .read_live = [](unsigned) { return FigureReading{live_view.snap.syncs}; },
            .read_final = [&session](unsigned) { return FigureReading{session.syncs()}; }};
}

// The run's counts at the end (ClientReport, filled once the workers stopped): the summary's
// first line, its warm-ups line (when there were any) and its first-sync line (once synced).
std::vector<Figure> report_figures(const ClientReport& r) {
    const auto count = [&r](const char* json, const char* text, auto ClientSummary::*field) {
        return Figure{.json = json, .text = text, .read_final = [&r, field](unsigned) {
                          return FigureReading{r.summary.*field};
                      }};
    };
    std::vector<Figure> f = {
        count("rounds", "rounds", &ClientSummary::rounds),
        count("rounds_kept", "rounds kept", &ClientSummary::rounds_kept),
        count("rounds_runner_up", "", &ClientSummary::rounds_runner_up),
        count("intersections_empty", "", &ClientSummary::intersections_empty),
        count("probes_sent", "probes", &ClientSummary::probes_sent),
        count("responses", "responses", &ClientSummary::responses),
        count("timeouts", "timeouts", &ClientSummary::timeouts),
        count("probes_in_flight", "", &ClientSummary::probes_in_flight),
        count("epsilon_samples", "epsilon samples", &ClientSummary::samples),
        count("epsilon_samples_skipped", "", &ClientSummary::samples_skipped),
        {.text = "master",
         .read_final =
             [&r](unsigned) {
                 return FigureReading{r.master_mac ? format_mac(*r.master_mac) : "not learned"};
             }},
        count("warmups_sent", "sent", &ClientSummary::warmups_sent),
        count("warmup_echoes", "echoed", &ClientSummary::warmup_echoes),
        count("first_sync.after_ns", "after", &ClientSummary::first_sync_after_ns),
        count("first_sync.epsilon_ns", "epsilon", &ClientSummary::first_sync_epsilon_ns),
    };
    for (Figure& warmups : std::span(f).subspan(f.size() - 4, 2)) {
        warmups.line = "warm-ups";
        warmups.shown = [&r] { return r.summary.warmups_sent > 0; };
    }
    for (Figure& first : std::span(f).last(2)) {
        first.unit = FigureUnit::ns;
        first.line = "first sync";
        const auto read = first.read_final;  // known once synced (else the JSON's null)
        first.read_final = [&r, read](unsigned w) {
            FigureReading v = read(w);
            v.known = r.summary.syncs > 0;
            return v;
        };
    }
    return f;
}

// ε on the grid from the first sync on and the round trips: histograms in ns on the clock's
// buckets, read live from `synced`, at the end from the session; each a summary line.
std::vector<Figure> histogram_figures(const ClientSession& session, const SyncedClock& synced) {
    const auto histogram = [&](Figure f, const LogHistogram& (ClientSession::*final)() const,
                               stats::HistogramMirror SyncedClock::*live) {
        f.kind = FigureKind::histogram;
        f.unit = FigureUnit::ns;
        f.buckets = kClockBuckets;
        f.live_histogram = [&synced, live](unsigned) { return (synced.*live).read(); };
        f.final_histogram = [&session, final](unsigned) { return (session.*final)(); };
        return f;
    };
    return {
        histogram({.json = "epsilon_ns",
                   .metric = "linerate_clocksync_epsilon_grid_seconds",
                   .help = "Epsilon on the sample grid since the first sync",
                   .text = "epsilon",
                   .json_stats = {HistStat::mean, HistStat::p50, HistStat::p99, HistStat::p999,
                                  HistStat::max}},
                  &ClientSession::epsilon_histogram, &SyncedClock::epsilon_ns),
        histogram({.json = "rtt_ns",
                   .metric = "linerate_clocksync_rtt_seconds",
                   .help = "Round trips of the answered probes",
                   .text = "rtt",
                   .json_stats = {HistStat::min, HistStat::p50, HistStat::p99}},
                  &ClientSession::rtt_histogram, &SyncedClock::rtt_ns),
    };
}

// Verification mode: reads outside the bound, and the largest error (JSON with it only).
std::vector<Figure> verification_figures(const ClientSession& session, const ClientReport& r) {
    return {
        {.json = "violations",
         .telemetry = "violations",
         .metric = "linerate_clocksync_violations_total",
         .help = "Verification mode: reads where the master's time fell outside [t - eps, t + eps]",
         .text = "violations",
         .line = "verification",
         .shown = [&r] { return r.verification; },
         .read_live = [](unsigned) { return FigureReading{live_view.snap.violations}; },
         .read_final = [&session](unsigned) { return FigureReading{session.violations()}; }},
        {.kind = FigureKind::gauge,
         .unit = FigureUnit::ns,
         .json = "max_abs_error_ns",
         .text = "max |true offset - theta|",
         .line = "verification",
         .read_final =
             [&r](unsigned) {
                 return FigureReading{r.summary.max_abs_error_ns, r.verification};
             }},
    };
}

}  // namespace

stats::FigureSet client_figures(const ClientSession& session, const SyncedClock& synced,
                                const ClientReport& report) {
    stats::FigureSet set{"/linerate/clocksync",
                         "Synchronized clock: theta, epsilon now, syncs, violations",
                         {syncs_figure(session)}};
    set.title = "clocksync client";
    set.take_live = [&synced] { take_live_view(synced); };
    for (auto part :
         {report_figures(report), histogram_figures(session, synced), sync_state_figures(session),
          verification_figures(session, report), clock_now_figures()})
        set.figures.insert(set.figures.end(), part.begin(), part.end());
    return set;
}

}  // namespace linerate::clocksync
