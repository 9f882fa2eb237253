#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "clocksync/options.hpp"

using namespace linerate::clocksync;

namespace {

// Parses `args` as the app's options; rethrows CLI11's parse errors.
Options parse(std::vector<std::string> args) {
    CLI::App app("test");
    linerate::cli::CommonOptions common;
    Options o;
    const OptionTables tables = add_options(app, common, o);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
    check_role(tables, o);
    return o;
}

// The message of the std::invalid_argument that `args` get, or "" when none.
std::string refusal(std::vector<std::string> args) {
    try {
        parse(std::move(args));
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST(CsOptions, DefaultsFollowTheIssue) {
    Options o = parse({"--role", "client"});
    EXPECT_EQ(o.role, Role::client);
    EXPECT_EQ(o.udp_port, 9001);
    EXPECT_FALSE(o.master_mac);
    EXPECT_FALSE(o.verification());
    ClientConfig c = make_client_config(o, 0);
    EXPECT_EQ(c.sync_period_ns, 100'000'000u);
    // Issue 47: 16 probes a round, 0.5 ms apart, each after a warm-up.
    EXPECT_EQ(c.probes, 16u);
    EXPECT_EQ(c.probe_gap_ns, 500'000u);
    EXPECT_FALSE(c.pipeline);
    EXPECT_EQ(c.warmup_ns, 200'000u);
    EXPECT_EQ(c.sample_period_ns, 1'000'000u);
    EXPECT_EQ(c.drift_bound_ppm, 10);
    EXPECT_EQ(c.udp_port, 9001);
    EXPECT_FALSE(c.sim);
}

// --estimator: intersect unless min-rtt is asked for; anything else is refused.
TEST(CsOptions, Estimator) {
    const Options d = parse({"--role", "client"});
    EXPECT_EQ(make_client_config(d, 0).estimator, Estimator::intersect);
    EXPECT_EQ(config_json(d)["estimator"], "intersect");
    const Options m = parse({"client", "--estimator", "min-rtt"});
    EXPECT_EQ(make_client_config(m, 0).estimator, Estimator::min_rtt);
    EXPECT_EQ(config_json(m)["estimator"], "min-rtt");
    EXPECT_EQ(make_client_config(parse({"client", "--estimator", "intersect"}), 0).estimator,
              Estimator::intersect);
    EXPECT_THROW(parse({"client", "--estimator", "median"}), CLI::ParseError);
    EXPECT_THROW(parse({"master", "--estimator", "intersect"}), std::invalid_argument);
}

// --keep-sync-rounds as a time: N periods, and with an exported bound at most its max age less
// two periods (a kept sync is replaced before the bound turns stale). --warmup-us in ns, and
// its default.
TEST(CsOptions, KeepSyncAndWarmup) {
    EXPECT_EQ(make_client_config(parse({"--role", "client"}), 0).keep_sync_ns, 800'000'000u);
    // Unset, a time: 8 periods or 100 ms, whichever is longer (100 rounds at 1 kHz, 13 at
    // 128 Hz); given, that many rounds at any rate.
    const auto keep_at = [](std::vector<std::string> args) {
        const Options o = parse(args);
        return std::pair(o.keep_sync_rounds_in_use(), make_client_config(o, 0).keep_sync_ns);
    };
    EXPECT_EQ(keep_at({"--role", "client", "--sync-period-ms", "1"}),
              std::pair(100u, uint64_t(100'000'000)));
    EXPECT_EQ(keep_at({"--role", "client", "--sync-period-ms", "7.8125"}),
              std::pair(13u, uint64_t(101'562'500)));
    EXPECT_EQ(keep_at({"--role", "client", "--sync-period-ms", "1", "--keep-sync-rounds", "4"}),
              std::pair(4u, uint64_t(4'000'000)));
    EXPECT_EQ(
        make_client_config(parse({"--role", "client", "--keep-sync-rounds", "0"}), 0).keep_sync_ns,
        0u);
    EXPECT_EQ(make_client_config(
                  parse({"--role", "client", "--export", "x", "--export-max-age-ms", "500"}), 0)
                  .keep_sync_ns,
              300'000'000u);
    EXPECT_EQ(make_client_config(
                  parse({"--role", "client", "--export", "x", "--export-max-age-ms", "150"}), 0)
                  .keep_sync_ns,
              0u);
    const ClientConfig w = make_client_config(parse({"--role", "client", "--warmup-us", "50"}), 0);
    EXPECT_EQ(w.warmup_ns, 50'000u);
    EXPECT_TRUE(w.warmup_echo);
    // Unset: 200 µs with one probe a round or the default probes (and a longer period), none
    // with more probes given.
    EXPECT_EQ(make_client_config(parse({"--role", "client"}), 0).warmup_ns, 200'000u);
    EXPECT_EQ(make_client_config(parse({"--role", "client", "--probes", "2"}), 0).warmup_ns, 0u);
    EXPECT_EQ(
        make_client_config(parse({"--role", "client", "--sync-period-ms", "0.2"}), 0).warmup_ns,
        0u);
    EXPECT_EQ(
        make_client_config(parse({"--role", "client", "--sync-period-ms", "0.3"}), 0).warmup_ns,
        200'000u);
    EXPECT_EQ(make_client_config(parse({"--role", "client", "--warmup-us", "0"}), 0).warmup_ns, 0u);
    EXPECT_FALSE(
        make_client_config(parse({"--role", "client", "--no-warmup-echo"}), 0).warmup_echo);
    EXPECT_THROW(make_client_config(parse({"--role", "client", "--warmup-us", "100000"}), 0),
                 std::invalid_argument);
}

// --probes unset: one per 6.25 ms of the period, 1 to 16, 0.5 ms apart; given, back to back
// unless --probe-gap-us.
TEST(CsOptions, DefaultProbesAreHalfAMillisecondApart) {
    const auto probing = [](std::vector<std::string> args) {
        const ClientConfig c = make_client_config(parse(args), 0);
        return std::pair(c.probes, c.probe_gap_ns);
    };
    EXPECT_EQ(probing({"--role", "client", "--sync-period-ms", "50"}),
              std::pair(8u, uint64_t(500'000)));
    EXPECT_EQ(probing({"--role", "client", "--sync-period-ms", "1000"}),
              std::pair(16u, uint64_t(500'000)));
    EXPECT_EQ(probing({"--role", "client"}), std::pair(16u, uint64_t(500'000)));
    EXPECT_EQ(probing({"--role", "client", "--sync-period-ms", "12.5"}),
              std::pair(2u, uint64_t(500'000)));
    EXPECT_EQ(probing({"--role", "client", "--sync-period-ms", "12.4"}),
              std::pair(1u, uint64_t(0)));
    EXPECT_EQ(probing({"--role", "client", "--sync-period-ms", "1"}), std::pair(1u, uint64_t(0)));
    EXPECT_EQ(probing({"--role", "client", "--probes", "4"}), std::pair(4u, uint64_t(0)));
    EXPECT_EQ(probing({"--role", "client", "--probe-gap-us", "100"}),
              std::pair(16u, uint64_t(100'000)));
}

TEST(CsOptions, ClientOptionsMakeTheSessionConfig) {
    Options o = parse({"--role",
                       "client",
                       "--master-mac",
                       "02:AB:cd:00:00:01",
                       "--master-ip",
                       "10.0.0.2",
                       "--client-ip",
                       "10.0.0.1",
                       "--client-id",
                       "9",
                       "--sync-period-ms",
                       "50",
                       "--probes",
                       "4",
                       "--probe-gap-us",
                       "2.5",
                       "--pipeline",
                       "--background-pps",
                       "1e6",
                       "--probe-timeout-ms",
                       "3",
                       "--drift-bound-ppm",
                       "20",
                       "--sample-period-us",
                       "250",
                       "--sim-offset-ns",
                       "-5000000",
                       "--sim-drift-ppm",
                       "8",
                       "--udp-port",
                       "9100"});
    ASSERT_TRUE(o.master_mac);
    EXPECT_EQ(format_mac(*o.master_mac), "02:ab:cd:00:00:01");
    EXPECT_EQ(format_ipv4(o.master_ip), "10.0.0.2");
    EXPECT_EQ(format_ipv4(o.client_ip), "10.0.0.1");
    ClientConfig c = make_client_config(o, 12345);
    EXPECT_EQ(c.client_id, 9u);
    EXPECT_EQ(c.udp_port, 9100);
    EXPECT_EQ(c.sync_period_ns, 50'000'000u);
    EXPECT_EQ(c.probes, 4u);
    EXPECT_EQ(c.probe_gap_ns, 2500u);
    EXPECT_TRUE(c.pipeline);
    EXPECT_EQ(o.background_pps, 1e6);
    EXPECT_EQ(o.background_size, 64u);
    EXPECT_EQ(c.probe_timeout_ns, 3'000'000u);
    EXPECT_EQ(c.drift_bound_ppm, 20);
    EXPECT_EQ(c.sample_period_ns, 250'000u);
    ASSERT_TRUE(c.sim);
    EXPECT_EQ(c.sim->offset_ns, -5'000'000);
    EXPECT_EQ(c.sim->drift_ppb, 8000);
    EXPECT_EQ(c.sim->epoch_ns, 12345u);
    EXPECT_EQ(config_json(o)["sim_drift_ppm"], 8.0);
}

TEST(CsOptions, EitherSimOptionTurnsVerificationOn) {
    EXPECT_TRUE(parse({"--role", "client", "--sim-drift-ppm", "1"}).verification());
    Options o = parse({"--role", "client", "--sim-offset-ns", "7"});
    ASSERT_TRUE(make_client_config(o, 0).sim);
    EXPECT_EQ(make_client_config(o, 0).sim->drift_ppb, 0);
}

TEST(CsOptions, BadValuesAndWrongRoleAreRejected) {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"--role", "slave"},
             {"--role", "client", "--probes", "0"},
             {"--role", "client", "--probes", "65"},
             {"--role", "client", "--master-mac", "2:0:0:0:0:1"},
             {"--role", "client", "--master-mac", "02:00:00:00:00:0g"},
             {"--role", "client", "--master-ip", "1.2.3"},
             {"--role", "client", "--sync-period-ms", "0"},
             {"--role", "client", "--drift-bound-ppm", "100001"},
             {"--role", "master", "--timestamps", "ptp"},
             {"--role", "client", "--background-size", "59"},
             {"--role", "client", "--sim-offset-ns", "-9223372036854775708"},
             {"--role", "client", "--sim-offset-ns", "4611686018427387905"},
             {"--role", "client", "--sim-drift-ppm", "nan"},
             {"--role", "client", "--sync-period-ms", "nan"},
             {"--role", "client", "--probe-timeout-ms", "inf"},
         })
        EXPECT_THROW(parse(args), CLI::ParseError) << (args.empty() ? "" : args.back());
    EXPECT_THROW(parse({"--role", "master", "--sim-drift-ppm", "8"}), std::invalid_argument);
    EXPECT_THROW(parse({"--role", "master", "--master-mac", "02:00:00:00:00:01"}),
                 std::invalid_argument);
    EXPECT_THROW(parse({"--role", "client", "--timestamps", "sw"}), std::invalid_argument);
    EXPECT_THROW(parse({"--role", "master", "--background-pps", "1e6"}), std::invalid_argument);
    // A period that rounds to 0 ns cannot drive the session.
    Options o = parse({"--role", "client"});
    o.sample_period_us = 0.0001;
    EXPECT_THROW(make_client_config(o, 0), std::invalid_argument);
}

TEST(CsOptions, SimOffsetUpTo2To62NsEitherWay) {
    for (const char* v : {"4611686018427387904", "-4611686018427387904"}) {
        Options o = parse({"--role", "client", "--sim-offset-ns", v});
        EXPECT_EQ(make_client_config(o, 0).sim->offset_ns, std::stoll(v)) << v;
    }
}

TEST(CsOptions, MasterTimestampModes) {
    EXPECT_EQ(parse({"--role", "master"}).timestamps, TimestampMode::automatic);
    EXPECT_EQ(parse({"--role", "master", "--timestamps", "hw"}).timestamps,
              TimestampMode::hardware);
    EXPECT_EQ(parse({"--role", "master", "--timestamps", "sw"}).timestamps,
              TimestampMode::software);
}

TEST(CsOptions, AddressParsersAreStrict) {
    EXPECT_TRUE(parse_mac("ff:FF:00:11:22:33"));
    for (const char* bad : {"", "ff:ff:ff:ff:ff", "ff-ff-ff-ff-ff-ff", " f:ff:ff:ff:ff:ff",
                            "+f:ff:ff:ff:ff:ff", "ff:ff:ff:ff:ff:ff:"})
        EXPECT_FALSE(parse_mac(bad)) << bad;
    EXPECT_EQ(parse_ipv4("192.168.0.1"), 0xC0A80001u);
    EXPECT_EQ(parse_ipv4("0.0.0.0"), 0u);
    for (const char* bad :
         {"", "1.2.3", "1.2.3.4.", "1.2.3.256", "1..2.3", "1.2.3.4x", "0001.2.3.4", "-1.2.3.4"})
        EXPECT_FALSE(parse_ipv4(bad)) << bad;
}

// --clockbound's bound is CLOCK_REALTIME's error against the master's time: the client must be
// told the master's clock is Unix time (the wire does not say), and not in verification mode.
TEST(CsOptions, ClockBoundNeedsTheMasterOnRealtime) {
    Options o = parse({"--role", "client", "--clockbound", "/x/shm0"});
    EXPECT_EQ(o.clockbound_path, "/x/shm0");
    try {
        make_client_config(o, 0);
        ADD_FAILURE() << "--clockbound without --master-clock realtime";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("--master-clock realtime"), std::string::npos);
    }
    o = parse({"--role", "client", "--clockbound", "/x/shm0", "--master-clock", "realtime",
               "--export-max-age-ms", "500"});
    EXPECT_EQ(o.master_clock, SystemClock::realtime);
    EXPECT_NO_THROW(make_client_config(o, 0));  // --export-max-age-ms applies to it too
    const nlohmann::json j = config_json(o);
    EXPECT_EQ(j["clockbound"], "/x/shm0");
    EXPECT_EQ(j["master_clock"], "realtime");
    EXPECT_EQ(j["export_max_age_ms"], 500.0);
    EXPECT_THROW(
        make_client_config(
            parse({"--role", "client", "--master-clock", "realtime", "--sim-offset-ns", "5"}), 0),
        std::invalid_argument);
    EXPECT_THROW(parse({"--role", "client", "--master-clock", "tai"}), CLI::ParseError);
    EXPECT_THROW(parse({"--role", "client", "--clockbound", ""}), CLI::ParseError);
    EXPECT_THROW(parse({"--role", "master", "--clockbound", "/x"}), std::invalid_argument);
    EXPECT_THROW(parse({"--role", "master", "--master-clock", "realtime"}), std::invalid_argument);
}

// The XDP master stamps with CLOCK_MONOTONIC (bpf_ktime_get_ns): its slow path reads the same
// clock, its clients say so with --master-clock monotonic and then read CLOCK_MONOTONIC
// themselves, in verification mode too.
TEST(CsOptions, TheXdpMastersClockIsMonotonicAndItsClientsReadIt) {
    Options m = parse({"--role", "master", "--datapath", "xdp"});
    EXPECT_EQ(m.datapath.datapath, linerate::xdp::Datapath::xdp);
    EXPECT_EQ(m.master_sw_clock(), SystemClock::monotonic);
    EXPECT_EQ(config_json(m)["sw_clock"], "monotonic");
    EXPECT_EQ(parse({"--role", "master"}).master_sw_clock(), SystemClock::raw);
    EXPECT_EQ(parse({"--role", "master", "--sw-clock", "monotonic"}).master_sw_clock(),
              SystemClock::monotonic);
    EXPECT_NO_THROW(parse({"--role", "master", "--datapath", "xdp", "--sw-clock", "monotonic"}));
    EXPECT_THROW(parse({"--role", "master", "--datapath", "xdp", "--sw-clock", "raw"}),
                 std::invalid_argument);
    EXPECT_THROW(parse({"--role", "master", "--datapath", "xdp", "--timestamps", "hw"}),
                 std::invalid_argument);
    EXPECT_THROW(parse({"--role", "client", "--datapath", "xdp"}), std::invalid_argument);

    Options c = parse({"--role", "client", "--master-clock", "monotonic", "--sim-offset-ns", "5"});
    EXPECT_EQ(c.client_clock(), SystemClock::monotonic);
    EXPECT_EQ(clock_id(c.client_clock()), CLOCK_MONOTONIC);
    EXPECT_NO_THROW(make_client_config(c, 0));
    EXPECT_EQ(config_json(c)["master_clock"], "monotonic");
    EXPECT_EQ(parse({"--role", "client"}).client_clock(), SystemClock::raw);
    EXPECT_EQ(config_json(parse({"--role", "client"}))["master_clock"], "unknown");
    EXPECT_EQ(parse({"--role", "client", "--master-clock", "realtime"}).client_clock(),
              SystemClock::raw);
    // The exported page's readers read CLOCK_MONOTONIC_RAW.
    EXPECT_THROW(
        make_client_config(
            parse({"--role", "client", "--master-clock", "monotonic", "--export", "p"}), 0),
        std::invalid_argument);
}

// `clocksync master|client ...` and `clocksync --role master|client ...` take the same options
// and give the same config; an option of the other role is refused by name in either form.
TEST(CsOptions, SubcommandsTakeTheirRolesOptions) {
    const std::vector<std::string> client = {"--master-mac",
                                             "02:00:00:00:00:01",
                                             "--master-ip",
                                             "10.0.0.2",
                                             "--probes",
                                             "4",
                                             "--pipeline",
                                             "--export",
                                             "cs0",
                                             "--export-max-age-ms",
                                             "500",
                                             "--warmup-us",
                                             "20",
                                             "--no-rx-stamps",
                                             "--sim-drift-ppm",
                                             "3",
                                             "--udp-port",
                                             "9100",
                                             "--strict-checksums",
                                             "--duration",
                                             "2"};
    std::vector<std::string> by_role = {"--role", "client"}, sub = {"client"};
    by_role.insert(by_role.end(), client.begin(), client.end());
    sub.insert(sub.end(), client.begin(), client.end());
    const Options c = parse(sub);
    EXPECT_EQ(c.role, Role::client);
    EXPECT_EQ(c.probes, 4u);
    EXPECT_FALSE(c.rx_stamps);
    EXPECT_TRUE(c.strict_checksums);
    const nlohmann::json j = config_json(c);
    EXPECT_EQ(j, config_json(parse(by_role)));
    EXPECT_EQ(j["role"], "client");
    EXPECT_EQ(j["master_mac"], "02:00:00:00:00:01");
    EXPECT_EQ(j["udp_port"], 9100);
    EXPECT_EQ(j["export_max_age_ms"], 500.0);
    EXPECT_EQ(j["sim_drift_ppm"], 3.0);
    // The common options before the subcommand too.
    EXPECT_EQ(config_json(parse({"--udp-port", "9100", "client", "--probes", "4"}))["udp_port"],
              9100);

    const Options m = parse({"master", "--timestamps", "sw", "--sw-clock", "monotonic",
                             "--no-verify-checksums", "--udp-port", "9002"});
    EXPECT_EQ(m.role, Role::master);
    EXPECT_EQ(m.timestamps, TimestampMode::software);
    EXPECT_EQ(config_json(m), (nlohmann::json{{"role", "master"},
                                              {"udp_port", 9002},
                                              {"verify_checksums", false},
                                              {"strict_checksums", false},
                                              {"key", false},
                                              {"sw_clock", "monotonic"}}));
    EXPECT_EQ(config_json(m),
              config_json(parse({"--role", "master", "--timestamps", "sw", "--sw-clock",
                                 "monotonic", "--no-verify-checksums", "--udp-port", "9002"})));
    EXPECT_EQ(parse({"master", "--datapath", "xdp"}).master_sw_clock(), SystemClock::monotonic);
}

TEST(CsOptions, TheOtherRolesOptionIsRefusedByName) {
    EXPECT_EQ(refusal({"master", "--probes", "4"}), "--probes applies to clocksync client only");
    EXPECT_EQ(refusal({"master", "--xdp-tx"}), "--xdp-tx applies to clocksync client only");
    EXPECT_EQ(refusal({"--export", "x", "master"}), "--export applies to clocksync client only");
    EXPECT_EQ(refusal({"client", "--timestamps", "hw"}),
              "--timestamps applies to clocksync master only");
    EXPECT_EQ(refusal({"client", "--datapath", "xdp"}),
              "--datapath applies to clocksync master only");
    // The older form's words, as before.
    EXPECT_EQ(refusal({"--role", "master", "--probes", "4"}),
              "--probes applies to --role client only");
    EXPECT_EQ(refusal({"--role", "client", "--sw-clock", "raw"}),
              "--sw-clock applies to --role master only");
    // A bad value is refused by the parse, with the option's name.
    try {
        parse({"master", "--probes", "65"});
        ADD_FAILURE() << "--probes 65";
    } catch (const CLI::ParseError& e) {
        EXPECT_EQ(std::string(e.what()), "--probes: Value 65 not in range 1 to 64");
    }
}

TEST(CsOptions, OneRoleExactly) {
    EXPECT_EQ(refusal({}),
              "no role: clocksync master [options] or clocksync client [options] (or --role)");
    EXPECT_EQ(refusal({"--role", "client", "client"}),
              "--role and the subcommand 'client' both give the role: give one of them");
    EXPECT_EQ(refusal({"master", "--role", "client"}),
              "--role and the subcommand 'master' both give the role: give one of them");
    EXPECT_EQ(refusal({"--role", "master", "client"}),
              "--role and the subcommand 'client' both give the role: give one of them");
    EXPECT_THROW(parse({"client", "master"}), CLI::ParseError);  // one subcommand
    EXPECT_THROW(parse({"client", "--role", "boss"}), CLI::ParseError);
}
