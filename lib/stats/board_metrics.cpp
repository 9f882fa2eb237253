#include "stats/board_metrics.hpp"

#include <string>

namespace linerate::stats {

namespace {

std::string text(unsigned n) {
    return std::to_string(n);
}

// One worker's figures (`name`: its index, or "xdp" for the kernel tier).
void add_worker_metrics(const StatsBoard& board, const Totals& t, const std::string& name,
                        Metrics& m) {
    const MetricLabels worker = {{"worker", name}};
    m.add("linerate_rx_packets_total", "Frames the worker received", MetricType::counter, worker,
          double(t.rx_packets));
    m.add("linerate_rx_bytes_total", "Bytes of the frames the worker received", MetricType::counter,
          worker, double(t.rx_bytes));
    m.add("linerate_tx_packets_total", "Frames the worker sent", MetricType::counter, worker,
          double(t.tx_packets));
    m.add("linerate_tx_bytes_total", "Bytes of the frames the worker sent", MetricType::counter,
          worker, double(t.tx_bytes));
    m.add("linerate_busy_cycles_total",
          "TSC cycles the worker was busy: from each RX poll that returned frames to the next",
          MetricType::counter, worker, double(t.busy_cycles));
    m.add("linerate_cycles_per_packet", "Busy TSC cycles per frame received (docs/capacity.md)",
          MetricType::gauge, worker, t.cycles_per_packet());
    for (unsigned i : board.shown_drops())
        m.add("linerate_drops_total", "Frames the worker dropped, by reason", MetricType::counter,
              {{"worker", name}, {"reason", std::string(board.drop_reasons()[i].key)}},
              double(t.drops[i]));
    for (unsigned i : board.shown_counters())
        m.add("linerate_app_events_total",
              "The app's own counters (its JSON keys: tuples, requests, syncs, ...)",
              MetricType::counter,
              {{"worker", name}, {"counter", std::string(board.app_counters()[i].key)}},
              double(t.app[i]));
}

}  // namespace

void add_board_metrics(const StatsBoard& board, Metrics& m) {
    for (unsigned w = 0; w < board.workers(); ++w)
        add_worker_metrics(board, board.worker_totals(w), text(w), m);
    // The XDP program's frames (--datapath xdp on an interface): worker "xdp".
    if (board.has_kernel_tier()) add_worker_metrics(board, board.kernel_tier_totals(), "xdp", m);
}

void add_port_drop_metrics(const std::vector<PortDrops>& ports, Metrics& m) {
    for (const PortDrops& p : ports) {
        const std::pair<const char*, uint64_t> kinds[] = {
            {"ierrors", p.ierrors},           {"imissed", p.imissed},
            {"rx_nombuf", p.rx_nombuf},       {"oerrors", p.oerrors},
            {"rx_ring_full", p.rx_ring_full}, {"rx_invalid", p.rx_invalid},
            {"tx_invalid", p.tx_invalid}};
        for (const auto& [kind, n] : kinds)
            m.add("linerate_port_drops_total",
                  "Frames the port dropped or failed to send itself (rte_eth_stats, AF_XDP "
                  "socket drops), by kind",
                  MetricType::counter, {{"port", text(p.port)}, {"kind", kind}}, double(n));
    }
}

}  // namespace linerate::stats
