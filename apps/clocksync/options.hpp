#pragma once
// clocksync's own command-line options, their checks, and the client session's config made of
// them. No EAL: unit tests use it.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/command_line.hpp"
#include "clocksync/client_session.hpp"
#include "clocksync/local_clock.hpp"
#include "linerate/truetime.h"
#include "pkt/address.hpp"
#include "pkt/build.hpp"
#include "runtime/datapath_choice.hpp"

namespace linerate::clocksync {

enum class Role : uint8_t { master, client };
// Where the master reads t2/t3: auto = the NIC clock when every port supports timesync.
enum class TimestampMode : uint8_t { automatic, hardware, software };

// --warmup-us with --probes 1 or the default probes unless given: long enough for the first
// exchange's echo to come back before the request (the first touches of the path take tens of
// µs).
inline constexpr double kDefaultWarmupUs = 200;
// --probes unset: one probe per this much of the sync period, up to kDefaultProbes.
inline constexpr double kDefaultProbeSpacingMs = 6.25;
inline constexpr unsigned kDefaultProbes = 16;
// --probe-gap-us unset, the default probes: this far apart (each after a warm-up of its own), so
// that a round spans several scheduler time slices (a loaded host's preemption or a flood's queue
// hits some of its probes, not all of them) while every probe still counts at the round's end:
// --estimator intersect grows each older probe's bound by ρ·age, 125 ns for each 12.5 ms at
// 10 ppm, so probes spread over the period left the last one or two to decide (docs/clocksync.md,
// "Probes"; docs/perf-notes/clocksync.md: 16 at 0.5 ms kept more clean ones than 8 at 1 ms).
inline constexpr double kDefaultProbeGapUs = 500;
// --keep-sync-rounds unset: this many periods, or this long, whichever is longer (a time, so
// that at every sync rate a kept sync outlasts a stall of the loaded machine: at 1 kHz, 4
// rounds let loose syncs in, docs/perf-notes/clocksync.md). 8 periods: a kept sync is replaced
// two periods before --export's page (10 periods) would turn stale.
inline constexpr unsigned kDefaultKeepRounds = 8;
inline constexpr double kDefaultKeepMs = 100;

struct Options {
    Role role = Role::master;
    uint16_t udp_port = kCsUdpPort;
    bool verify_checksums = true;   // both roles: off with --no-verify-checksums
    bool strict_checksums = false;  // both roles: --strict-checksums
    std::optional<auth::Key> key;   // both roles: --key (every datagram carries its MAC)
    TimestampMode timestamps = TimestampMode::automatic;  // master
    SystemClock sw_clock = SystemClock::raw;              // master: --sw-clock
    DatapathChoice datapath;                              // master: --datapath, --xdp-mode
    // Client.
    std::optional<pkt::MacAddr> master_mac;  // none: broadcast until learned from a response
    uint32_t master_ip = 0xC0A80002;         // 192.168.0.2
    uint32_t client_ip = 0xC0A80001;         // 192.168.0.1
    uint32_t client_id = 1;
    double sync_period_ms = 100;
    std::optional<unsigned> probes;      // unset: probes_in_use()
    std::optional<double> probe_gap_us;  // unset: probe_gap_us_in_use()
    bool pipeline = false;
    Estimator estimator = Estimator::intersect;  // --estimator
    // min-rtt: a sync stays while the tighter bound, up to this many rounds; unset:
    // keep_sync_rounds_in_use().
    std::optional<unsigned> keep_sync_rounds;
    // A warm-up frame this long before each round (0: none); unset: warmup_us_in_use().
    std::optional<double> warmup_us;
    bool warmup_echo = true;  // ... asking the master for its echo (--no-warmup-echo: not)
    // t4 (client) and t2 (master) from the steering program's receive stamp (--no-rx-stamps).
    bool rx_stamps = true;
    bool xdp_tx = false;  // requests sent by XDP_TX, t1 the program's stamp (--xdp-tx)
    // Requests leave from the steering program, turned from the master's echo (--xdp-turn).
    bool xdp_turn = false;
    double probe_timeout_ms = 10;
    double drift_bound_ppm = kDefaultDriftBoundPpm;
    double sample_period_us = 1000;
    // Benchmark aid: plain UDP frames/s sent on the probe port (0 = none), and their size.
    double background_pps = 0;
    unsigned background_size = 64;
    // Verification mode: set when either --sim-* option is given.
    std::optional<int64_t> sim_offset_ns;
    std::optional<double> sim_drift_ppm;

    // --export NAME: the shared-memory page; invalid after export_max_age() ms without a sync.
    std::optional<std::string> export_name;
    std::optional<double> export_max_age_ms;
    std::optional<int> chrony_shm;  // --chrony-shm N
    // --clockbound PATH: the ClockBound segment; needs --master-clock realtime (the client's
    // word for what it cannot learn from the wire: the master's clock is Unix time).
    std::optional<std::string> clockbound_path;
    // --master-clock: raw = unknown (the default: no claim; the client reads CLOCK_MONOTONIC_RAW),
    // realtime = Unix time, monotonic = CLOCK_MONOTONIC (an XDP master): the client's local clock
    // is then CLOCK_MONOTONIC too, the same counter as the master's on one machine.
    SystemClock master_clock = SystemClock::raw;

