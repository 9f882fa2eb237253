#pragma once
// The client's results for people and programs: the final JSON keys (syncs, violations,
// epsilon_ns, rtt_ns, timeouts, ...), the lines of the final summary, and the live state for
// the /linerate/clocksync telemetry command. No EAL.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "clocksync/client_session.hpp"
#include "clocksync/options.hpp"
#include "clocksync/synced_clock.hpp"
#include "stats/metrics.hpp"

namespace linerate::clocksync {

struct ClientReport {
    ClientSummary summary;
    SyncState last;  // the sync in force at the end
    std::optional<pkt::MacAddr> master_mac;
    bool verification = false;
};

// Adds the client's keys to the final JSON object `j`.
void add_client_json(nlohmann::json& j, const ClientReport& r);
std::string client_summary_text(const ClientReport& r);

// The live state: θ, ε now, syncs. θ travels as a string because DPDK 22.11 telemetry has no
// signed 64-bit values (offsets between machines' monotonic clocks exceed 32 bits).
nlohmann::json client_telemetry(const SyncSnapshot& s, const ClockReading& now);
// The same figures for the --metrics endpoint (docs/metrics.md): synced, epsilon and theta now
// (seconds), syncs and violations, and the session's ε and RTT histograms (ns).
void add_client_metrics(stats::Metrics& m, const SyncSnapshot& s, const ClockReading& now,
                        const stats::LogHistogram& epsilon, const stats::LogHistogram& rtt);

}  // namespace linerate::clocksync
