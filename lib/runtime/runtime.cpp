#include "runtime/runtime.hpp"

#include <fmt/core.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_pdump.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "eal/af_xdp.hpp"
#include "pcapio/pcap_file.hpp"
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

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

// The l2fwd order, a stage each: the plan (everything judged without the EAL, so a typo exits 2
// at once), the EAL, then ports, pool and the runtime's features.
Runtime::Runtime(AppInfo info, cli::SplitArgs args, cli::CommonOptions& options)
    : info_(std::move(info)), options_(options) {
    const std::vector<uint16_t> requested = check_options();
    const std::vector<eal::AfXdpSpec> af_xdp = af_xdp_specs();
    start_eal(eal_arguments(args, af_xdp));
    start_ports(requested, af_xdp);
}

std::vector<uint16_t> Runtime::check_options() {
    try {
        if (!options_.regions_file.empty()) regions_.load_file(options_.regions_file);
        for (const auto& def : options_.region_defs) regions_.define(def);
        netbuf_ = regions_.resolve(options_.netbuf);
        mem::check_region_file(netbuf_);
        std::vector<uint16_t> requested = cli::parse_port_list(options_);
        served_ = info_.xdp_filter ? info_.xdp_filter() : xdp::SteerFilter{xdp::SteerMode::ipv4, 0};
        xdp_filter_ = xdp::parse_steer_filter(
            options_.xdp_steer.empty() ? "app" : options_.xdp_steer, served_);
        cli::check_common_options(options_);
        exception_spec_ = parse_exception_path(options_.exception_path, info_.name);
        return requested;
    } catch (const std::invalid_argument& e) {
        cli::usage_error(info_.name, e.what());
    }
}

// --pcap: the input checked and counted up front (so the run knows when it is done), and the
// net_pcap vdev with the test-mode EAL defaults.
std::vector<std::string> Runtime::pcap_eal_args(bool had_separator) {
    try {
        eal::PcapSpec spec = eal::parse_pcap_spec(options_.pcap);
        std::string warning;
        pcapio::TestInput input = pcapio::test_mode_input(spec.in, warning);
        if (!warning.empty()) fmt::print(stderr, "{}: warning: {}\n", info_.name, warning);
        pcap_frames_ = input.frames;
        spec.in = input.path;
        return eal::pcap_mode_eal_args(spec, had_separator);
    } catch (const std::exception& e) {
        cli::usage_error(info_.name, e.what());
    }
}

std::vector<eal::AfXdpSpec> Runtime::af_xdp_specs() const {
    std::vector<eal::AfXdpSpec> af_xdp;
    if (options_.af_xdp.empty()) return af_xdp;
    try {
        for (const auto& spec : options_.af_xdp) af_xdp.push_back(eal::parse_af_xdp_spec(spec));
    } catch (const std::invalid_argument& e) {
        cli::usage_error(info_.name, e.what());
    }
    // Always linerate's steering program: DPDK's default one would hand the app every frame of
    // the interface, the host's ARP, ping and ssh included.
    std::string prog = xdp::find_bpf_object(xdp::kSteerObjectName);
    if (prog.empty())
        fatal(info_.name,
              std::string("--af-xdp: linerate's XDP steering program (") + xdp::kSteerObjectName +
                  ") is neither next to the app, in its install tree nor in the build tree: "
                  "not taking the interface without it",
              options_.json_path);
    for (auto& spec : af_xdp) spec.xdp_prog = prog;
    return af_xdp;
}

