// clocksync: client/master clock synchronization reporting the time-uncertainty bound epsilon.
// Wiring only: the wire format and session are cs_wire/client_session, the loops worker_loops,
// the options options, the reports report.
#include <fmt/core.h>
#include <rte_ethdev.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "clocksync/cs_xdp.hpp"
#include "clocksync/options.hpp"
#include "clocksync/report.hpp"
#include "clocksync/worker_loops.hpp"
#include "eal/af_xdp_ports.hpp"
#include "runtime/runtime.hpp"
#include "runtime/xdp_datapath_feature.hpp"
#include "stats/telemetry.hpp"
#include "xdp/xdp_tx/xdp_transmitter.hpp"

using namespace linerate;
using namespace linerate::clocksync;

namespace {

constexpr const char* kApp = "clocksync";
constexpr const char* kXdpStamps =
    "xdp: bpf_ktime_get_ns() (CLOCK_MONOTONIC) at the program's entry and right before XDP_TX; "
    "its slow path ";

// --datapath xdp: apps/clocksync/xdp/clocksync.bpf.c on the --af-xdp interface. Its reasons are the
// master's drops from not_clocksync on (apps/clocksync/cs_wire.h); what it passes to the kernel
// (a served frame that is no clocksync datagram) is counted as not_clocksync, as the C++ master
// counts it.
std::shared_ptr<const XdpDatapathSpec> xdp_program(const Options& cs,
                                                   const cli::CommonOptions& options) {
    if (cs.role != Role::master || cs.datapath != xdp::Datapath::xdp) return nullptr;
    // One interface: the program's config carries that interface's MAC.
    if (options.af_xdp.size() != 1)
        cli::usage_error(kApp,
                         "--datapath xdp: the master runs its XDP program on one --af-xdp "
                         "interface (its frames are tested with BPF_PROG_TEST_RUN in "
                         "unit_clocksync_xdp)");
    XdpBoardSlots slots{stats::drop_slot(Drop::not_clocksync), {}};
    for (unsigned r = LR_CS_NOT_CLOCKSYNC; r <= LR_CS_DROP_WARMUP; ++r)
        slots.drops.push_back(stats::drop_slot(Drop::not_clocksync) + r);
    auto spec = xdp_datapath_spec(cs.datapath, cs.xdp_mode, "clocksync.bpf.o",
                                  cs.verify_checksums ? DP_VERIFY_CHECKSUM : 0, std::move(slots));
    spec->configure = [port = cs.udp_port, accept = !cs.strict_checksums](
                          xdp::DatapathProgram& program, const std::string& iface) {
        set_xdp_master(program, port, accept, xdp::interface_mac(iface).value_or(pkt::MacAddr{}));
    };
    return spec;
}

int run_master(Runtime& runtime, const Options& cs) {
    std::optional<MasterClock> clock;
    const bool xdp = runtime.xdp_datapath() != nullptr;
    try {
        clock =
            MasterClock::setup(runtime.port_ids(), xdp ? TimestampMode::software : cs.timestamps,
                               cs.master_sw_clock());
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: {}\n", kApp, e.what());
        return 1;
    }
    fmt::print("{}: master, timestamps {}{}\n", kApp, xdp ? kXdpStamps : "", clock->describe());
    if (cs.key)
        fmt::print("{}: --key: only requests that carry the key's MAC are answered\n", kApp);
    std::vector<pkt::MacAddr> macs(RTE_MAX_ETHPORTS);
    for (const auto& port : runtime.ports()) macs[port->id()] = port->mac();

    report_datapath(runtime);
    nlohmann::json config = config_json(cs);
    config["timestamps"] = xdp ? "xdp" : clock->nic() ? "hw" : "sw";
    stats::register_telemetry("/linerate/clocksync", "Role and timestamp source",
                              [config](const std::string&) { return config; });
    runtime.json_keys().update(
        {{"role", "master"}, {"timestamps", config["timestamps"]}, {"clocksync", config}});
    return runtime.run([&](WorkerContext& ctx) {
        master_loop(ctx, *clock, cs.udp_port, macs,
                    {.verify = cs.verify_checksums, .accept_offloaded = !cs.strict_checksums},
                    cs.key);
    });
}

// Where worker 0 sends probes from and to (and the background load, if asked for).
ClientIo client_io(const Runtime& runtime, const Options& cs) {
    const unsigned workers = runtime.workers().size();
    if (workers > 1)
        fmt::print(
            "{}: note: only worker 0 runs the session; the {} other worker(s) drain "
            "their queues (give the client one worker lcore)\n",
            kApp, workers - 1);
    if (runtime.ports().size() > 1)
        fmt::print("{}: note: probes go out on port {} only\n", kApp, runtime.ports()[0]->id());
    ClientIo io;
    io.spec.src_mac = runtime.ports()[0]->mac();
    io.spec.dst_mac = cs.master_mac.value_or(pkt::MacAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
    io.spec.src_ip = cs.client_ip;
    io.spec.dst_ip = cs.master_ip;
    io.spec.src_port = io.spec.dst_port = cs.udp_port;
    io.learn_master_mac = !cs.master_mac;
    io.pool = runtime.pool();
    // Only net_af_xdp mbufs carry the steering program's stamps: no other port pays the
    // CLOCK_MONOTONIC read that converts them.
    io.rx_stamps = runtime.plan().served.rx_stamp &&
                   std::any_of(runtime.ports().begin(), runtime.ports().end(),
                               [](const auto& port) { return port->driver() == "net_af_xdp"; });
    io.turn = cs.xdp_turn && io.rx_stamps && runtime.plan().served.hook;
    if (cs.xdp_turn && !io.turn)
        throw cli::UsageError(
            "--xdp-turn needs the steering program on an --af-xdp port with the receive stamps "
            "and --xdp-steer app or udp:PORT");
    if (io.turn)
        fmt::print(
            "{}: requests leave from the steering program, turned from the master's echo "
            "(t1 stamped in {})\n",
            kApp, xdp::kSteerObjectName);
    if (cs.background_pps > 0) {
        try {
            io.background = BackgroundLoad(io.pool, io.spec, cs.background_size, cs.background_pps);
        } catch (const std::invalid_argument& e) {
            throw cli::UsageError(e.what());
        }
        fmt::print("{}: background load: {} frames/s of {} bytes on port {} (UDP port 9)\n", kApp,
                   cs.background_pps, cs.background_size, runtime.ports()[0]->id());
    }
    return io;
}

// --xdp-tx: the sender on port 0's interface (a net_af_xdp port's; null without --xdp-tx).
std::unique_ptr<xdp::XdpTransmitter> open_xdp_tx(const Runtime& runtime, const Options& cs) {
    if (!cs.xdp_tx) return nullptr;
    const auto& port = *runtime.ports()[0];
    const std::string ifname = eal::af_xdp_interface(port.id());
    if (ifname.empty())
        throw cli::UsageError(fmt::format(
            "--xdp-tx sends from an interface's XDP layer: port {} is {}, not an --af-xdp port",
            port.id(), port.driver()));
    try {
        auto sender = std::make_unique<xdp::XdpTransmitter>(ifname);
        fmt::print("{}: requests leave by XDP_TX on {} (t1 stamped in {})\n", kApp, ifname,
                   xdp::kXdpTxObjectName);
        return sender;
    } catch (const std::runtime_error& e) {
        throw cli::UsageError(std::string("--xdp-tx: ") + e.what());
    }
}

// The client's clock for other programs: --export's page, --chrony-shm's segment,
// --clockbound's segment (opened before the EAL: a bad path is a usage error).
struct ClientSinks {
    std::unique_ptr<TimeExport> page;
    std::unique_ptr<ChronyShm> chrony;
    std::unique_ptr<ClockBoundWriter> clockbound;
};

std::unique_ptr<ClockBoundWriter> open_clockbound(const Options& cs, const ClientConfig& config) {
    if (!cs.clockbound_path) return nullptr;
    auto writer =
        std::make_unique<ClockBoundWriter>(*cs.clockbound_path, uint64_t(cs.export_max_age() * 1e6),
                                           drift_bound_ppb(config.drift_bound_ppm));
    fmt::print(
        "{}: writing the bound on CLOCK_REALTIME to the ClockBound segment {} (FreeRunning after "
        "{} ms without a good sync)\n",
        kApp, writer->path(), cs.export_max_age());
    return writer;
}

ClientSinks open_sinks(const Options& cs, const LocalClock& local) {
    ClientSinks sinks;
    if (cs.export_name) {
        sinks.page = std::make_unique<TimeExport>(*cs.export_name,
                                                  uint64_t(cs.export_max_age() * 1e6), local.sim);
        fmt::print(
            "{}: exporting the synchronized clock to {} (invalid after {} ms without a good "
            "sync)\n",
            kApp, sinks.page->path(), cs.export_max_age());
    }
    if (cs.chrony_shm) {
        sinks.chrony = std::make_unique<ChronyShm>(*cs.chrony_shm);
        fmt::print("{}: feeding chronyd's SHM refclock unit {}\n", kApp, *cs.chrony_shm);
    }
    return sinks;
}

// The client's report as a runtime feature: its figures (report.hpp: the JSON, telemetry,
// --metrics and the summary) and its other JSON keys, read from the session after the run.
class ClientReportFeature : public Feature {
  public:
    ClientReportFeature(const Options& cs, const ClientSession& session, const SyncedClock& synced,
                        const ClientWorker& client, const ClientSinks& sinks)
        : cs_(cs),
          session_(session),
          synced_(synced),
          client_(client),
          sinks_(sinks),
          figures_(client_figures(session, synced, report_)) {}

    const stats::FigureSet* figures() const override { return &figures_; }
    // STATUS= and the stats line's end; a line when the client gains or loses its sync.
    std::string status() override {
        const std::string now = client_status(synced_.snapshot().state, synced_.local().now(),
                                              uint64_t(cs_.export_max_age() * 1e6), cs_.master_ip);
        const bool synchronized = now.starts_with("synchronized");
        if (synchronized != synchronized_) fmt::print("{}: {}\n", kApp, now);
        synchronized_ = synchronized;
        return now;
    }
    void workers_stopped() override {
        report_ = {session_.summary(), session_.sync(), client_.master_mac(), cs_.verification()};
    }
    void add_json(nlohmann::json& j) const override {
        add_client_json(j, report_);
        if (sinks_.page) j["export"] = sinks_.page->path();
        if (sinks_.chrony) j["chrony_samples"] = sinks_.chrony->samples();
        if (sinks_.clockbound) {
            j["clockbound"] = sinks_.clockbound->path();
            j["clockbound_writes"] = sinks_.clockbound->writes();
        }
        j["role"] = "client";
        j["clocksync"] = config_json(cs_);
    }

  private:
    const Options& cs_;
    const ClientSession& session_;
    const SyncedClock& synced_;
    const ClientWorker& client_;
    const ClientSinks& sinks_;
    ClientReport report_;        // filled once the workers stopped
    bool synchronized_ = false;  // as the last status() said
    const stats::FigureSet figures_;
};

int run_client(Runtime& runtime, const Options& cs, ClientSession& session, LocalClock local,
               std::unique_ptr<ClockBoundWriter> clockbound) {
    ClientIo io = client_io(runtime, cs);
    const std::unique_ptr<xdp::XdpTransmitter> xdp_tx = open_xdp_tx(runtime, cs);
    io.xdp_tx = xdp_tx.get();
    SyncedClock synced(local);
    ClientSinks sinks;
    try {
        sinks = open_sinks(cs, local);
    } catch (const std::runtime_error& e) {
        fmt::print(stderr, "{}: {}\n", kApp, e.what());
        return 1;
    }
    sinks.clockbound = std::move(clockbound);
    ClientWorker client(session, synced, std::move(io),
                        {sinks.page.get(), sinks.chrony.get(), sinks.clockbound.get()});
    fmt::print("{}: client {}, timestamps sw: clock_gettime({}){}\n", kApp, cs.client_id,
               clock_name(cs.client_clock()),
               local.sim ? " through the simulated clock (verification mode)" : "");
    if (cs.key)
        fmt::print("{}: --key: requests signed, only answers that carry the key's MAC taken\n",
                   kApp);
    ClientReportFeature report(cs, session, synced, client, sinks);
    runtime.add_feature(report);
    return runtime.run([&](WorkerContext& ctx) {
        if (ctx.slot.index == 0)
            client.run(ctx);
        else
            drain_loop(ctx, cs.udp_port);
    });
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli(
        "clocksync: `clocksync master` answers clock-sync requests with receive and transmit "
        "times; `clocksync client` probes a master every sync period, keeps a synchronized clock "
        "and reports its uncertainty bound epsilon",
        kApp);
    cli::CommonOptions options;
    Options cs;
    const OptionTables tables = add_options(cli, options, cs);
    // Parsed once, here: the board's counters depend on the role.
    cli::SplitArgs args = cli::parse_or_exit(cli, argc, argv);

    std::unique_ptr<ClientSession> session;
    std::unique_ptr<ClockBoundWriter> clockbound;
    LocalClock local;
    try {
        check_role(tables, cs);
        if (cs.role == Role::client) {
            local.system = clock_id(cs.client_clock());
            // The simulated drift is zero here, a moment before the run starts.
            ClientConfig config = make_client_config(cs, clock_ns(local.system));
            local.sim = config.sim;
            session = std::make_unique<ClientSession>(config);
            clockbound = open_clockbound(cs, config);
        }
    } catch (const std::exception& e) {  // bad values, or a --clockbound path we cannot write
        cli::usage_error(kApp, e.what());
    }

    const bool client = cs.role == Role::client;
    // The client takes t4 from the steering program's receive stamp (docs/clocksync.md, "t4 in
    // the XDP hook").
    auto served = [&] {
        return xdp::SteerFilter{xdp::SteerMode::udp_port, cs.udp_port, client && cs.rx_stamps,
                                client && cs.xdp_turn};
    };
    AppInfo info{kApp, client ? "clocksync client" : "clocksync master", kDrops,
                 client ? stats::Names(kClientCounters) : stats::Names(kMasterCounters), served};
    info.xdp_datapath = xdp_program(cs, options);
    info.steer_hook = {"clocksync_steer.bpf.o", "clocksync warm-up echoes turned into requests",
                       "cs_turn"};
    Runtime runtime(info, std::move(args), options);
    return runtime.run_app([&] {
        return client ? run_client(runtime, cs, *session, local, std::move(clockbound))
                      : run_master(runtime, cs);
    });
}
