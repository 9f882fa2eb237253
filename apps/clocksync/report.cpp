#include "clocksync/report.hpp"

#include <fmt/core.h>

namespace linerate::clocksync {

void add_client_json(nlohmann::json& j, const ClientReport& r) {
    const ClientSummary& s = r.summary;
    j["syncs"] = s.syncs;
    j["violations"] = s.violations;
    j["epsilon_ns"] = {{"mean", s.epsilon_ns.mean},
                       {"p50", s.epsilon_ns.p50},
                       {"p99", s.epsilon_ns.p99},
                       {"p999", s.epsilon_ns.p999},
                       {"max", s.epsilon_ns.max}};
    j["rtt_ns"] = {{"min", s.rtt_ns.min}, {"p50", s.rtt_ns.p50}, {"p99", s.rtt_ns.p99}};
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
    j["synced"] = r.last.synced;
    j["theta_ns"] = r.last.theta_ns;
    j["delta_ns"] = r.last.delta_ns;
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

nlohmann::json client_telemetry(const SyncSnapshot& s, const ClockReading& now) {
    nlohmann::json j;
    j["synced"] = s.state.synced ? 1u : 0u;
    j["theta_ns"] = std::to_string(s.state.theta_ns);
    j["epsilon_ns"] = now.epsilon_ns;
    j["eps0_ns"] = s.state.eps0_ns;
    j["delta_ns"] = s.state.delta_ns;
    j["syncs"] = s.syncs;
    j["violations"] = s.violations;
    j["local_ns"] = now.local_ns;
    j["master_ns"] = now.master_ns;
    return j;
}

namespace {
// 100 ns to 10 ms: ε and RTT on a host (a few µs) to a congested path.
constexpr double kClockBuckets[] = {1e-7,   2.5e-7, 5e-7, 1e-6,   2.5e-6, 5e-6, 1e-5,
                                    2.5e-5, 5e-5,   1e-4, 2.5e-4, 5e-4,   1e-3, 1e-2};
}  // namespace

void add_client_metrics(stats::Metrics& m, const SyncSnapshot& s, const ClockReading& now,
                        const stats::LogHistogram& epsilon, const stats::LogHistogram& rtt) {
    using stats::MetricType;
    m.add("linerate_clocksync_synced", "1 once the client has a good sync, else 0",
          MetricType::gauge, {}, s.state.synced ? 1 : 0);
    if (now.synced)
        m.add("linerate_clocksync_epsilon_seconds",
              "The bound now on |master's clock - the synchronized clock| (epsilon)",
              MetricType::gauge, {}, double(now.epsilon_ns) * 1e-9);
    m.add("linerate_clocksync_theta_seconds",
          "The offset of the master's clock from the local clock (theta), last sync",
          MetricType::gauge, {}, double(s.state.theta_ns) * 1e-9);
    m.add_histogram("linerate_clocksync_epsilon_grid_seconds",
                    "Epsilon on the sample grid since the first sync", {}, epsilon, 1e-9,
                    kClockBuckets);
    m.add_histogram("linerate_clocksync_rtt_seconds", "Round trips of the answered probes", {}, rtt,
                    1e-9, kClockBuckets);
    m.add("linerate_clocksync_syncs_total", "Good synchronizations", MetricType::counter, {},
          double(s.syncs));
    m.add("linerate_clocksync_violations_total",
          "Verification mode: reads where the master's time fell outside [t - eps, t + eps]",
          MetricType::counter, {}, double(s.violations));
}

}  // namespace linerate::clocksync
