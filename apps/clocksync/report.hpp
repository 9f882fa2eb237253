#pragma once
// The client's results for people and programs: its figures (syncs, violations, epsilon, rtt,
// theta, ...: each declared once for the final JSON, /linerate/clocksync telemetry and
// --metrics), its other final JSON keys (timeouts, rounds, ...) and the lines of the final
// summary. No EAL.
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
// `session` (the JSON). θ is signed: telemetry carries it as a string (offsets between
// machines' monotonic clocks exceed 32 bits).
stats::FigureSet client_figures(const ClientSession& session, const SyncedClock& synced);

// Adds the client's keys that are not figures to the final JSON object `j`.
void add_client_json(nlohmann::json& j, const ClientReport& r);
std::string client_summary_text(const ClientReport& r);

}  // namespace linerate::clocksync
