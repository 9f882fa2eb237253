#include "clocksync/roles.hpp"

#include <fmt/core.h>
#include <rte_ethdev.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "clocksync/client_report_feature.hpp"
#include "clocksync/report.hpp"
#include "clocksync/worker_loops.hpp"
#include "eal/af_xdp_ports.hpp"
#include "runtime/xdp_datapath_feature.hpp"
#include "stats/telemetry.hpp"
#include "xdp/xdp_tx/xdp_transmitter.hpp"

namespace linerate::clocksync {

namespace {

constexpr const char* kApp = "clocksync";
constexpr const char* kXdpStamps =
    "xdp: bpf_ktime_get_ns() (CLOCK_MONOTONIC) at the program's entry and right before XDP_TX; "
    "its slow path ";

// Whether the frames carry the steering program's receive stamps: asked for (SteerFilter::
// rx_stamp), and only net_af_xdp mbufs carry them, so no other port pays the CLOCK_MONOTONIC
// read that converts them.
bool receive_stamps(const Runtime& runtime) {
    return runtime.plan().served.rx_stamp &&
           std::any_of(runtime.ports().begin(), runtime.ports().end(),
                       [](const auto& port) { return port->driver() == "net_af_xdp"; });
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
    io.rx_stamps = receive_stamps(runtime);
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

}  // namespace

ClientStart start_client(const Options& cs) {
    ClientStart start;
    try {
        start.local.system = clock_id(cs.client_clock());
        // The simulated drift is zero here, a moment before the run starts.
        ClientConfig config = make_client_config(cs, clock_ns(start.local.system));
        start.local.sim = config.sim;
        start.session = std::make_unique<ClientSession>(config);
        start.clockbound = open_clockbound(cs, config);
    } catch (const std::exception& e) {  // bad values, or a --clockbound path we cannot write
        cli::usage_error(kApp, e.what());
    }
    return start;
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
    // t2 from the steering program's receive stamp (docs/clocksync.md, "t2 in the XDP hook").
    const bool rx_stamps = !xdp && receive_stamps(runtime) && clock->stamp_clock();
    if (rx_stamps)
        fmt::print("{}: t2 from the steering program's receive stamp where a request has one\n",
                   kApp);
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
                    cs.key, rx_stamps);
    });
}

int run_client(Runtime& runtime, const Options& cs, ClientStart& start) {
    ClientSession& session = *start.session;
    const LocalClock local = start.local;
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
    sinks.clockbound = std::move(start.clockbound);
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

}  // namespace linerate::clocksync
