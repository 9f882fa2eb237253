#pragma once
// What the stats board says to people and programs: the periodic line, the final summary and
// the JSON object of docs/json.md (app, duration_s, rx/tx packets, Mpps, Gbps, drops, workers...).
#include <nlohmann/json.hpp>

#include <string>

#include "stats/counters.hpp"

namespace linerate::stats {

struct Rates {
    double rx_mpps = 0, tx_mpps = 0, rx_gbps = 0, tx_gbps = 0;
};

// Rates over `seconds`; Gbps counts 24 bytes of wire overhead per frame, as Pktgen-DPDK does.
Rates rates(const Totals& t, double seconds);

// "[<app>] rx 12.30 Mpps 8.27 Gbps | tx 12.30 Mpps 8.27 Gbps | drops 0" over an interval,
// followed by non-zero drop reasons.
std::string interval_line(const StatsBoard& board, const Totals& now, const Totals& before,
                          double seconds);

// mempool_in_use: mbufs still in use after the ports closed that no PMD keeps (a leak);
// pmd_held: mbufs a PMD keeps after close and never returns (net_af_xdp's fill ring).
std::string final_summary(const StatsBoard& board, double seconds, unsigned mempool_in_use,
                          unsigned pmd_held = 0);

// {drop key: count}, tx_full first: the JSON's "drops" and /linerate/drops.
nlohmann::json drops_json(const StatsBoard& board, const Totals& t);
nlohmann::json figures_json(const StatsBoard& board, const Totals& t, double seconds);
nlohmann::json final_json(const StatsBoard& board, double seconds, unsigned mempool_in_use,
                          unsigned pmd_held = 0);
// The live figures for telemetry: totals, rates since start, drops, per-worker arrays (flat
// enough for rte_telemetry's one level of nesting).
nlohmann::json live_json(const StatsBoard& board, double seconds);

}  // namespace linerate::stats
