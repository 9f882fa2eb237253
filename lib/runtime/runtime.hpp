#pragma once
// Everything an app needs around its packet kernel, in the l2fwd order: parse the command line,
// init the EAL, configure ports, place the mbuf pool in its region, map workers to lcores and
// queues, run the worker loops while the main lcore prints stats, then stop, drain, check for
// leaked mbufs, print the summary and write the JSON.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command_line.hpp"
#include "eal/port.hpp"
#include "mem/region_spec.hpp"
#include "runtime/feature.hpp"
#include "stats/counters.hpp"
#include "stats/port_drops.hpp"
#include "worker/worker_map.hpp"
#include "xdp/steer/steer_program.hpp"

namespace linerate {

namespace eal {
class Eal;
}
namespace mem {
class PacketPool;
}
class ExceptionPath;
class ServiceNotify;
struct XdpDatapathSpec;
class XdpDatapath;

// A region option of the app's own (e.g. an --aggbuf), resolved with the runtime's catalogue
// (--regions, --region) before the EAL: a bad one exits 2 at once.
struct AppRegion {
    std::string flag;  // "--aggbuf"
    std::string value;
};

struct AppInfo {
    std::string name;
    std::string description;
    // The app's drop list and counters (stats/names.hpp: LINERATE_DROPS, LINERATE_COUNTERS,
    // or stats::kRuntimeDrops / kRuntimeCounters for none of its own).
    stats::Names drop_reasons = stats::kRuntimeDrops;
    stats::Names counters = stats::kRuntimeCounters;
    // What the app serves, for the XDP steering program (--xdp-steer app), once the command
    // line is parsed; unset: every IPv4 frame.
    std::function<xdp::SteerFilter()> xdp_filter;
    // The steering program --af-xdp attaches: the plain one, or the app's with its hook
    // (xdp::SteerHook; SteerFilter::hook turns it on).
    xdp::SteerHook steer_hook = {};
    // The app's own region options, judged with the runtime's (Plan::app_region).
    std::vector<AppRegion> regions = {};
    // --datapath xdp: the app's XDP program and options (runtime/xdp_datapath_feature.hpp); none:
    // the DPDK datapath.
    std::shared_ptr<const XdpDatapathSpec> xdp_datapath = nullptr;
    // The checks of the app's option groups that need the started workers and ports in use
    // (ForwardChoice::check_against: --forward pair's pairing), which parsing cannot see:
    // Runtime::run_app runs them before the app; a cli::UsageError is one line and exit 2.
    std::function<void(const std::vector<worker::WorkerSlot>& slots,
                       const std::vector<uint16_t>& ports)>
        check_ports = {};
};

// AppInfo::check_ports from an option group's check_against(slots, ports) (ForwardChoice, an
// app's Options holding it); the group outlives the runtime.
template <typename Group>
auto check_ports_of(const Group& group) {
    return [&group](const std::vector<worker::WorkerSlot>& slots,
                    const std::vector<uint16_t>& ports) { group.check_against(slots, ports); };
}

// What the command line asks for, judged before the EAL (the runtime's first stage): every
// value that can be checked without the EAL is checked here. Apps read it instead of deriving
// it again.
struct Plan {
    mem::RegionCatalog regions;
    mem::RegionSpec netbuf;
    std::vector<std::pair<std::string, mem::RegionSpec>> app_regions;  // AppInfo::regions
    std::vector<uint16_t> ports;                     // --ports (empty: every port the EAL probes)
    xdp::SteerFilter served;                         // what the app serves (--isolate's rule)
    std::vector<std::unique_ptr<Feature>> features;  // the runtime features that are on

    // The region of AppInfo::regions' option `flag`; throws std::out_of_range for another flag.
    const mem::RegionSpec& app_region(std::string_view flag) const;
};

struct WorkerContext {
    const worker::WorkerSlot& slot;
    stats::WorkerCounters& counters;
    unsigned burst;
    unsigned tx_retries;
    ExceptionPath* exception = nullptr;  // --exception-path, or none (rx_step.hpp uses it)
    // By port id: frames from it may carry a checksum the sender left to TX offload (kernel
    // ports: AF_XDP, AF_PACKET, TAP), which a loop that sends them on must complete
    // (pkt::complete_offloaded_checksum). Empty or short: none.
    std::span<const uint8_t> unfinished_checksums = {};

    bool may_carry_unfinished_checksums(uint16_t port) const {
        return port < unfinished_checksums.size() && unfinished_checksums[port];
    }
};

class Runtime {
  public:
    // Starts from the command line as the app parsed it, once, with the common options plus its
    // own (cli::parse_or_exit with its option groups, each checked). Exits 2 on a bad region or
    // port list, 1 when the EAL or a port fails.
    Runtime(AppInfo info, cli::SplitArgs args, cli::CommonOptions& options);
    // Adds the common options to `cli`, parses and starts, for apps with no options of their
    // own. Exits 0 on --help.
    Runtime(AppInfo info, int argc, char** argv, CLI::App& cli, cli::CommonOptions& options)
        : Runtime(std::move(info), cli::parse_or_exit(cli, argc, argv, options), options) {}
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    const Plan& plan() const { return plan_; }
    rte_mempool* pool() const;
    const std::vector<std::unique_ptr<eal::Port>>& ports() const { return ports_; }
    std::vector<uint16_t> port_ids() const {
        std::vector<uint16_t> ids;
        for (const auto& p : ports_) ids.push_back(p->id());
        return ids;
    }
    const worker::WorkerMap& workers() const { return *workers_; }
    stats::StatsBoard& stats() { return *stats_; }
    const mem::RegionCatalog& regions() const { return plan_.regions; }
    const cli::CommonOptions& options() const { return options_; }
    bool pcap_mode() const { return !options_.pcap.empty(); }
    // The XDP datapath's feature (AppInfo::xdp_datapath), or none.
    XdpDatapath* xdp_datapath() const { return xdp_datapath_; }
    // Seconds the workers ran: the JSON's duration_s, set once run() stopped them (for the
    // features' workers_stopped, summary and JSON hooks).
    double elapsed_s() const { return elapsed_s_; }

