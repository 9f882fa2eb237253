#include "clocksync/report.hpp"

#include <fmt/core.h>

namespace linerate::clocksync {

void add_client_json(nlohmann::json& j, const ClientReport& r) {
    const ClientSummary& s = r.summary;
    j["timeouts"] = s.timeouts;
    j["rounds"] = s.rounds;
    j["rounds_kept"] = s.rounds_kept;
    j["probes_sent"] = s.probes_sent;
    j["warmups_sent"] = s.warmups_sent;
    j["warmup_echoes"] = s.warmup_echoes;
    j["responses"] = s.responses;
    j["epsilon_samples"] = s.samples;
    j["epsilon_samples_skipped"] = s.samples_skipped;
    if (s.syncs)
        j["first_sync"] = {{"after_ns", s.first_sync_after_ns},
                           {"epsilon_ns", s.first_sync_epsilon_ns}};
    else
        j["first_sync"] = nullptr;
    if (r.master_mac)
        j["master_mac"] = format_mac(*r.master_mac);
    else
        j["master_mac"] = nullptr;
    if (r.verification) {
        j["max_abs_error_ns"] = s.max_abs_error_ns;
        auto one_way = [](const RttSummary& d) {
            return nlohmann::json{{"min", d.min}, {"p50", d.p50}, {"p99", d.p99}};
        };
        j["one_way_ns"] = {{"up", one_way(s.up_ns)}, {"down", one_way(s.down_ns)}};
    }
}

std::string client_summary_text(const ClientReport& r) {
    const ClientSummary& s = r.summary;
    std::string out = fmt::format(
        "clocksync client: {} syncs in {} rounds ({} kept the previous), {} probes, {} responses, "
        "{} timeouts, master {}",
        s.syncs, s.rounds, s.rounds_kept, s.probes_sent, s.responses, s.timeouts,
        r.master_mac ? format_mac(*r.master_mac) : "not learned");
    if (s.warmups_sent)
        out += fmt::format("\n  warm-ups: {} sent, {} echoed by the master", s.warmups_sent,
                           s.warmup_echoes);
    if (s.syncs)
        out +=
            fmt::format("\n  start: first sync {:.3f} ms after the first probe, epsilon then {} ns",
                        double(s.first_sync_after_ns) / 1e6, s.first_sync_epsilon_ns);
    out += fmt::format(
        "\n  epsilon ns from the first sync on ({} samples): mean {:.1f} p50 {} p99 {} "
        "p99.9 {} max {}",
        s.samples, s.epsilon_ns.mean, s.epsilon_ns.p50, s.epsilon_ns.p99, s.epsilon_ns.p999,
        s.epsilon_ns.max);
    out +=
        fmt::format("\n  rtt ns: min {} p50 {} p99 {}", s.rtt_ns.min, s.rtt_ns.p50, s.rtt_ns.p99);
    if (r.last.synced)
        out += fmt::format("\n  last sync: theta {} ns, delta {} ns", r.last.theta_ns,
                           r.last.delta_ns);
    if (r.verification)
        out += fmt::format("\n  verification: {} violations, max |true offset - theta| {} ns",
                           s.violations, s.max_abs_error_ns);
    return out;
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

// The synchronized clock's state: θ, δ, ε₀ and flags of the sync in force.
std::vector<Figure> sync_state_figures(const ClientSession& session) {
    // A field of the sync in force: live from the render's view, final from the session.
    const auto live = [](auto SyncState::*field) {
        return [field](unsigned) { return FigureReading{live_view.snap.state.*field}; };
    };
    const auto final = [&session](auto SyncState::*field) {
        return [&session, field](unsigned) { return FigureReading{session.sync().*field}; };
    };
    return {
        {.kind = FigureKind::gauge,
         .json = "synced",
         .telemetry = "synced",
         .metric = "linerate_clocksync_synced",
         .help = "1 once the client has a good sync, else 0",
         .read_live = live(&SyncState::synced),
         .read_final = final(&SyncState::synced)},
        {.kind = FigureKind::gauge,
         .unit = FigureUnit::ns,
         .json = "theta_ns",
         .telemetry = "theta_ns",
         .metric = "linerate_clocksync_theta_seconds",
         .help = "The offset of the master's clock from the local clock (theta), last sync",
         .read_live = live(&SyncState::theta_ns),
         .read_final = final(&SyncState::theta_ns)},
        {.kind = FigureKind::gauge,
         .unit = FigureUnit::ns,
         .json = "delta_ns",
         .telemetry = "delta_ns",
         .read_live = live(&SyncState::delta_ns),
         .read_final = final(&SyncState::delta_ns)},
        {.kind = FigureKind::gauge,
         .unit = FigureUnit::ns,
         .telemetry = "eps0_ns",
         .read_live = live(&SyncState::eps0_ns)},
    };
}

// The clock now: ε (served at --metrics once synced), the local and the master's time.
std::vector<Figure> clock_now_figures() {
    return {
        {.kind = FigureKind::gauge,
         .unit = FigureUnit::ns,
         .telemetry = "epsilon_ns",
         .metric = "linerate_clocksync_epsilon_seconds",
         .help = "The bound now on |master's clock - the synchronized clock| (epsilon)",
         .read_live =
             [](unsigned) {
                 return FigureReading{live_view.now.epsilon_ns, live_view.now.synced};
             }},
        {.kind = FigureKind::gauge,
         .unit = FigureUnit::ns,
         .telemetry = "local_ns",
         .read_live = [](unsigned) { return FigureReading{live_view.now.local_ns}; }},
        {.kind = FigureKind::gauge,
         .unit = FigureUnit::ns,
         .telemetry = "master_ns",
         .read_live = [](unsigned) { return FigureReading{live_view.now.master_ns}; }},
    };
}

// What the session counted and measured: syncs, violations, ε on the grid, round trips.
std::vector<Figure> session_figures(const ClientSession& session, const SyncedClock& synced) {
    return {
        {.kind = FigureKind::histogram,
         .unit = FigureUnit::ns,
         .json = "epsilon_ns",
         .metric = "linerate_clocksync_epsilon_grid_seconds",
         .help = "Epsilon on the sample grid since the first sync",
         .json_stats = {HistStat::mean, HistStat::p50, HistStat::p99, HistStat::p999,
                        HistStat::max},
         .buckets = kClockBuckets,
         .live_histogram = [&synced](unsigned) { return synced.epsilon_ns.read(); },
         .final_histogram = [&session](unsigned) { return session.epsilon_histogram(); }},
        {.kind = FigureKind::histogram,
         .unit = FigureUnit::ns,
         .json = "rtt_ns",
         .metric = "linerate_clocksync_rtt_seconds",
         .help = "Round trips of the answered probes",
         .json_stats = {HistStat::min, HistStat::p50, HistStat::p99},
         .buckets = kClockBuckets,
         .live_histogram = [&synced](unsigned) { return synced.rtt_ns.read(); },
         .final_histogram = [&session](unsigned) { return session.rtt_histogram(); }},
        {.kind = FigureKind::total,
         .json = "syncs",
         .telemetry = "syncs",
         .metric = "linerate_clocksync_syncs_total",
         .help = "Good synchronizations",
         .read_live = [](unsigned) { return FigureReading{live_view.snap.syncs}; },
         .read_final = [&session](unsigned) { return FigureReading{session.syncs()}; }},
        {.kind = FigureKind::total,
         .json = "violations",
         .telemetry = "violations",
         .metric = "linerate_clocksync_violations_total",
         .help = "Verification mode: reads where the master's time fell outside [t - eps, t + eps]",
         .read_live = [](unsigned) { return FigureReading{live_view.snap.violations}; },
         .read_final = [&session](unsigned) { return FigureReading{session.violations()}; }},
    };
}

}  // namespace

stats::FigureSet client_figures(const ClientSession& session, const SyncedClock& synced) {
    stats::FigureSet set{"/linerate/clocksync",
                         "Synchronized clock: theta, epsilon now, syncs, violations",
                         sync_state_figures(session)};
    set.take_live = [&synced] { take_live_view(synced); };
    for (auto part : {clock_now_figures(), session_figures(session, synced)})
        set.figures.insert(set.figures.end(), part.begin(), part.end());
    return set;
}

}  // namespace linerate::clocksync
