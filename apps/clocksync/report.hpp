#pragma once
// The client's results for people and programs: its figures (syncs, rounds, violations,
// epsilon, rtt, theta, ...: each declared once for the final JSON, /linerate/clocksync
// telemetry, --metrics and the final summary) and its other final JSON keys (the master's MAC,
// the one-way delays). No EAL.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "clocksync/client_session.hpp"
#include "clocksync/options.hpp"
#include "clocksync/synced_clock.hpp"
#include "stats/figures.hpp"

namespace linerate::clocksync {

struct ClientReport {
    ClientSummary summary;
    SyncState last;  // the sync in force at the end
    std::optional<pkt::MacAddr> master_mac;
    bool verification = false;
};

// The client's figures: read live from `synced` (telemetry, --metrics), at the end from
// `session` and `report` (the JSON and the summary: `report` is filled once the workers
// stopped). θ is signed: telemetry carries it as a string (offsets between machines' monotonic
// clocks exceed 32 bits).
stats::FigureSet client_figures(const ClientSession& session, const SyncedClock& synced,
                                const ClientReport& report);

// The client's state at local time `now_local`, in a few words for `systemctl status` (STATUS=)
// and the periodic stats line, as `chronyc tracking` gives chrony's: "synchronized, ε 1.2 µs,
// θ -40 ns, last sync 0.1 s ago" while its last good sync is at most `max_age_ns` old
// (--export-max-age-ms: ClockBound's Synchronized), else "not synchronized: no sync from
// MASTER for 3.2 s, ε 45.1 µs" (ClockBound's FreeRunning) or "not synchronized: no sync from
// MASTER yet".
std::string client_status(const SyncState& s, uint64_t now_local, uint64_t max_age_ns,
                          uint32_t master_ip);

// Adds the client's keys that are not figures to the final JSON object `j`.
void add_client_json(nlohmann::json& j, const ClientReport& r);

}  // namespace linerate::clocksync