    // An app's own feature (its service), the one way an app extends the runtime: from
    // register_telemetry on, its hooks run after the runtime's features' (the stages before,
    // from add_eal_args to start, are over when an app has a Runtime). Added before run(); the
    // app keeps it alive until run() returns.
    void add_feature(Feature& feature);
    // Keys the final JSON carries as they are (the app's configuration: forward, ...).
    nlohmann::json& json_keys() { return json_keys_; }

    // Runs the app on the started runtime: AppInfo::check_ports, its set-up, then its run() (the
    // exit status). A usage error found only now (cli::UsageError: ports that do not pair, a
    // region too small) is one line and exit 2, as before start-up, with the runtime closed as
    // on any return: no summary, no JSON.
    int run_app(const std::function<int()>& app);

    // Runs `worker` on every worker until a stop; returns the process exit status. A worker
    // that polls in a loop of its own makes `worker::keep_polling()` its condition (or calls
    // worker::report_quiescent() once per round): a PMD's unmap waits for it
    // (worker/quiescence.hpp).
    int run(const std::function<void(WorkerContext&)>& worker);

  private:
    // The start-up stages, in order (the constructor calls them).
    void make_plan();
    void add_features();
    std::vector<std::string> eal_arguments(const cli::SplitArgs& args);
    void start_eal(const std::vector<std::string>& eal_args);
    void start_ports();
    std::vector<uint16_t> choose_ports();
    void setup_ports(const std::vector<uint16_t>& ids);
    const eal::Port& configure_port(uint16_t id, unsigned workers, unsigned data_room);
    void start_pool_and_ports(unsigned mbufs, unsigned data_room);
    void start_features();
    void start_board(const std::vector<unsigned>& lcores,
                     const std::vector<worker::PortQueues>& port_queues);
    // The pool's mbuf data room and mbuf count for what the ports need. Throw when --mbuf-size
    // or --mbufs is below a port's need, naming the figure.
    unsigned mbuf_data_room(const std::vector<eal::PoolNeeds>& needs) const;
    unsigned pool_mbufs(const std::vector<eal::PoolNeeds>& needs,
                        const mem::PoolDemand& demand) const;
    void note_kernel_ports();

    // The run and what follows it.
    WorkerContext worker_context(const worker::WorkerSlot& slot);
    void monitor(ServiceNotify& service);
    void print_interval(const stats::Totals& now, const stats::Totals& last, double seconds);
    std::string features_status();
    void register_telemetry();
    // Everything the --metrics endpoint serves, now (its thread, each scrape).
    std::vector<stats::MetricFamily> collect_metrics();
    void add_port_metrics(stats::Metrics& m) const;
    // What is left to report once the ports are closed.
    struct Closed {
        std::vector<stats::PortDrops> port_drops;
        nlohmann::json links;
        unsigned in_use = 0, pmd_held = 0;  // mbufs: leaked, and kept by a PMD for good
    };
    Closed close_ports();
    void print_summary(const Closed& closed) const;
    bool write_json(const Closed& closed) const;  // false: not written (said why)
    void leak_for_test();
    std::vector<stats::PortDrops> port_drops_now() const;
    // One line per port whose link went up or down since the last look.
    void report_link_changes();

    AppInfo info_;
    cli::CommonOptions& options_;
    Plan plan_;
    std::unique_ptr<eal::Eal> eal_;
    bool pdump_ = false;
    std::unique_ptr<mem::PacketPool> pool_;
    std::vector<std::unique_ptr<eal::Port>> ports_;
    XdpDatapath* xdp_datapath_ = nullptr;  // one of plan_.features
    std::unique_ptr<worker::WorkerMap> workers_;
    std::unique_ptr<stats::StatsBoard> stats_;
    std::vector<uint8_t> unfinished_checksums_;  // WorkerContext::unfinished_checksums
    std::atomic<double> start_s_ = 0;            // read by the telemetry thread
    uint64_t last_port_drops_ = 0;               // the stats line's previous figure
    // The features' figures in the stats line, by set (monitor thread).
    std::map<const stats::FigureSet*, stats::IntervalFigures> interval_figures_;
    double elapsed_s_ = 0;
    // Every feature whose hooks run from register_telemetry on: plan_.features, then the app's.
    std::vector<Feature*> features_;
    std::mutex features_mutex_;  // the app may add one while the metrics endpoint collects
    nlohmann::json json_keys_ = nlohmann::json::object();
};

}  // namespace linerate
