#pragma once
// The runtime's own metrics (docs/metrics.md) from the stats board and the ports' drops, for the
// --metrics endpoint.
#include <vector>

#include "stats/counters.hpp"
#include "stats/metrics.hpp"
#include "stats/port_drops.hpp"

namespace linerate::stats {

// Per worker: rx/tx packets and bytes, drops by reason, the app's counters (the board's shown
// names, as the JSON's "workers" objects have them).
void add_board_metrics(const StatsBoard& board, Metrics& m);
// Per port: what it dropped itself, by kind (PortDrops' fields, the JSON's "port_drops").
void add_port_drop_metrics(const std::vector<PortDrops>& ports, Metrics& m);

}  // namespace linerate::stats