// The user's EAL args, then what --pcap, --exception-path and --af-xdp add.
std::vector<std::string> Runtime::eal_arguments(const cli::SplitArgs& args,
                                                const std::vector<eal::AfXdpSpec>& af_xdp) {
    std::vector<std::string> eal_args = {args.program};
    eal_args.insert(eal_args.end(), args.eal.begin(), args.eal.end());
    auto append = [&](const std::vector<std::string>& more) {
        eal_args.insert(eal_args.end(), more.begin(), more.end());
    };
    if (pcap_mode()) append(pcap_eal_args(args.had_separator));
    if (exception_spec_) eal_args.push_back(exception_tap_vdev_arg(*exception_spec_));
    if (!af_xdp.empty() && !args.had_separator) append(eal::af_xdp_mode_eal_args(af_xdp));
    try {
        eal::check_file_prefix_free(eal_args);
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

// The ports the run uses: --pcap's, --af-xdp's (created now, one per queue), or the requested.
void Runtime::start_ports(std::vector<uint16_t> requested,
                          const std::vector<eal::AfXdpSpec>& af_xdp) {
    const std::string& app = info_.name;
    try {
        if (pcap_mode()) {
            uint16_t pcap_port;
            if (rte_eth_dev_get_port_by_name(eal::kPcapVdevName, &pcap_port) != 0)
                throw std::runtime_error("the net_pcap port of --pcap was not created");
            requested = {pcap_port};
        }
        if (!af_xdp.empty()) {
            af_xdp_ports_ =
                eal::create_af_xdp_ports(af_xdp, unsigned(worker::worker_lcores().size()));
            requested.clear();
            for (const auto& p : af_xdp_ports_) requested.push_back(p.port);
        }
        setup_ports(requested);
        note_kernel_ports();
        setup_steering();
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

std::optional<uint16_t> Runtime::exception_tap_port() const {
    uint16_t id;
    if (!exception_spec_ || rte_eth_dev_get_port_by_name(kExceptionTapVdev, &id) != 0)
        return std::nullopt;
    return id;
}

void Runtime::setup_ports(const std::vector<uint16_t>& requested) {
    std::vector<uint16_t> ids = eal::select_ports(requested);
    const std::optional<uint16_t> tap = exception_tap_port();
    if (exception_spec_ && !tap)
        throw std::runtime_error("--exception-path: the TAP port was not created (net_tap)");
    std::erase_if(ids, [&](uint16_t id) { return id == tap; });
    if (ids.empty()) throw std::runtime_error("no port left besides the exception path's TAP");
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
        for (const auto& p : af_xdp_ports_)
            if (p.port == id) first_worker = p.queue;
        port_queues.push_back({id, port.queues(), first_worker});
    }
    if (tap) {
        tap_port_ =
            std::make_unique<eal::Port>(*tap, eal::PortConfig{.rx_desc = 256, .tx_desc = 256});
        // Its descriptors and what both rings can hold.
        demand.rx_descriptors += tap_port_->rx_desc() + 2 * kExceptionRingSize;
        demand.tx_descriptors += tap_port_->tx_desc();
    }
    for (const eal::PoolNeeds& n : needs) demand.rx_descriptors += n.kept_mbufs;
    start_pool_and_ports(pool_mbufs(needs, demand), data_room);
    if (tap_port_) start_exception_path();
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
    pool_ =
        std::make_unique<mem::PacketPool>(info_.name + "_netbuf", mbufs, options_.mbuf_cache,
                                          netbuf_, ports_.front()->socket(), uint16_t(data_room));
    fmt::print("{}: netbuf {}\n", info_.name, pool_->describe());
    for (auto& port : ports_) {
        pool_->region().dma_map(port->device());
        port->start(pool_->get());
        std::fflush(stdout);
        if (!port->wait_for_link(options_.link_wait_s))
            fmt::print(stderr, "{}: warning: port {} link is down\n", info_.name, port->id());
        port->link_change();  // the state at start: later changes are reported
        fmt::print("{}: {}\n", info_.name, port->describe());
        if (options_.isolate)
            fmt::print("{}: port {} {}\n", info_.name, port->id(),
                       eal::install_served_rule(port->id(), served_, port->queues()));
    }
}

void Runtime::start_exception_path() {
    tap_port_->start(pool_->get());
    exception_ = std::make_unique<ExceptionPath>(info_.name, tap_port_->id(), ports_.front()->id(),
                                                 tap_port_->socket());
    fmt::print(
        "{}: exception path: frames not served <-> TAP {} (port {}), kernel's frames out port "
        "{}\n",
        info_.name, exception_spec_->iface, tap_port_->id(), ports_.front()->id());
    add_json([this](nlohmann::json& j) { j["exception_path"] = exception_->json(); });
    add_summary([this] { return exception_->summary(); });
}

// The worker map and the stats board (with the names of the features that are on).
void Runtime::start_board(const std::vector<unsigned>& lcores,
                          const std::vector<worker::PortQueues>& port_queues) {
    workers_ = std::make_unique<worker::WorkerMap>(lcores, port_queues);
    fmt::print("{}", workers_->describe());
    std::fflush(stdout);  // start-up lines reach a log or pipe now, not at the first stats line
    std::vector<std::string_view> features_on;
    if (exception_) features_on.push_back(stats::kExceptionPathFeature);
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

void Runtime::setup_steering() {
    std::vector<uint16_t> ids;
    for (const auto& port : ports_) ids.push_back(port->id());
    steering_ = std::make_unique<xdp::Steering>(ids, xdp_filter_);
    std::string prog = xdp::find_bpf_object(xdp::kSteerObjectName);
    if (prog.empty()) prog = std::string("PATH/") + xdp::kSteerObjectName;
    if (!options_.xdp_steer.empty() && steering_->empty())
        throw std::runtime_error(
            "--xdp-steer: no net_af_xdp port's interface has linerate's steering program "
            "(use --af-xdp IFACE, or attach it with the vdev's xdp_prog=" +
            prog + ")");
    // Hand-written vdevs keep DPDK's behaviour (the user's choice), but not silently.
    for (const std::string& iface : steering_->unsteered())
        fmt::print(stderr,
                   "{}: warning: {} has DPDK's default XDP program (no xdp_prog= on its vdev): "
                   "the app takes every frame of it, the host's ARP, ping and ssh there "
                   "included (--af-xdp {}, or xdp_prog={} on the vdev, hands it only the app's "
                   "traffic)\n",
                   info_.name, iface, iface, prog);
    fmt::print("{}", steering_->describe());
    std::fflush(stdout);  // a start-up line: to a log or pipe now
}

Runtime::~Runtime() {
    stats::clear_telemetry();
    exception_.reset();
    tap_port_.reset();
    ports_.clear();
    pool_.reset();
    if (pdump_) rte_pdump_uninit();
}

bool Runtime::pcap_input_drained(uint64_t rx_packets) const {
    // net_pcap returns 0 at end of file forever; knowing the frame count tells "done" from
    // "slow". Frames the PMD itself rejected (e.g. larger than an mbuf chain) count as seen.
    rte_eth_stats st{};
    rte_eth_stats_get(ports_.front()->id(), &st);
    return rx_packets + st.ierrors >= pcap_frames_;
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

void Runtime::monitor() {
    const double start = now_s();
    double last_print = start;
    stats::Totals last = stats_->totals();
    uint64_t last_rx = 0;
    uint64_t last_port_drops = 0;
    double last_progress = start;
    double last_link_check = start;
    // The exception path's frames wait for this loop: ARP and ping answered within a ms or so.
    const auto period = std::chrono::milliseconds(pcap_mode() || exception_ ? 1 : 10);
    while (!worker::stop_requested()) {
        std::this_thread::sleep_for(period);
        if (exception_) exception_->service();
        double now = now_s();
        stats::Totals t = stats_->totals();
        if (options_.duration_s > 0 && now - start >= options_.duration_s) worker::request_stop();
        if (pcap_mode()) {
            if (pcap_input_drained(t.rx_packets)) worker::request_stop();
            if (t.rx_packets != last_rx) {
                last_rx = t.rx_packets;
                last_progress = now;
            } else if (now - last_progress > 2.0) {
                fmt::print(stderr, "{}: warning: net_pcap delivered {} of {} frames, stopping\n",
                           info_.name, t.rx_packets, pcap_frames_);
                worker::request_stop();
            }
        }
        if (!pcap_mode() && now - last_link_check >= 1.0) {
            report_link_changes();
            last_link_check = now;
        }
        if (options_.stats_period_s > 0 && now - last_print >= options_.stats_period_s) {
            uint64_t port_drops = stats::total(port_drops_now());
            fmt::print("{}{} | port drops {}\n",
                       stats::interval_line(*stats_, t, last, now - last_print),
                       steering_->interval_text(), port_drops - last_port_drops);
            last_port_drops = port_drops;
            std::fflush(stdout);
            last = t;
            last_print = now;
        }
    }
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
    if (!steering_->empty())
        stats::register_telemetry("/linerate/xdp", "XDP steering program counters",
                                  [this](const std::string&) { return steering_->telemetry(); });
}

int Runtime::run(const std::function<void(WorkerContext&)>& worker) {
    worker::install_signal_handlers();
    start_s_ = now_s();
    register_telemetry();
    worker::run_workers(
        *workers_,
        [&](const worker::WorkerSlot& slot) {
            WorkerContext ctx{slot,
                              stats_->worker(slot.index),
                              options_.burst,
                              options_.tx_retries,
                              exception_.get(),
                              unfinished_checksums_};
            if (!slot.queues.empty()) worker(ctx);
        },
        [this] { monitor(); });
    elapsed_s_ = now_s() - start_s_;
    for (auto& f : stopped_hooks_) f();
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
    if (exception_) exception_->drain();
    tap_port_.reset();
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
    if (!steering_->empty()) fmt::print("{}\n", steering_->summary());
    for (auto& f : summary_hooks_) fmt::print("{}\n", f());
    std::fflush(stdout);
}

bool Runtime::write_json(const Closed& closed) const {
    nlohmann::json j = stats::final_json(*stats_, elapsed_s_, closed.in_use, closed.pmd_held);
    j["netbuf"] = pool_->describe();
    j["port_drops"] = stats::port_drops_json(closed.port_drops);
    j["links"] = closed.links;
    if (!steering_->empty()) j["xdp"] = steering_->json();
    for (unsigned w = 0; w < j["workers"].size(); ++w)
        for (auto& f : worker_json_hooks_) f(w, j["workers"][w]);
    for (auto& f : json_hooks_) f(j);
    std::ofstream out(options_.json_path);
    out << j.dump(2) << "\n";
    if (!out) fmt::print(stderr, "{}: error: cannot write {}\n", info_.name, options_.json_path);
    return bool(out);
}

}  // namespace linerate
