#include "clocksync/options.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>

#include "cli/command_line.hpp"

namespace linerate::clocksync {

namespace {

// SystemClock's values as --sw-clock and the JSON spell them.
constexpr const char* kClockKeys[] = {"raw", "realtime", "monotonic"};

// The simulated clock's offset, its drift over a run and θ are all held in 64-bit signed
// differences; 2^62 ns leaves them room (real clocks may be any amount apart: only
// wrap-safe differences of their readings are used).
constexpr int64_t kMaxSimOffsetNs = int64_t(1) << 62;

SystemClock system_clock_named(const std::string& name) {
    return name == "realtime"    ? SystemClock::realtime
           : name == "monotonic" ? SystemClock::monotonic
                                 : SystemClock::raw;
}

// ms/us as given on the command line to whole ns; 0 when it rounds away.
uint64_t to_ns(double value, double ns_per_unit) {
    return uint64_t(std::llround(value * ns_per_unit));
}

// The help's group of options a table takes only to refuse them by name: the help leaves it out
// (CLI11's hidden group "" would leave the name out of their parse errors too).
constexpr const char* kUnlisted = "unlisted";

class UnlistingFormatter : public CLI::Formatter {
  public:
    std::string make_group(std::string group, bool is_positional,
                           std::vector<const CLI::Option*> options) const override {
        if (group == kUnlisted) return {};
        return CLI::Formatter::make_group(std::move(group), is_positional, std::move(options));
    }
};

// --role ROLE, the older form of the subcommand; unlisted in the subcommands, where it is taken
// only to be refused as a second role.
void add_role_option(CLI::App& app, Options& o, bool shown) {
    cli::add_choice(app, "--role", o.role, {{"master", Role::master}, {"client", Role::client}},
                    "master: answer requests; client: probe a master, keep a synchronized clock "
                    "and report its bound epsilon (`clocksync master|client` is the preferred "
                    "form)")
        ->group(shown ? "Options" : kUnlisted);
}

// What both roles take: the port and the checksum checks.
void add_shared_options(CLI::App& app, Options& o) {
    cli::add_bounded(app, "--udp-port", o.udp_port, 1, 65535,
                     "UDP port of clocksync requests and responses");
    cli::add_checksum_flags(app, o.verify_checksums, o.strict_checksums,
                            "Take requests (master) and responses (client)");
    cli::add_key_option(app, o.key,
                        "The shared secret of master and clients (64 hex digits, mode 0600: "
                        "umask 077; openssl rand -hex 32 > FILE): every request and response "
                        "carries its MAC; one without a valid MAC is dropped (bad_auth), never "
                        "answered, never a sample");
}

// The master's own: where its timestamps come from, and its datapath.
void add_master_options(CLI::App& app, Options& o) {
    cli::add_choice(app, "--timestamps", o.timestamps,
                    {{"auto", TimestampMode::automatic},
                     {"hw", TimestampMode::hardware},
                     {"sw", TimestampMode::software}},
                    "Master: where t2/t3 come from: hw = the NIC clock (rte_eth_timesync), sw = "
                    "clock_gettime(CLOCK_MONOTONIC_RAW), auto = hw when every port supports it")
        ->default_str("auto");
    app.add_option_function<std::string>(
           "--sw-clock", [&o](const std::string& s) { o.sw_clock = system_clock_named(s); },
           "Master: the system clock of sw timestamps: raw = CLOCK_MONOTONIC_RAW, realtime = "
           "CLOCK_REALTIME (Unix time, for clients feeding chronyd), monotonic = CLOCK_MONOTONIC "
           "(the XDP datapath's); verification mode needs the client's --master-clock to match")
        ->check(CLI::IsMember({"raw", "realtime", "monotonic"}))
        ->default_str("raw");
    o.datapath.add(app);
}

// The client's addresses: the master's MAC and IPv4, its own IPv4.
void add_address_options(CLI::App& app, Options& o) {
    auto mac_check = CLI::Validator(
        [](std::string& s) { return parse_mac(s) ? std::string() : "bad MAC '" + s + "'"; }, "MAC");
    app.add_option_function<std::string>(
           "--master-mac", [&o](const std::string& s) { o.master_mac = parse_mac(s); },
           "Client: the master's MAC (default: broadcast until learned from the first response)")
        ->check(mac_check);
    app.add_option_function<std::string>(
           "--master-ip", [&o](const std::string& s) { o.master_ip = *parse_ipv4(s); },
           "Client: destination IPv4 of requests")
        ->check(cli::ipv4_address())
        ->default_str("192.168.0.2");
    app.add_option_function<std::string>(
           "--client-ip", [&o](const std::string& s) { o.client_ip = *parse_ipv4(s); },
           "Client: source IPv4 of requests")
        ->check(cli::ipv4_address())
        ->default_str("192.168.0.1");
}

// The client's probing: ids, periods, probes per round, timeouts, the bound's drift.
void add_probe_options(CLI::App& app, Options& o) {
    app.add_option("--client-id", o.client_id, "Client: id carried in requests")
        ->capture_default_str();
    cli::add_bounded(app, "--sync-period-ms", o.sync_period_ms, 1e-3, 3.6e6,
                     "Client: time between sync rounds");
    app.add_option("--probes", o.probes, "Client: requests per round, combined by --estimator")
        ->check(CLI::Range(1u, kMaxProbes))
        ->default_str(fmt::format("one per {} ms of the sync period, 1 to {}",
                                  kDefaultProbeSpacingMs, kDefaultProbes));
    cli::add_choice(app, "--estimator", o.estimator,
                    {{"intersect", Estimator::intersect}, {"min-rtt", Estimator::min_rtt}},
                    "Client: how a round's probes make the sync: intersect = the middle of the "
                    "intersection of every probe's bound interval and the sync's; min-rtt = the "
                    "probe with the smallest round trip (or the sync kept, --keep-sync-rounds)")
        ->default_str("intersect");
    app.add_option("--probe-gap-us", o.probe_gap_us,
                   "Client: least time from one probe of a round to the next")
        ->check(linerate::cli::finite_range(0.0, 3.6e9))
        ->default_str(
            fmt::format("{} with the default probes; with --probes, 0", kDefaultProbeGapUs));
    app.add_flag("--pipeline", o.pipeline,
                 "Client: send the probes of a round without waiting for each answer (default: "
                 "each waits for the previous answer, so it crosses a warm path)");
    app.add_option("--keep-sync-rounds", o.keep_sync_rounds,
                   "Client, --estimator min-rtt: a round's best probe replaces the sync only "
                   "when it gives the tighter "
                   "bound, or the sync is this many rounds old (0: every answered round replaces "
                   "it)")
        ->check(CLI::Range(0u, 1000u))
        ->default_str(fmt::format("{} periods or {} ms, whichever is longer", kDefaultKeepRounds,
                                  kDefaultKeepMs));
    cli::add_bounded(app, "--probe-timeout-ms", o.probe_timeout_ms, 1e-3, 3.6e6,
                     "Client: a probe unanswered this long is lost (counted in timeouts)");
    cli::add_bounded(app, "--drift-bound-ppm", o.drift_bound_ppm, 0.0, kMaxDriftBoundPpm,
                     "Client: rho, the bound on the clocks' relative drift (epsilon grows by it)");
    cli::add_bounded(app, "--sample-period-us", o.sample_period_us, 1e-3, 3.6e9,
                     "Client: grid on which epsilon is sampled (plus just before each sync)");
}

// What the client's frames cross the path with: a warm-up frame, the XDP hook's stamps and
// sender, background load.
void add_path_options(CLI::App& app, Options& o) {
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
        "Behind --af-xdp: the client's t4 and the master's t2 read in the poll loop, not the "
        "steering program's receive stamp");
    app.add_flag(
        "--xdp-tx", o.xdp_tx,
        "Client behind --af-xdp: requests leave from the interface's XDP layer "
        "(lib/xdp/xdp_tx/xdp_tx.bpf.c by a live-frames test run, XDP_TX) with t1 the program's "
        "stamp, not through the AF_XDP socket; needs --master-clock monotonic, and a "
        "receiver that takes XDP frames (a veth's peer needs an XDP program in native "
        "mode); without an answer to the first requests the client goes back to the "
        "socket");
    app.add_flag(
        "--xdp-turn", o.xdp_turn,
        "Client behind --af-xdp: each request leaves from the steering program's receive path: "
        "the client sends a warm-up frame asking for its echo, and the program turns the "
        "master's echo into the request (XDP_TX, t1 its stamp), so the request and the answer "
        "cross the same kernel path; needs --master-clock monotonic, the receive stamps and a "
        "master that echoes warm-ups; without an answer to the first requests the client "
        "sends them itself");
    cli::add_bounded(
        app, "--background-pps", o.background_pps, 0.0, 1e9,
        "Client, benchmark aid: also send this many plain UDP frames/s (not clocksync) "
        "on the probe port, background traffic for the master's port (0 = none)");
    cli::add_bounded(app, "--background-size", o.background_size, 60u, 1514u,
                     "Client: bytes per background frame (Ethernet header to payload end)");
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
void check_master_datapath(const Options& o, bool sw_clock_given) {
    if (!o.datapath.xdp()) return;
    if (o.timestamps == TimestampMode::hardware)
        throw std::invalid_argument(
            "--timestamps hw with --datapath xdp: the XDP program stamps with CLOCK_MONOTONIC");
    if (sw_clock_given && o.sw_clock != SystemClock::monotonic)
        throw std::invalid_argument(
            "--datapath xdp stamps with CLOCK_MONOTONIC (bpf_ktime_get_ns): --sw-clock must be "
            "monotonic or left out");
}

// What cannot compute the MAC cannot take part with a key: refused, never a key ignored.
void check_key(const Options& o) {
    if (!o.key) return;
    if (o.role == Role::master && o.datapath.xdp())
        throw std::invalid_argument(
            "--key with --datapath xdp: the XDP program cannot compute the MAC; run the keyed "
            "master on --datapath dpdk (the default, also on --af-xdp)");
    if (o.role == Role::client && o.xdp_turn)
        throw std::invalid_argument(
            "--key with --xdp-turn: the steering program rewrites the signed request; leave "
            "--xdp-turn out (--xdp-tx sends keyed requests as signed)");
}

// The client's own options.
void add_client_options(CLI::App& app, Options& o) {
    add_address_options(app, o);
    add_probe_options(app, o);
    add_path_options(app, o);
    add_verification_and_export_options(app, o);
}

// One table: the common and shared options, --role, and both roles' own; the help lists the
// `shown` role's (none: the app's, whose help lists the subcommands), not the other's.
OptionTable add_table(CLI::App& app, cli::CommonOptions& common, Options& o,
                      std::optional<Role> shown) {
    cli::add_common_options(app, common);
    add_shared_options(app, o);
    add_role_option(app, o, !shown);
    OptionTable table{&app, {}, {}};
    table.master_only = cli::add_group(app, shown == Role::master ? "Master options" : kUnlisted,
                                       [&o](CLI::App& a) { add_master_options(a, o); });
    table.client_only = cli::add_group(app, shown == Role::client ? "Client options" : kUnlisted,
                                       [&o](CLI::App& a) { add_client_options(a, o); });
    return table;
}

// How many times the tables took `name`: the app's takes what stands before a subcommand (or
// everything, with --role), the subcommand's what follows it.
size_t given(const OptionTables& t, const std::string& name) {
    return t.by_role.app->count(name) + t.master.app->count(name) + t.client.app->count(name);
}

// The role from the subcommand or --role: exactly one of them.
void resolve_role(const OptionTables& t, Options& o) {
    const OptionTable* sub = t.master.app->parsed()   ? &t.master
                             : t.client.app->parsed() ? &t.client
                                                      : nullptr;
    const bool by_option = given(t, "--role") > 0;
    if (sub && by_option)
        throw std::invalid_argument("--role and the subcommand '" + sub->app->get_name() +
                                    "' both give the role: give one of them");
    if (!sub && !by_option)
        throw std::invalid_argument(
            "no role: clocksync master [options] or clocksync client [options] (or --role)");
    if (sub) o.role = sub == &t.master ? Role::master : Role::client;
}

// An option of the other role, given to any table; the message names the role in the form used.
void reject_other_role(const OptionTables& t, const Options& o) {
    const bool client = o.role == Role::client;
    const bool by_option = !t.master.app->parsed() && !t.client.app->parsed();
    const std::string other =
        std::string(by_option ? "--role " : "clocksync ") + (client ? "master" : "client");
    for (const OptionTable* table : {&t.by_role, &t.master, &t.client})
        for (const CLI::Option* option : client ? table->master_only : table->client_only)
            if (option->count() > 0)
                throw std::invalid_argument(option->get_name() + " applies to " + other + " only");
}

}  // namespace

OptionTables add_options(CLI::App& app, cli::CommonOptions& common, Options& o) {
    app.formatter(std::make_shared<UnlistingFormatter>());  // the subcommands inherit it
    OptionTables t;
    t.master = add_table(*app.add_subcommand("master",
                                             "Answer clock-sync requests with the times each "
                                             "was received (t2) and answered (t3)"),
                         common, o, Role::master);
    t.client = add_table(*app.add_subcommand("client",
                                             "Probe a master every sync period, keep a "
                                             "synchronized clock and report its uncertainty "
                                             "bound epsilon"),
                         common, o, Role::client);
    t.by_role = add_table(app, common, o, std::nullopt);
    app.require_subcommand(0, 1);
    app.footer(
        "Roles: clocksync master --help and clocksync client --help list each role's options; "
        "--role master|client (the older form) takes the same ones.\n" +
        app.get_footer());
    return t;
}

void check_role(const OptionTables& t, Options& o) {
    resolve_role(t, o);
    reject_other_role(t, o);
    check_master_datapath(o, given(t, "--sw-clock") > 0);
    // The program's stamp is CLOCK_MONOTONIC; converting it to the raw clock would cost the
    // bound up to 10 % of the run's length (the kernel may slew CLOCK_MONOTONIC that much).
    for (const auto& [on, name] : {std::pair{o.xdp_tx, "--xdp-tx"}, {o.xdp_turn, "--xdp-turn"}})
        if (on && o.client_clock() != SystemClock::monotonic)
            throw std::invalid_argument(
                fmt::format("{} stamps t1 with CLOCK_MONOTONIC (bpf_ktime_get_ns): it needs "
                            "--master-clock monotonic",
                            name));
    if (o.xdp_turn && !o.rx_stamps)
        throw std::invalid_argument(
            "--xdp-turn hands t1 over in the receive stamp: it cannot go with --no-rx-stamps");
    check_key(o);
}

void AppOptions::check() {
    check_role(tables, options);
    // One interface: the program's config carries that interface's MAC.
    if (options.role == Role::master && options.datapath.xdp() && common.af_xdp.size() != 1)
        throw std::invalid_argument(
            "--datapath xdp: the master runs its XDP program on one --af-xdp interface (its "
            "frames are tested with BPF_PROG_TEST_RUN in unit_clocksync_xdp)");
}

namespace {

// --keep-sync-rounds as a time; with --export or --clockbound at most the max age less two
// periods: a sync kept at that age is replaced by the next answered round, a period (and the
// round trip's jitter) later, before the exported bound turns stale.
uint64_t keep_sync_ns(const Options& o) {
    double ms = o.keep_sync_rounds_in_use() * o.sync_period_ms;
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
    c.probes = o.probes_in_use();
    c.sync_period_ns = to_ns(o.sync_period_ms, 1e6);
    c.probe_gap_ns = to_ns(o.probe_gap_us_in_use(), 1e3);
    c.pipeline = o.pipeline;
    c.probe_timeout_ns = to_ns(o.probe_timeout_ms, 1e6);
    c.sample_period_ns = to_ns(o.sample_period_us, 1e3);
    c.drift_bound_ppm = o.drift_bound_ppm;
    c.estimator = o.estimator;
    c.keep_sync_ns = keep_sync_ns(o);
    c.warmup_ns = to_ns(o.warmup_us_in_use(), 1e3);
    c.warmup_echo = o.warmup_echo;
    c.key = o.key;
    if (c.warmup_ns >= c.sync_period_ns)
        throw std::invalid_argument("--warmup-us must be below --sync-period-ms");
    if (c.sync_period_ns == 0 || c.probe_timeout_ns == 0 || c.sample_period_ns == 0)
        throw std::invalid_argument("sync period, probe timeout and sample period must be >= 1 ns");
    if (c.probes < 1 || c.probes > kMaxProbes)
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
    j["key"] = o.key.has_value();  // whether --key was given (never the key)
    if (o.role == Role::master) {
        j["sw_clock"] = kClockKeys[size_t(o.master_sw_clock())];
        return j;
    }
    j["client_id"] = o.client_id;
    j["master_mac"] = o.master_mac ? format_mac(*o.master_mac) : "learn";
    j["master_ip"] = format_ipv4(o.master_ip);
    j["client_ip"] = format_ipv4(o.client_ip);
    j["sync_period_ms"] = o.sync_period_ms;
    j["probes"] = o.probes_in_use();
    j["probe_gap_us"] = o.probe_gap_us_in_use();
    j["pipeline"] = o.pipeline;
    j["estimator"] = o.estimator == Estimator::intersect ? "intersect" : "min-rtt";
    j["keep_sync_rounds"] = o.keep_sync_rounds_in_use();
    j["warmup_us"] = o.warmup_us_in_use();
    j["warmup_echo"] = o.warmup_echo;
    j["xdp_tx"] = o.xdp_tx;
    j["xdp_turn"] = o.xdp_turn;
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
