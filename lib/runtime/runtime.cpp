#include "runtime/runtime.hpp"

#include <fmt/core.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_pdump.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "eal/af_xdp_ports.hpp"
#include "eal/eal.hpp"
#include "eal/flow_isolate.hpp"
#include "mem/mempool.hpp"
#include "runtime/exception_feature.hpp"
#include "runtime/metrics.hpp"
#include "runtime/pcap_mode.hpp"
#include "runtime/service_notify.hpp"
#include "runtime/xdp_datapath_feature.hpp"
#include "runtime/xdp_steer_feature.hpp"
#include "stats/board_metrics.hpp"
#include "stats/figures.hpp"
#include "stats/port_drops.hpp"
#include "stats/report.hpp"
#include "stats/telemetry.hpp"
#include "worker/stop.hpp"

namespace linerate {

namespace {

// Start-up failed: one line, and the JSON with what is known (why, and any stop signal).
[[noreturn]] void fatal(const std::string& app, const std::string& msg,
                        const std::string& json_path) {
    fmt::print(stderr, "{}: {}\n", app, msg);
    notify_error_line(app + ": " + msg);
    if (!json_path.empty()) {
        nlohmann::json j = {{"app", app}, {"error", msg}, {"exit_status", 1}};
        if (int sig = worker::stop_signal()) j["stop_signal"] = sig;
        std::ofstream(json_path) << j.dump(2) << "\n";
    }
    std::exit(1);
}

// Stop signals are honoured from before main: one during EAL init, port setup or the link wait
// makes the app end as soon as start-up is over (or fails), with its summary and JSON.
[[maybe_unused]] const bool kSignalsFromTheStart = (worker::install_signal_handlers(), true);

// A usage error's line (lib/cli) reaches a service manager too: `systemctl status` shows it.
[[maybe_unused]] const bool kErrorLinesToTheManager =
    (cli::set_error_line_listener(&notify_error_line), true);

// Each line reaches a pipe or the journal as it is printed (one line per event), not when a block
// fills: a service's lines between two stats lines (none with --stats-period 0) would otherwise
// wait for the next one, or for the exit. From before main, as setvbuf must precede any output.
[[maybe_unused]] const bool kLineBuffered = std::setvbuf(stdout, nullptr, _IOLBF, 0) == 0;

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

// The l2fwd order, a stage each: the plan (everything judged without the EAL, so a typo exits 2
// at once), the EAL, then ports, pool and the runtime's features.
Runtime::Runtime(AppInfo info, cli::SplitArgs args, cli::CommonOptions& options)
    : info_(std::move(info)), options_(options) {
    make_plan();
    start_eal(eal_arguments(args));
    start_ports();
}

const mem::RegionSpec& Plan::app_region(std::string_view flag) const {
    for (const auto& [f, spec] : app_regions)
        if (f == flag) return spec;
    throw std::out_of_range("no app region option " + std::string(flag));
}

rte_mempool* Runtime::pool() const {
    return pool_->get();
}

// Regions, ports, the common values and the features that are on: an invalid_argument is a
// usage error (exit 2), a runtime_error a start-up failure (exit 1).
void Runtime::make_plan() {
    try {
        if (!options_.regions_file.empty()) plan_.regions.load_file(options_.regions_file);
        for (const auto& def : options_.region_defs) plan_.regions.define(def);
        plan_.netbuf = plan_.regions.resolve(options_.netbuf);
        mem::check_region_file(plan_.netbuf);
        for (const AppRegion& r : info_.regions) try {
                plan_.app_regions.emplace_back(r.flag, plan_.regions.resolve(r.value));
                mem::check_region_file(plan_.app_regions.back().second);
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument(r.flag + ": " + e.what());
            }
        plan_.ports = cli::parse_port_list(options_);
        plan_.served =
            info_.xdp_filter ? info_.xdp_filter() : xdp::SteerFilter{xdp::SteerMode::ipv4, 0};
        add_features();
        for (auto& f : plan_.features) features_.push_back(f.get());
    } catch (const std::invalid_argument& e) {
        cli::usage_error(info_.name, e.what());
    } catch (const std::exception& e) {
        fatal(info_.name, e.what(), options_.json_path);
    }
}

// The features in the order their hooks run: the app's XDP datapath, the test input, AF_XDP and
// steering, then the exception path (which takes its TAP out of whatever ports the others
// chose), then the metrics endpoint (which reads what the others set up).
void Runtime::add_features() {
    auto& f = plan_.features;
    const xdp::SteerFilter steer = xdp::parse_steer_filter(
        options_.xdp_steer.empty() ? "app" : options_.xdp_steer, plan_.served);
    // The app's XDP program first: a run it cannot serve is refused before the input is read,
    // and it is attached before --af-xdp's vdevs are made (they adopt it).
    if (info_.xdp_datapath) {
        auto datapath =
            std::make_unique<XdpDatapath>(info_.name, options_, *info_.xdp_datapath, steer);
        xdp_datapath_ = datapath.get();
        f.push_back(std::move(datapath));
    }
    if (pcap_mode()) f.push_back(std::make_unique<PcapMode>(info_.name, options_.pcap));
    const bool app_program = xdp_datapath_ && xdp_datapath_->on_interface();
    f.push_back(std::make_unique<AfXdpSteering>(info_.name, options_.af_xdp, steer,
                                                info_.steer_hook, !options_.xdp_steer.empty(),
                                                app_program));
    if (!options_.exception_path.empty())
        f.push_back(std::make_unique<ExceptionPathFeature>(info_.name, options_.exception_path));
    if (!options_.metrics.empty())
        f.push_back(std::make_unique<MetricsEndpoint>(info_.name, options_.metrics,
                                                      [this] { return collect_metrics(); }));
}

// The user's EAL args, then what the features add (net_pcap, net_tap, AF_XDP defaults).
std::vector<std::string> Runtime::eal_arguments(const cli::SplitArgs& args) {
    std::vector<std::string> eal_args = {args.program};
    eal_args.insert(eal_args.end(), args.eal.begin(), args.eal.end());
    for (auto& f : plan_.features) f->add_eal_args(eal_args, args.had_separator);
    try {
        eal::check_file_prefix_free(eal_args);
        eal::remove_stale_memif_sockets(eal_args);  // what a killed server left
    } catch (const std::invalid_argument& e) {
        cli::usage_error(info_.name, e.what());
    }
    return eal_args;
}

void Runtime::start_eal(const std::vector<std::string>& eal_args) {
    try {
        eal_ = std::make_unique<eal::Eal>(eal_args);
    } catch (const std::exception& e) {
        fatal(info_.name,
              std::string(e.what()) +
                  " (no hugepages? add --no-huge before `--`, or use --pcap for test mode)",
              options_.json_path);
    }
    // dpdk-dumpcap attaches as a secondary process; without shared config there is none.
    pdump_ = rte_eal_process_type() == RTE_PROC_PRIMARY && rte_pdump_init() == 0;
}

// Ports, pool and features; what the user got wrong (a port, a region, isolation) is a usage
// error, the rest a start-up failure.
void Runtime::start_ports() {
    const std::string& app = info_.name;
    try {
        setup_ports(choose_ports());
        note_kernel_ports();
        start_features();
    } catch (const mem::RegionError& e) {
        cli::usage_error(app, e.what());
    } catch (const eal::PortChoiceError& e) {
        cli::usage_error(app, e.what());
    } catch (const eal::IsolateError& e) {
        cli::usage_error(app, e.what());
    } catch (const std::exception& e) {
        fatal(app, e.what(), options_.json_path);
    }
}

// The requested ports (or every port), unless a feature makes the run's ports (--pcap,
// --af-xdp); less what a feature keeps for itself (the exception path's TAP).
std::vector<uint16_t> Runtime::choose_ports() {
    std::vector<uint16_t> ids = plan_.ports;
    const unsigned workers = unsigned(worker::worker_lcores().size());
    for (auto& f : plan_.features)
        if (std::optional<std::vector<uint16_t>> made = f->make_ports(workers)) ids = *made;
    ids = eal::select_ports(ids);
    for (auto& f : plan_.features) f->claim_ports(ids);
    return ids;
}

void Runtime::setup_ports(const std::vector<uint16_t>& ids) {
    const std::vector<unsigned> lcores = worker::worker_lcores();
    std::vector<eal::PoolNeeds> needs;
    for (uint16_t id : ids) needs.push_back(eal::pool_needs(id));
    const unsigned data_room = mbuf_data_room(needs);
    mem::PoolDemand demand;
    demand.lcores = unsigned(lcores.size()) + 1;  // the main lcore frees mbufs too (drain)
    demand.burst = options_.burst;
    demand.cache = options_.mbuf_cache;
    std::vector<worker::PortQueues> port_queues;
    for (uint16_t id : ids) {
        const eal::Port& port = configure_port(id, unsigned(lcores.size()), data_room);
        demand.rx_descriptors +=
            unsigned(port.rx_desc()) * port.queues() + port.mbufs_beyond_rings();
        demand.tx_descriptors += unsigned(port.tx_desc()) * port.queues();
        unsigned first_worker = 0;
        for (const auto& f : plan_.features)
            if (std::optional<unsigned> w = f->first_worker(id)) first_worker = *w;
        port_queues.push_back({id, port.queues(), first_worker});
    }
    for (const auto& f : plan_.features) f->add_pool_demand(demand);
    for (const eal::PoolNeeds& n : needs) demand.rx_descriptors += n.kept_mbufs;
    start_pool_and_ports(pool_mbufs(needs, demand), data_room);
    start_board(lcores, port_queues);
}

// Configures port `id` (one queue pair per worker, as far as the device has them) and keeps it.
const eal::Port& Runtime::configure_port(uint16_t id, unsigned workers, unsigned data_room) {
    rte_eth_dev_info dev{};
    rte_eth_dev_info_get(id, &dev);
    eal::PortConfig pc;
    pc.queues = uint16_t(std::min<size_t>({workers, dev.max_rx_queues, dev.max_tx_queues}));
    pc.rx_desc = uint16_t(options_.rx_desc);
    pc.tx_desc = uint16_t(options_.tx_desc);
    pc.promiscuous = options_.promiscuous;
    if (options_.isolate) eal::isolate_port(id);  // before the port is configured
    pc.mtu = options_.mtu;
    pc.mbuf_data_room = data_room;
    ports_.push_back(std::make_unique<eal::Port>(id, pc));
    return *ports_.back();
}

// The pool in its region, then every port started on it (link waited for, described).
void Runtime::start_pool_and_ports(unsigned mbufs, unsigned data_room) {
    pool_ = std::make_unique<mem::PacketPool>(info_.name + "_netbuf", mbufs, options_.mbuf_cache,
                                              plan_.netbuf, ports_.front()->socket(),
                                              uint16_t(data_room));
    fmt::print("{}: netbuf {}\n", info_.name, pool_->describe());
    for (auto& port : ports_) {
        pool_->region().dma_map(port->device());
        port->start(pool_->get());
        // A link a peer brings up (a memif server's, a vhost-user's): the port is started, so a
        // peer may connect now (a memif client tries once, and only a started server takes it).
        // Scripts and tests start the peer on this line, not after a while.
        if (options_.link_wait_s > 0 && !port->wait_for_link(0))
            fmt::print("{}: port {} started, waiting up to {:g} s for its link\n", info_.name,
                       port->id(), options_.link_wait_s);
        std::fflush(stdout);
        if (!port->wait_for_link(options_.link_wait_s))
            fmt::print(stderr, "{}: warning: port {} link is down\n", info_.name, port->id());
        port->link_change();  // the state at start: later changes are reported
        fmt::print("{}: {}\n", info_.name, port->describe());
        if (options_.isolate)
            fmt::print("{}: port {} {}\n", info_.name, port->id(),
                       eal::install_served_rule(port->id(), plan_.served, port->queues()));
    }
}

void Runtime::start_features() {
    const StartedRun run{info_.name, pool_->get(), ports_, *stats_};
    for (auto& f : plan_.features) f->start(run);
}

// The worker map and the stats board (with the names of the features that are on).
void Runtime::start_board(const std::vector<unsigned>& lcores,
                          const std::vector<worker::PortQueues>& port_queues) {
    workers_ = std::make_unique<worker::WorkerMap>(lcores, port_queues);
    fmt::print("{}", workers_->describe());
    std::fflush(stdout);  // start-up lines reach a log or pipe now, not at the first stats line
    std::vector<std::string_view> features_on;
    for (const auto& f : plan_.features)
        if (!f->board_feature().empty()) features_on.push_back(f->board_feature());
    stats_ = std::make_unique<stats::StatsBoard>(info_.name, workers_->size(), info_.drop_reasons,
                                                 info_.counters, features_on);
}

// The ports whose frames may carry checksums a host left to offload (WorkerContext).
void Runtime::note_kernel_ports() {
    for (const auto& port : ports_) {
        if (!port->kernel_backed()) continue;
        if (unfinished_checksums_.size() <= port->id())
            unfinished_checksums_.resize(port->id() + 1);
        unfinished_checksums_[port->id()] = 1;
    }
}

unsigned Runtime::mbuf_data_room(const std::vector<eal::PoolNeeds>& needs) const {
    // Mbufs hold a whole frame of the MTU (rounded up to KiB) unless --mbuf-size asks for chains.
    unsigned data_room = RTE_MBUF_DEFAULT_BUF_SIZE;
    if (options_.mbuf_size)
        data_room = options_.mbuf_size;
    else if (options_.mtu)
        data_room =
            std::max(data_room, RTE_PKTMBUF_HEADROOM +
                                    (eal::max_frame_len(options_.mtu) + 1023) / 1024 * 1024);
    // ... and at least what a port's RX queues refuse to do without.
    for (const eal::PoolNeeds& n : needs) {
        if (n.data_room <= data_room) continue;
        if (n.data_room > UINT16_MAX)
            throw std::runtime_error(
                fmt::format("{}: {} needs mbufs of {} B data room, above the {} an mbuf holds",
                            n.port, n.data_room_reason, n.data_room, UINT16_MAX));
        if (options_.mbuf_size)
            throw std::runtime_error(fmt::format(
                "{}: {} needs mbufs of {} B data room (headroom included): give --mbuf-size {} "
                "or more, or leave it out",
                n.port, n.data_room_reason, n.data_room, n.data_room));
        data_room = n.data_room;
        fmt::print("{}: {}: mbufs of {} B data room for {}\n", info_.name, n.port, data_room,
                   n.data_room_reason);
    }
    return data_room;
}

unsigned Runtime::pool_mbufs(const std::vector<eal::PoolNeeds>& needs,
                             const mem::PoolDemand& demand) const {
    if (!options_.mbufs) return mem::pool_size(demand);
    unsigned kept = 0;
    const eal::PoolNeeds* keeper = nullptr;
    for (const eal::PoolNeeds& n : needs)
        if (n.kept_mbufs) {
            kept += n.kept_mbufs;
            if (!keeper) keeper = &n;
        }
    // What the ports keep, and a burst in flight at least, or nothing moves.
    if (!keeper || options_.mbufs >= kept + demand.burst) return options_.mbufs;
    throw std::runtime_error(fmt::format(
        "{}: {} for the whole run, so --mbufs {} is too few: give --mbufs {} (the size the app "
        "chooses without the flag)",
        keeper->port, keeper->kept_reason, options_.mbufs, mem::pool_size(demand)));
}

Runtime::~Runtime() {
    stats::clear_telemetry();
    plan_.features.clear();  // what they hold goes back to the pool, their ports close
    ports_.clear();
    pool_.reset();
    if (pdump_) rte_pdump_uninit();
}

std::vector<stats::PortDrops> Runtime::port_drops_now() const {
    std::vector<stats::PortDrops> drops;
    for (const auto& port : ports_) {
        stats::PortDrops d = stats::read_port_drops(port->id(), port->name());
        eal::AfXdpSocketDrops x = eal::af_xdp_socket_drops(port->af_xdp_sockets());
        d.rx_ring_full = x.rx_ring_full;
        d.rx_invalid = x.rx_invalid;
        d.tx_invalid = x.tx_invalid;
        drops.push_back(d);
    }
    return drops;
}

void Runtime::leak_for_test() {
    // Test hook: the leak check must still catch a real leak beside mbufs a PMD keeps, and the
    // only way to prove it is an app that leaks.
    const char* n = std::getenv("LINERATE_TEST_LEAK_MBUFS");
    if (!n) return;
    for (long i = std::strtol(n, nullptr, 10); i > 0; --i) rte_pktmbuf_alloc(pool_->get());
}

void Runtime::report_link_changes() {
    for (auto& port : ports_)
        if (std::optional<bool> up = port->link_change()) {
            fmt::print("{}: port {} ({}): link {}\n", info_.name, port->id(), port->name(),
                       *up ? "up" : "down");
            std::fflush(stdout);
        }
}

// The main lcore while the workers run: features' ticks, --duration, link changes, the stats
// line, and the service manager's watchdog; it tells the manager when a stop begins.
void Runtime::monitor(ServiceNotify& service) {
    const double start = now_s();
    double last_print = start, last_link_check = start, last_status = start;
    stats::Totals last = stats_->totals();
    std::chrono::milliseconds period = Feature::kDefaultTick;
    for (const Feature* f : features_) period = std::min(period, f->tick_period());
    while (!worker::stop_requested()) {
        std::this_thread::sleep_for(period);
        const double now = now_s();
        const stats::Totals t = stats_->totals();
        for (Feature* f : features_) f->tick({now, t.rx_packets});
        service.tick(now);
        if (options_.duration_s > 0 && now - start >= options_.duration_s) worker::request_stop();
        if (!pcap_mode() && now - last_link_check >= 1.0) {
            report_link_changes();
            last_link_check = now;
        }
        if (now - last_status >= 1.0) {
            if (std::string status = features_status(); !status.empty()) service.status(status);
            last_status = now;
        }
        if (options_.stats_period_s > 0 && now - last_print >= options_.stats_period_s) {
            print_interval(t, last, now - last_print);
            last = t;
            last_print = now;
        }
    }
    service.stopping();
}

// What the features say of their state (Feature::status), "; "-separated.
std::string Runtime::features_status() {
    std::string all;
    for (Feature* f : features_)
        if (std::string s = f->status(); !s.empty()) all += (all.empty() ? "" : "; ") + s;
    return all;
}

// The periodic stats line: the board's rates, the features' figures marked for it, the ports'
// own drops.
void Runtime::print_interval(const stats::Totals& now, const stats::Totals& last, double seconds) {
    std::string line = stats::interval_line(*stats_, now, last, seconds);
    for (const Feature* f : features_)
        if (const stats::FigureSet* set = f->figures())
            line += interval_figures_[set].text(*set, workers_->size());
    const uint64_t port_drops = stats::total(port_drops_now());
    line += fmt::format(" | port drops {}", port_drops - last_port_drops_);
    if (std::string status = features_status(); !status.empty()) line += " | " + status;
    fmt::print("{}\n", line);
    last_port_drops_ = port_drops;
    std::fflush(stdout);
}

void Runtime::register_telemetry() {
    stats::register_telemetry(
        "/linerate/stats", "Totals, rates since start, per-worker figures",
        [this](const std::string&) { return stats::live_json(*stats_, now_s() - start_s_); });
    stats::register_telemetry(
        "/linerate/port_drops", "Frames each port dropped itself (rte_eth_stats)",
        [this](const std::string&) { return stats::port_drops_json(port_drops_now()); });
    stats::register_telemetry("/linerate/drops", "Drops by reason", [this](const std::string&) {
        return stats::drops_json(*stats_, stats_->totals());
    });
    for (Feature* f : features_) {
        f->register_telemetry();
        const stats::FigureSet* set = f->figures();
        if (!set || set->telemetry_endpoint.empty()) continue;
        stats::register_telemetry(set->telemetry_endpoint, set->telemetry_help,
                                  [this, set](const std::string&) {
                                      return stats::figures_telemetry(*set, workers_->size());
                                  });
    }
}

// Read as the stats line, telemetry and the JSON read them: the board's per-worker counters,
// rte_eth_stats, the pool's count; then the features' and the app's own.
std::vector<stats::MetricFamily> Runtime::collect_metrics() {
    stats::Metrics m(info_.name);
    stats::add_board_metrics(*stats_, m);
    stats::add_port_drop_metrics(port_drops_now(), m);
    add_port_metrics(m);
    m.add("linerate_mempool_in_use", "Mbufs of the pool in use (rings, bursts, app state)",
          stats::MetricType::gauge, {}, double(pool_->in_use()));
    m.add("linerate_mempool_size", "Mbufs in the pool", stats::MetricType::gauge, {},
          double(pool_->get()->size));
    const double start = start_s_;
    m.add("linerate_uptime_seconds", "Seconds the workers have run", stats::MetricType::gauge, {},
          start > 0 ? now_s() - start : 0.0);
    std::lock_guard lock(features_mutex_);
    for (const Feature* f : features_) {
        f->add_metrics(m);
        if (const stats::FigureSet* set = f->figures())
            stats::add_figure_metrics(*set, workers_->size(), m);
    }
    return m.families();
}

// Per port: link state and changes, and per queue what rte_eth_stats counted (q_ipackets,
// q_opackets: queues past RTE_ETHDEV_QUEUE_STAT_CNTRS are not counted by DPDK).
void Runtime::add_port_metrics(stats::Metrics& m) const {
    for (const auto& port : ports_) {
        const std::string id = std::to_string(port->id());
        m.add("linerate_link_up", "1 while the port's link is up, else 0", stats::MetricType::gauge,
              {{"port", id}}, port->link_up() ? 1 : 0);
        m.add("linerate_link_downs_total", "Times the port's link went down",
              stats::MetricType::counter, {{"port", id}}, double(port->link_downs()));
        rte_eth_stats st{};
        if (rte_eth_stats_get(port->id(), &st) != 0) continue;
        const unsigned queues = std::min<unsigned>(port->queues(), RTE_ETHDEV_QUEUE_STAT_CNTRS);
        for (unsigned q = 0; q < queues; ++q) {
            const stats::MetricLabels labels = {{"port", id}, {"queue", std::to_string(q)}};
            m.add("linerate_queue_rx_packets_total", "Frames the port received on the queue",
                  stats::MetricType::counter, labels, double(st.q_ipackets[q]));
            m.add("linerate_queue_tx_packets_total", "Frames the port sent on the queue",
                  stats::MetricType::counter, labels, double(st.q_opackets[q]));
        }
    }
}

WorkerContext Runtime::worker_context(const worker::WorkerSlot& slot) {
    WorkerContext ctx{slot,    stats_->worker(slot.index), options_.burst, options_.tx_retries,
                      nullptr, unfinished_checksums_};
    for (Feature* f : features_) f->fill_worker_context(ctx);
    return ctx;
}

void Runtime::add_feature(Feature& feature) {
    std::lock_guard lock(features_mutex_);
    features_.push_back(&feature);
}

int Runtime::run_app(const std::function<int()>& app) {
    try {
        if (info_.check_ports) info_.check_ports(workers_->slots(), port_ids());
        return app();
    } catch (const cli::UsageError& e) {
        cli::print_usage_error(info_.name, e.what());
        return 2;
    }
}

int Runtime::run(const std::function<void(WorkerContext&)>& worker) {
    worker::install_signal_handlers();
    start_s_ = now_s();
    register_telemetry();
    // Start-up is over: what arrives now is polled (tests and scripts wait for this line, a
    // service manager for READY=1, sent once the line is out).
    ServiceNotify service(info_.name);
    fmt::print("{}: running\n", info_.name);
    std::fflush(stdout);
    service.ready(now_s());
    worker::run_workers(
        *workers_,
        [&](const worker::WorkerSlot& slot) {
            WorkerContext ctx = worker_context(slot);
            if (!slot.queues.empty()) worker(ctx);
        },
        [&] { monitor(service); });
    elapsed_s_ = now_s() - start_s_;
    for (Feature* f : features_) f->workers_stopped();
    leak_for_test();
    const Closed closed = close_ports();
    print_summary(closed);
    int status = 0;
    if (closed.in_use != 0) {
        fmt::print(stderr, "{}: error: {} mbufs still in use at exit (leak)\n", info_.name,
                   closed.in_use);
        status = 1;
    }
    if (!options_.json_path.empty() && !write_json(closed)) status = 1;
    return status;
}

// Stopping and closing the ports hands back the mbufs the PMDs hold (and flushes net_pcap
// output), except what a PMD keeps for good (net_af_xdp's fill ring): what is still in use
// beyond that is a leak.
Runtime::Closed Runtime::close_ports() {
    unsigned held_bound = 0;
    for (auto& port : ports_) {
        port->reclaim_tx();
        held_bound += port->held_after_close();
    }
    stats::clear_telemetry();
    for (Feature* f : features_) f->drain();
    Closed c;
    c.port_drops = port_drops_now();
    c.links = nlohmann::json::object();
    for (const auto& port : ports_)
        c.links[std::to_string(port->id())] = {{"up", port->link_up()},
                                               {"downs", port->link_downs()}};
    ports_.clear();
    c.pmd_held = std::min(pool_->in_use(), held_bound);
    c.in_use = pool_->in_use() - c.pmd_held;
    return c;
}

void Runtime::print_summary(const Closed& closed) const {
    if (int sig = worker::stop_signal()) fmt::print("{}: stopped by signal {}\n", info_.name, sig);
    fmt::print("{}\n", stats::final_summary(*stats_, elapsed_s_, closed.in_use, closed.pmd_held));
    fmt::print("{}\n", stats::port_drops_summary(closed.port_drops));
    for (const Feature* f : features_) {
        if (const stats::FigureSet* set = f->figures())
            if (std::string lines = stats::figures_summary(*set, workers_->size()); !lines.empty())
                fmt::print("{}\n", lines);
        if (std::string line = f->summary(); !line.empty()) fmt::print("{}\n", line);
    }
    std::fflush(stdout);
}

bool Runtime::write_json(const Closed& closed) const {
    nlohmann::json j = stats::final_json(*stats_, elapsed_s_, closed.in_use, closed.pmd_held);
    j["netbuf"] = pool_->describe();
    j["port_drops"] = stats::port_drops_json(closed.port_drops);
    j["links"] = closed.links;
    j.update(json_keys_);
    for (const Feature* f : features_) {
        f->add_json(j);
        if (const stats::FigureSet* set = f->figures())
            stats::add_figures_json(*set, workers_->size(), j);
    }
    std::ofstream out(options_.json_path);
    out << j.dump(2) << "\n";
    if (!out) fmt::print(stderr, "{}: error: cannot write {}\n", info_.name, options_.json_path);
    return bool(out);
}

}  // namespace linerate
