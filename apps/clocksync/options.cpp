#include "clocksync/options.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "cli/command_line.hpp"

namespace linerate::clocksync {

namespace {

// SystemClock's values as --sw-clock and the JSON spell them.
constexpr const char* kClockKeys[] = {"raw", "realtime", "monotonic"};

// The simulated clock's offset, its drift over a run and θ are all held in 64-bit signed
// differences; 2^62 ns leaves them room (real clocks may be any amount apart: only
// wrap-safe differences of their readings are used).
constexpr int64_t kMaxSimOffsetNs = int64_t(1) << 62;

constexpr const char* kClientOnly[] = {
    "--master-mac",       "--master-ip",         "--client-ip",
    "--client-id",        "--sync-period-ms",    "--probes",
    "--probe-gap-us",     "--probe-timeout-ms",  "--drift-bound-ppm",
    "--sample-period-us", "--sim-offset-ns",     "--sim-drift-ppm",
    "--pipeline",         "--background-pps",    "--background-size",
    "--export",           "--export-max-age-ms", "--chrony-shm",
    "--clockbound",       "--master-clock",      "--keep-sync-rounds",
    "--warmup-us",        "--no-warmup-echo",    "--no-rx-stamps",
    "--xdp-tx",
};
constexpr const char* kMasterOnly[] = {"--timestamps", "--sw-clock", "--datapath", "--xdp-mode"};

SystemClock system_clock_named(const std::string& name) {
    return name == "realtime"    ? SystemClock::realtime
           : name == "monotonic" ? SystemClock::monotonic
                                 : SystemClock::raw;
}

// ms/us as given on the command line to whole ns; 0 when it rounds away.
uint64_t to_ns(double value, double ns_per_unit) {
    return uint64_t(std::llround(value * ns_per_unit));
}

// Role, port, timestamps, addresses.
void add_role_options(CLI::App& app, Options& o) {
    app.add_option_function<std::string>(
           "--role",
           [&o](const std::string& s) { o.role = s == "client" ? Role::client : Role::master; },
           "master: answer requests; client: probe a master, keep a synchronized clock and "
           "report its bound epsilon")
        ->required()
        ->check(CLI::IsMember({"master", "client"}));
    app.add_option("--udp-port", o.udp_port, "UDP port of clocksync requests and responses")
        ->check(CLI::Range(1, 65535))
        ->capture_default_str();
    app.add_option_function<std::string>(
           "--timestamps",
           [&o](const std::string& s) {
               o.timestamps = s == "hw"   ? TimestampMode::hardware
                              : s == "sw" ? TimestampMode::software
                                          : TimestampMode::automatic;
           },
           "Master: where t2/t3 come from: hw = the NIC clock (rte_eth_timesync), sw = "
           "clock_gettime(CLOCK_MONOTONIC_RAW), auto = hw when every port supports it")
        ->check(CLI::IsMember({"auto", "hw", "sw"}))
        ->default_str("auto");
    app.add_option_function<std::string>(
           "--sw-clock", [&o](const std::string& s) { o.sw_clock = system_clock_named(s); },
           "Master: the system clock of sw timestamps: raw = CLOCK_MONOTONIC_RAW, realtime = "
           "CLOCK_REALTIME (Unix time, for clients feeding chronyd), monotonic = CLOCK_MONOTONIC "
           "(the XDP datapath's); verification mode needs the client's --master-clock to match")
        ->check(CLI::IsMember({"raw", "realtime", "monotonic"}))
        ->default_str("raw");
    xdp::add_datapath_option(app, o.datapath, o.xdp_mode);

    auto mac_check = CLI::Validator(
        [](std::string& s) { return parse_mac(s) ? std::string() : "bad MAC '" + s + "'"; }, "MAC");
    auto ip_check = CLI::Validator(
        [](std::string& s) { return parse_ipv4(s) ? std::string() : "bad IPv4 '" + s + "'"; },
        "A.B.C.D");
    app.add_option_function<std::string>(
           "--master-mac", [&o](const std::string& s) { o.master_mac = parse_mac(s); },
           "Client: the master's MAC (default: broadcast until learned from the first response)")
        ->check(mac_check);
    app.add_option_function<std::string>(
           "--master-ip", [&o](const std::string& s) { o.master_ip = *parse_ipv4(s); },
           "Client: destination IPv4 of requests")
        ->check(ip_check)
        ->default_str("192.168.0.2");
    app.add_option_function<std::string>(
           "--client-ip", [&o](const std::string& s) { o.client_ip = *parse_ipv4(s); },
           "Client: source IPv4 of requests")
        ->check(ip_check)
        ->default_str("192.168.0.1");
}

// The client's probing: ids, periods, probes per round, timeouts, background load.
void add_probe_options(CLI::App& app, Options& o) {
    app.add_option("--client-id", o.client_id, "Client: id carried in requests")
        ->capture_default_str();
    app.add_option("--sync-period-ms", o.sync_period_ms, "Client: time between sync rounds")
        ->check(linerate::cli::finite_range(1e-3, 3.6e6))
        ->capture_default_str();
    app.add_option("--probes", o.probes,
                   "Client: requests per round; the one with the smallest round trip is used")
        ->check(CLI::Range(1u, kMaxProbes))
        ->capture_default_str();
    app.add_option("--probe-gap-us", o.probe_gap_us,
                   "Client: least time from one probe of a round to the next")
        ->check(linerate::cli::finite_range(0.0, 3.6e9))
        ->capture_default_str();
    app.add_flag("--pipeline", o.pipeline,
                 "Client: send the probes of a round without waiting for each answer (default: "
                 "each waits for the previous answer, so it crosses a warm path)");
    app.add_option("--keep-sync-rounds", o.keep_sync_rounds,
                   "Client: a round's best probe replaces the sync only when it gives the tighter "
                   "bound, or the sync is this many rounds old (0: every answered round replaces "
                   "it)")
        ->check(CLI::Range(0u, 1000u))
        ->capture_default_str();
    app.add_option("--warmup-us", o.warmup_us,
                   "Client: send a warm-up frame this long before each round's first probe; the "
                   "master sends it back unstamped (its echo), so the probe crosses a path warm "
                   "both ways (0 = none)")
        ->check(linerate::cli::finite_range(0.0, 1e6))
        ->default_str(
            fmt::format("{} with --probes 1 and a longer sync period, else 0", kDefaultWarmupUs));
    app.add_flag_callback(
        "--no-warmup-echo", [&o] { o.warmup_echo = false; },
        "Client: the warm-up frame asks for no echo (the master drops it: the way up alone is "
        "warmed)");
    app.add_flag_callback(
        "--no-rx-stamps", [&o] { o.rx_stamps = false; },
        "Client behind --af-xdp: t4 read in the poll loop, not the steering program's receive "
        "stamp");
    app.add_flag("--xdp-tx", o.xdp_tx,
                 "Client behind --af-xdp: requests leave from the interface's XDP layer "
                 "(bpf/xdp_tx.bpf.c by a live-frames test run, XDP_TX) with t1 the program's "
                 "stamp, not through the AF_XDP socket; needs --master-clock monotonic, and a "
                 "receiver that takes XDP frames (a veth's peer needs an XDP program in native "
                 "mode); without an answer to the first requests the client goes back to the "
                 "socket");
    app.add_option("--background-pps", o.background_pps,
                   "Client, benchmark aid: also send this many plain UDP frames/s (not clocksync) "
                   "on the probe port, background traffic for the master's port (0 = none)")
        ->check(linerate::cli::finite_range(0.0, 1e9))
        ->capture_default_str();
    app.add_option("--background-size", o.background_size,
                   "Client: bytes per background frame (Ethernet header to payload end)")
        ->check(CLI::Range(60u, 1514u))
        ->capture_default_str();
    app.add_option("--probe-timeout-ms", o.probe_timeout_ms,
                   "Client: a probe unanswered this long is lost (counted in timeouts)")
        ->check(linerate::cli::finite_range(1e-3, 3.6e6))
        ->capture_default_str();
    app.add_option("--drift-bound-ppm", o.drift_bound_ppm,
                   "Client: rho, the bound on the clocks' relative drift (epsilon grows by it)")
        ->check(linerate::cli::finite_range(0.0, kMaxDriftBoundPpm))
        ->capture_default_str();
    app.add_option("--sample-period-us", o.sample_period_us,
                   "Client: grid on which epsilon is sampled (plus just before each sync)")
        ->check(linerate::cli::finite_range(1e-3, 3.6e9))
        ->capture_default_str();
}

// The client's verification mode and where it exports its clock.
void add_verification_and_export_options(CLI::App& app, Options& o) {
    app.add_option_function<int64_t>(
           "--sim-offset-ns", [&o](int64_t v) { o.sim_offset_ns = v; },
           "Client, verification mode: run the local clock this many ns off the master's (same "
           "machine, at most 2^62 ns = 146 years either way) and count violations |true offset "
           "- theta| > epsilon")
        ->check(CLI::Range(-kMaxSimOffsetNs, kMaxSimOffsetNs));
    app.add_option_function<double>(
           "--sim-drift-ppm", [&o](double v) { o.sim_drift_ppm = v; },
           "Client, verification mode: run the local clock this many ppm fast (negative: slow)")
        ->check(linerate::cli::finite_range(-999999.0, 999999.0));
    app.add_option(
           "--export", o.export_name,
           "Client: publish the synchronized clock and its bound in the POSIX shared-memory "
           "page /NAME, for linerate/truetime.h readers and linerate-tt")
        ->check(CLI::Validator(
            [](std::string& s) {
                const bool ok = !s.empty() && s.size() <= TT_NAME_MAX &&
                                s.find('/', s[0] == '/' ? 1 : 0) == std::string::npos;
                return ok ? std::string() : "bad page name '" + s + "' (one path component)";
            },
            "NAME"));
    app.add_option("--export-max-age-ms", o.export_max_age_ms,
                   "Client: the exported page turns invalid once the last good sync is this old "
                   "(default: 10 sync periods); it also turns invalid when the client stops")
        ->check(linerate::cli::finite_range(1e-3, 3.6e6));
    app.add_option("--chrony-shm", o.chrony_shm,
                   "Client: also give chronyd one sample per sync through its SHM refclock unit N "
                   "(chrony.conf: refclock SHM N); the master's clock must count from the Unix "
                   "epoch")
        ->check(CLI::Range(0, 999));
    app.add_option("--clockbound", o.clockbound_path,
                   "Client: also write the bound on the host's CLOCK_REALTIME as an AWS "
                   "ClockBound (protocol 2) segment at PATH, e.g. /var/run/clockbound/shm0, for "
                   "ClockBound's clients; needs --master-clock realtime")
        ->check(CLI::Validator(
            [](std::string& s) { return s.empty() ? std::string("empty path") : std::string(); },
            "PATH"));
    app.add_option_function<std::string>(
           "--master-clock",
           [&o](const std::string& s) {
               o.master_clock = s == "unknown" ? SystemClock::raw : system_clock_named(s);
           },
           "Client: what the master's clock is (the wire does not say): realtime = Unix time as "
           "CLOCK_REALTIME counts it (master on --sw-clock realtime, or a NIC clock kept on UTC); "
           "monotonic = CLOCK_MONOTONIC (master on --datapath xdp or --sw-clock monotonic; the "
           "client's clock is then CLOCK_MONOTONIC too); unknown: the client reads "
           "CLOCK_MONOTONIC_RAW, and verification mode takes the master's to be that")
        ->check(CLI::IsMember({"unknown", "realtime", "monotonic"}))
        ->default_str("unknown");
}

// ClockBound's bound is the error of CLOCK_REALTIME against the master's time: only meaningful
// when that time is Unix time, which the client cannot learn from the wire (and verification
// mode's truth is the raw clock).
void check_clockbound(const Options& o) {
    if (o.clockbound_path && o.master_clock != SystemClock::realtime)
        throw std::invalid_argument(
            "--clockbound needs --master-clock realtime: its bound is CLOCK_REALTIME's error "
            "against the master's time, which must be Unix time (run the master with --sw-clock "
            "realtime)");
    if (o.master_clock == SystemClock::realtime && o.verification())
        throw std::invalid_argument(
            "--master-clock realtime with --sim-offset-ns/--sim-drift-ppm: verification mode "
            "needs the master on CLOCK_MONOTONIC_RAW or CLOCK_MONOTONIC (a clock that is not "
            "stepped)");
    // linerate/truetime.h's readers read CLOCK_MONOTONIC_RAW.
    if (o.export_name && o.client_clock() != SystemClock::raw)
        throw std::invalid_argument(
            "--export with --master-clock monotonic: the page's readers read "
            "CLOCK_MONOTONIC_RAW");
}

// The XDP master stamps with CLOCK_MONOTONIC in the driver: no NIC clock, no other system clock.
void check_master_datapath(const CLI::App& app, const Options& o) {
    if (o.datapath != xdp::Datapath::xdp) return;
    if (o.timestamps == TimestampMode::hardware)
        throw std::invalid_argument(
            "--timestamps hw with --datapath xdp: the XDP program stamps with CLOCK_MONOTONIC");
    if (app.count("--sw-clock") > 0 && o.sw_clock != SystemClock::monotonic)
        throw std::invalid_argument(
            "--datapath xdp stamps with CLOCK_MONOTONIC (bpf_ktime_get_ns): --sw-clock must be "
            "monotonic or left out");
}

}  // namespace

void add_options(CLI::App& app, Options& o) {
    add_role_options(app, o);
    add_probe_options(app, o);
    add_verification_and_export_options(app, o);
    cli::add_checksum_flags(app, o.verify_checksums, o.strict_checksums,
                            "Take requests (master) and responses (client)");
}

void check_role(const CLI::App& app, const Options& o) {
    const bool client = o.role == Role::client;
    auto reject = [&](const char* name, const char* role) {
        if (app.count(name) > 0)
            throw std::invalid_argument(std::string(name) + " applies to --role " + role + " only");
    };
    for (const char* name : kClientOnly)
        if (!client) reject(name, "client");
    for (const char* name : kMasterOnly)
        if (client) reject(name, "master");
    check_master_datapath(app, o);
    // The program's stamp is CLOCK_MONOTONIC; converting it to the raw clock would cost the
    // bound up to 10 % of the run's length (the kernel may slew CLOCK_MONOTONIC that much).
    if (o.xdp_tx && o.client_clock() != SystemClock::monotonic)
        throw std::invalid_argument(
            "--xdp-tx stamps t1 with CLOCK_MONOTONIC (bpf_ktime_get_ns): it needs --master-clock "
            "monotonic");
}

namespace {

// --keep-sync-rounds as a time; with --export or --clockbound at most the max age less two
// periods: a sync kept at that age is replaced by the next answered round, a period (and the
// round trip's jitter) later, before the exported bound turns stale.
uint64_t keep_sync_ns(const Options& o) {
    double ms = o.keep_sync_rounds * o.sync_period_ms;
    if (o.export_name || o.clockbound_path)
        ms = std::min(ms, o.export_max_age() - 2 * o.sync_period_ms);
    return ms > 0 ? to_ns(ms, 1e6) : 0;
}

}  // namespace

ClientConfig make_client_config(const Options& o, uint64_t epoch_ns) {
    ClientConfig c;
    c.client_id = o.client_id;
    c.udp_port = o.udp_port;
    c.verify_checksums = o.verify_checksums;
    c.strict_checksums = o.strict_checksums;
    c.probes = o.probes;
    c.sync_period_ns = to_ns(o.sync_period_ms, 1e6);
    c.probe_gap_ns = to_ns(o.probe_gap_us, 1e3);
    c.pipeline = o.pipeline;
    c.probe_timeout_ns = to_ns(o.probe_timeout_ms, 1e6);
    c.sample_period_ns = to_ns(o.sample_period_us, 1e3);
    c.drift_bound_ppm = o.drift_bound_ppm;
    c.keep_sync_ns = keep_sync_ns(o);
    c.warmup_ns = to_ns(o.warmup_us_in_use(), 1e3);
    c.warmup_echo = o.warmup_echo;
    if (c.warmup_ns >= c.sync_period_ns)
        throw std::invalid_argument("--warmup-us must be below --sync-period-ms");
    if (c.sync_period_ns == 0 || c.probe_timeout_ns == 0 || c.sample_period_ns == 0)
        throw std::invalid_argument("sync period, probe timeout and sample period must be >= 1 ns");
    if (o.probes < 1 || o.probes > kMaxProbes)
        throw std::invalid_argument(fmt::format("--probes must be within [1, {}]", kMaxProbes));
    if (o.export_max_age_ms && !o.export_name && !o.clockbound_path)
        throw std::invalid_argument("--export-max-age-ms needs --export or --clockbound");
    if (o.export_max_age_ms && *o.export_max_age_ms < o.sync_period_ms)
        throw std::invalid_argument(
            "--export-max-age-ms below --sync-period-ms: the page would turn invalid between two "
            "good rounds");
    check_clockbound(o);
    if (o.verification())
        c.sim =
            SimClock::from_ppm(o.sim_offset_ns.value_or(0), o.sim_drift_ppm.value_or(0), epoch_ns);
    return c;
}

nlohmann::json config_json(const Options& o) {
    nlohmann::json j;
    j["role"] = o.role == Role::client ? "client" : "master";
    j["udp_port"] = o.udp_port;
    j["verify_checksums"] = o.verify_checksums;
    j["strict_checksums"] = o.strict_checksums;
    if (o.role == Role::master) {
        j["sw_clock"] = kClockKeys[size_t(o.master_sw_clock())];
        return j;
    }
    j["client_id"] = o.client_id;
    j["master_mac"] = o.master_mac ? format_mac(*o.master_mac) : "learn";
    j["master_ip"] = format_ipv4(o.master_ip);
    j["client_ip"] = format_ipv4(o.client_ip);
    j["sync_period_ms"] = o.sync_period_ms;
    j["probes"] = o.probes;
    j["probe_gap_us"] = o.probe_gap_us;
    j["pipeline"] = o.pipeline;
    j["keep_sync_rounds"] = o.keep_sync_rounds;
    j["warmup_us"] = o.warmup_us_in_use();
    j["warmup_echo"] = o.warmup_echo;
    j["xdp_tx"] = o.xdp_tx;
    j["background_pps"] = o.background_pps;
    if (o.background_pps > 0) j["background_size"] = o.background_size;
    j["probe_timeout_ms"] = o.probe_timeout_ms;
    j["drift_bound_ppm"] = o.drift_bound_ppm;
    j["sample_period_us"] = o.sample_period_us;
    if (o.export_name) {
        j["export"] = *o.export_name;
        j["export_max_age_ms"] = o.export_max_age();
    }
    if (o.chrony_shm) j["chrony_shm"] = *o.chrony_shm;
    j["master_clock"] =
        o.master_clock == SystemClock::raw ? "unknown" : kClockKeys[size_t(o.master_clock)];
    if (o.clockbound_path) {
        j["clockbound"] = *o.clockbound_path;
        j["export_max_age_ms"] = o.export_max_age();
    }
    if (o.verification()) {
        j["sim_offset_ns"] = o.sim_offset_ns.value_or(0);
        j["sim_drift_ppm"] = o.sim_drift_ppm.value_or(0);
    }
    return j;
}

}  // namespace linerate::clocksync