    bool verification() const { return sim_offset_ns || sim_drift_ppm; }
    // The master's timestamp clock: the XDP datapath's is CLOCK_MONOTONIC (its slow path reads it
    // too), otherwise --sw-clock's.
    SystemClock master_sw_clock() const {
        return datapath.xdp() ? SystemClock::monotonic : sw_clock;
    }
    // The client's local clock: CLOCK_MONOTONIC with a monotonic master, CLOCK_MONOTONIC_RAW
    // otherwise.
    SystemClock client_clock() const {
        return master_clock == SystemClock::monotonic ? SystemClock::monotonic : SystemClock::raw;
    }
    // --probes, or its default: one per kDefaultProbeSpacingMs of the period, 1 to
    // kDefaultProbes (16 at the default 100 ms, 2 at 12.5 ms, 1 below).
    unsigned probes_in_use() const {
        if (probes) return *probes;
        return std::clamp(unsigned(sync_period_ms / kDefaultProbeSpacingMs), 1u, kDefaultProbes);
    }
    // --probe-gap-us, or its default: kDefaultProbeGapUs between the default probes; given
    // --probes (or one a round), 0: each probe right after the previous one's answer.
    double probe_gap_us_in_use() const {
        if (probe_gap_us) return *probe_gap_us;
        return probes || probes_in_use() == 1 ? 0 : kDefaultProbeGapUs;
    }
    // --warmup-us, or its default: kDefaultWarmupUs with one probe a round or the default
    // probes (a lone request, or a round's first after a quiet gap, crosses a path warm both
    // ways, docs/clocksync.md) when the sync period is longer, else 0.
    double warmup_us_in_use() const {
        if (warmup_us) return *warmup_us;
        const bool lone = probes_in_use() == 1 || !probes;
        return lone && kDefaultWarmupUs < sync_period_ms * 1e3 ? kDefaultWarmupUs : 0;
    }
    // --keep-sync-rounds, or its default: kDefaultKeepRounds periods or kDefaultKeepMs,
    // whichever is longer (8 at the default 100 ms period, 100 at 1 ms).
    unsigned keep_sync_rounds_in_use() const {
        if (keep_sync_rounds) return *keep_sync_rounds;
        return std::max(kDefaultKeepRounds, unsigned(std::ceil(kDefaultKeepMs / sync_period_ms)));
    }
    // The max age of --export's page and of --clockbound's Synchronized status.
    double export_max_age() const { return export_max_age_ms.value_or(10 * sync_period_ms); }
};

// One table of options: a subcommand's, or the app's own for --role. Each takes every option,
// so that one of the other role is refused by name (check_role), not as unknown; its --help lists
// the common and shared options and its role's own, hiding the other role's.
struct OptionTable {
    CLI::App* app = nullptr;
    std::vector<const CLI::Option*> master_only;
    std::vector<const CLI::Option*> client_only;
};

// `clocksync master ...` and `clocksync client ...` (the preferred form: the subcommand is the
// first app argument, after `--` when there are EAL args), and the app itself for
// `clocksync --role master|client ...` (the older form, which takes the same options).
struct OptionTables {
    OptionTable by_role;
    OptionTable master;
    OptionTable client;
};

// Adds the subcommands and the options, `common` included, to `app`; a bad value fails the parse
// itself (one line, exit 2).
OptionTables add_options(CLI::App& app, cli::CommonOptions& common, Options& options);

// After the parse: sets options.role from the subcommand or --role (one of them, not both), and
// checks what single-option checks cannot: an option of the other role, options that exclude each
// other. Throws std::invalid_argument with the message for the user.
void check_role(const OptionTables& tables, Options& options);

// clocksync's command line as one option group (cli::OptionGroup): the common options and
// clocksync's own in the three tables. check(): the role (check_role), then what crosses into
// the common options (the XDP master's one --af-xdp interface). Throws std::invalid_argument
// with the message for the user.
struct AppOptions {
    // --burst 32, not the common 64: t2 and t4 are one clock reading a receive burst
    // (docs/clocksync.md), so under load a longer burst takes its first frames' readings later
    // after their arrival; the accuracy figures (bench/results/clock-peers*.json) are at 32.
    cli::CommonOptions common{.burst = 32};
    Options options;
    OptionTables tables;

    void add(CLI::App& app) { tables = add_options(app, common, options); }
    void check();
};

// The session config of a client; `epoch_ns` is where the simulated drift term is zero (the
// run's start). Throws std::invalid_argument when a period rounds to 0 ns.
ClientConfig make_client_config(const Options& options, uint64_t epoch_ns);

// The effective configuration, for the JSON's "clocksync" object.
nlohmann::json config_json(const Options& options);

// The address parsers and formatters are lib/pkt's.
using pkt::format_ipv4;
using pkt::format_mac;
using pkt::parse_ipv4;
using pkt::parse_mac;

}  // namespace linerate::clocksync
