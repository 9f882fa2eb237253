#include "stats/report.hpp"

#include <rte_cycles.h>

#include <fmt/core.h>

#include "pkt/headers.hpp"

namespace linerate::stats {

Rates rates(const Totals& t, double s) {
    Rates r;
    if (s <= 0) return r;
    auto gbps = [s](uint64_t bytes, uint64_t pkts) {
        return double(bytes + pkt::kWireOverhead * pkts) * 8 / s / 1e9;
    };
    r.rx_mpps = double(t.rx_packets) / s / 1e6;
    r.tx_mpps = double(t.tx_packets) / s / 1e6;
    r.rx_gbps = gbps(t.rx_bytes, t.rx_packets);
    r.tx_gbps = gbps(t.tx_bytes, t.tx_packets);
    return r;
}

namespace {

Totals minus(const Totals& a, const Totals& b) {
    Totals d = a;
    d.rx_packets -= b.rx_packets;
    d.rx_bytes -= b.rx_bytes;
    d.tx_packets -= b.tx_packets;
    d.tx_bytes -= b.tx_bytes;
    for (size_t i = 0; i < d.drops.size() && i < b.drops.size(); ++i) d.drops[i] -= b.drops[i];
    for (size_t i = 0; i < d.app.size() && i < b.app.size(); ++i) d.app[i] -= b.app[i];
    return d;
}

std::string drop_details(const StatsBoard& board, const Totals& t) {
    std::string s;
    for (unsigned i : board.shown_drops())
        if (t.drops[i]) s += fmt::format(", {} {}", board.drop_reasons()[i].text, t.drops[i]);
    return s;
}

}  // namespace

std::string interval_line(const StatsBoard& board, const Totals& now, const Totals& before,
                          double seconds) {
    Totals d = minus(now, before);
    Rates r = rates(d, seconds);
    std::string line = fmt::format(
        "[{}] rx {:.3f} Mpps {:.3f} Gbps | tx {:.3f} Mpps {:.3f} Gbps | drops {}{}", board.app(),
        r.rx_mpps, r.rx_gbps, r.tx_mpps, r.tx_gbps, d.dropped(), drop_details(board, d));
    for (unsigned i : board.shown_counters())
        line += fmt::format(" | {} {:.3f} M/s", board.app_counters()[i].text,
                            double(d.app[i]) / seconds / 1e6);
    return line;
}

std::string final_summary(const StatsBoard& board, double seconds, unsigned in_use,
                          unsigned pmd_held) {
    Totals t = board.totals();
    Rates r = rates(t, seconds);
    std::string s = fmt::format("{} summary over {:.3f} s\n", board.app(), seconds);
    s += fmt::format("  rx {} packets {} bytes ({:.3f} Mpps, {:.3f} Gbps)\n", t.rx_packets,
                     t.rx_bytes, r.rx_mpps, r.rx_gbps);
    s += fmt::format("  tx {} packets {} bytes ({:.3f} Mpps, {:.3f} Gbps)\n", t.tx_packets,
                     t.tx_bytes, r.tx_mpps, r.tx_gbps);
    s += fmt::format("  dropped {}\n", t.dropped());
    s += fmt::format("  cycles per packet {:.1f} (TSC {:.3f} GHz, {} busy cycles)\n",
                     t.cycles_per_packet(), double(rte_get_tsc_hz()) / 1e9, t.busy_cycles);
    for (unsigned i : board.shown_drops())
        s += fmt::format("    {:<24} {}\n", board.drop_reasons()[i].text, t.drops[i]);
    for (unsigned i : board.shown_counters())
        s += fmt::format("  {:<26} {}\n", board.app_counters()[i].text, t.app[i]);
    if (board.workers() > 1)
        for (unsigned w = 0; w < board.workers(); ++w) {
            Totals wt = board.worker_totals(w);
            s += fmt::format("  worker {}: rx {} tx {} dropped {} cycles per packet {:.1f}\n", w,
                             wt.rx_packets, wt.tx_packets, wt.dropped(), wt.cycles_per_packet());
        }
    s += fmt::format("  mempool in use at exit {}", in_use);
    if (pmd_held) s += fmt::format(" (and {} kept by the PMDs, not a leak)", pmd_held);
    return s;
}

nlohmann::json drops_json(const StatsBoard& board, const Totals& t) {
    nlohmann::json drops = nlohmann::json::object();
    for (unsigned i : board.shown_drops())
        drops[std::string(board.drop_reasons()[i].key)] = t.drops[i];
    return drops;
}

nlohmann::json figures_json(const StatsBoard& board, const Totals& t, double seconds) {
    Rates r = rates(t, seconds);
    nlohmann::json j;
    j["rx_packets"] = t.rx_packets;
    j["tx_packets"] = t.tx_packets;
    j["rx_bytes"] = t.rx_bytes;
    j["tx_bytes"] = t.tx_bytes;
    j["rx_mpps"] = r.rx_mpps;
    j["tx_mpps"] = r.tx_mpps;
    j["rx_gbps"] = r.rx_gbps;
    j["tx_gbps"] = r.tx_gbps;
    j["drops"] = drops_json(board, t);
    j["dropped"] = t.dropped();
    j["busy_cycles"] = t.busy_cycles;
    j["cycles_per_packet"] = t.cycles_per_packet();
    for (unsigned i : board.shown_counters())
        j[std::string(board.app_counters()[i].key)] = t.app[i];
    return j;
}

nlohmann::json final_json(const StatsBoard& board, double seconds, unsigned in_use,
                          unsigned pmd_held) {
    nlohmann::json j = figures_json(board, board.totals(), seconds);
    j["app"] = board.app();
    j["duration_s"] = seconds;
    j["mempool_in_use_at_exit"] = in_use;
    j["pmd_held"] = pmd_held;
    j["tsc_hz"] = rte_get_tsc_hz();
    j["workers"] = nlohmann::json::array();
    for (unsigned w = 0; w < board.workers(); ++w) {
        nlohmann::json wj = figures_json(board, board.worker_totals(w), seconds);
        wj["worker"] = w;
        j["workers"].push_back(wj);
    }
    return j;
}

nlohmann::json live_json(const StatsBoard& board, double seconds) {
    nlohmann::json j = figures_json(board, board.totals(), seconds);
    j["app"] = board.app();
    j["uptime_s"] = seconds;
    j["tsc_hz"] = rte_get_tsc_hz();
    for (const char* key : {"rx_packets", "tx_packets", "dropped", "cycles_per_packet"})
        j[std::string("workers_") + key] = nlohmann::json::array();
    for (unsigned w = 0; w < board.workers(); ++w) {
        Totals t = board.worker_totals(w);
        j["workers_rx_packets"].push_back(t.rx_packets);
        j["workers_tx_packets"].push_back(t.tx_packets);
        j["workers_dropped"].push_back(t.dropped());
        j["workers_cycles_per_packet"].push_back(t.cycles_per_packet());
    }
    return j;
}

}  // namespace linerate::stats
