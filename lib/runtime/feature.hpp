#pragma once
// A runtime feature: an optional part of the runtime (pcap test mode, AF_XDP ports and XDP
// steering, the exception path, and what later issues add) or an app's service (its tables and
// control thread, its report: Runtime::add_feature) as one object with a
// hook per stage, the one way to extend the runtime,
// the way testpmd's fwd_engine keeps a forwarding mode apart from the framework that owns ports
// and options. The runtime calls every feature's hooks in stage order (runtime.hpp, and
// docs/architecture.md); a hook's default does nothing. No hook runs per packet: what a worker
// needs of a feature it finds in its WorkerContext.
#include <rte_mempool.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "eal/port.hpp"
#include "mem/mempool.hpp"
#include "stats/counters.hpp"
#include "stats/figures.hpp"
#include "stats/metrics.hpp"

namespace linerate {

struct WorkerContext;

// What a feature's start hook sees: the run's pool and the app's ports, started, and the stats
// board.
struct StartedRun {
    const std::string& app;
    rte_mempool* pool;
    const std::vector<std::unique_ptr<eal::Port>>& ports;
    stats::StatsBoard& board;
};

// What the main lcore's monitor hands every feature at each tick.
struct MonitorTick {
    double now_s;
    uint64_t rx_packets;  // the board's total
};

class Feature {
  public:
    // The monitor's tick period unless a feature asks for a shorter one.
    static constexpr std::chrono::milliseconds kDefaultTick{10};

    virtual ~Feature() = default;

    // Before the EAL: arguments it adds after the user's (`user_gave_eal_args`: the user wrote
    // EAL arguments before `--`, so no defaults are added).
    virtual void add_eal_args(std::vector<std::string>& /*args*/, bool /*user_gave_eal_args*/) {}
    // After the EAL: the ports it makes for the run, replacing the requested ones (pcap, AF_XDP).
    virtual std::optional<std::vector<uint16_t>> make_ports(unsigned /*workers*/) {
        return std::nullopt;
    }
    // Takes out of the app's ports one the feature uses itself (the exception path's TAP); may
    // configure it.
    virtual void claim_ports(std::vector<uint16_t>& /*ports*/) {}
    // The worker that polls queue 0 of `port`, when the feature made the port for one queue of
    // an interface (AF_XDP); none: worker 0.
    virtual std::optional<unsigned> first_worker(uint16_t /*port*/) const { return std::nullopt; }
    // Before the pool: what it needs of it beyond the app's ports.
    virtual void add_pool_demand(mem::PoolDemand& /*demand*/) const {}
    // After the pool and the app's ports started.
    virtual void start(const StartedRun& /*run*/) {}
    // The stats board's feature name it turns on (stats/names.hpp), or "".
    virtual std::string_view board_feature() const { return {}; }
    // What a worker finds of it in its context.
    virtual void fill_worker_context(WorkerContext& /*ctx*/) {}

    // The main lcore's monitor, while the workers run: how often the feature wants a tick (the
    // monitor ticks at the shortest period asked), and the tick (which may request a stop).
    virtual std::chrono::milliseconds tick_period() const { return kDefaultTick; }
    virtual void tick(const MonitorTick& /*tick*/) {}
    // Its state now in a few words for people (a time client: synchronized or not, and its
    // bound), or "": the service manager's STATUS= (`systemctl status`) and the end of the
    // periodic stats line. The monitor asks once a second.
    virtual std::string status() { return {}; }
    virtual void register_telemetry() {}

    // Its figures for the --metrics endpoint, on the endpoint's thread at each scrape (while the
    // workers run): it may only read, as its telemetry does.
    virtual void add_metrics(stats::Metrics& /*m*/) const {}

    // Its own figures, declared once: the runtime writes them to the final JSON, their telemetry
    // endpoint, --metrics, the final summary and the periodic stats line (stats/figures.hpp).
    // Read while the workers run: live readers only.
    virtual const stats::FigureSet* figures() const { return nullptr; }

    // Right after the workers stopped (the runtime's features first, then the app's).
    virtual void workers_stopped() {}
    // After the workers stopped, before the ports close: frees what it holds.
    virtual void drain() {}
    // Keys of the final JSON that are not figures (configuration, identities); its figures,
    // per-worker ones included, come from figures().
    virtual void add_json(nlohmann::json& /*j*/) const {}
    // Lines for the final summary that are not a list of its figures (those the runtime writes
    // from figures(), before these), or "".
    virtual std::string summary() const { return {}; }
};

}  // namespace linerate
