// Master and client as two processes over net_memif, the client in verification mode: its
// clock is simulated off and drifting from the master's, both derived from CLOCK_MONOTONIC_RAW,
// so every ε sample is checked against the true offset. Plus the negative control (drift beyond
// the bound must be caught) and the command-line errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"

using namespace linerate::test;

namespace {

const std::string kApp = binary("apps/clocksync/clocksync");

struct PairResult {
    ProcessResult master, client;
    nlohmann::json master_json, client_json;
    nlohmann::json telemetry;  // /linerate/clocksync of the client mid-run, if it could be read
};

void print_figures(const char* what, const nlohmann::json& j) {
    if (!j.is_object()) return;
    std::printf(
        "%s: syncs %s violations %s timeouts %s epsilon_ns %s rtt_ns %s max_abs_error_ns %s\n",
        what, j["syncs"].dump().c_str(), j["violations"].dump().c_str(),
        j["timeouts"].dump().c_str(), j["epsilon_ns"].dump().c_str(), j["rtt_ns"].dump().c_str(),
        j["max_abs_error_ns"].dump().c_str());
}

// Reads /linerate/clocksync from a running client until it reports a sync or time runs out.
nlohmann::json query_client(const std::string& prefix, double until_s) {
    if (system("command -v dpdk-telemetry.py >/dev/null 2>&1") != 0) return nullptr;
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    while (elapsed() < until_s) {
        std::string out = command_output("printf '/linerate/clocksync\\n' | dpdk-telemetry.py -f " +
                                         prefix + " 2>/dev/null");
        auto at = out.find("{\"/linerate/clocksync\"");
        if (at != std::string::npos) {
            auto j = nlohmann::json::parse(out.substr(at, out.find('\n', at) - at), nullptr, false);
            const auto& v = j["/linerate/clocksync"];
            if (v.is_object() && v.value("syncs", 0) > 0) return v;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    return nullptr;
}

// Runs a master (memif server, lcore 0) and a client (memif client, lcore 1) side by side, each
// with its own --file-prefix, and removes their runtime dirs and the socket afterwards.
PairResult run_pair(const std::vector<std::string>& client_args, double client_s,
                    bool query = false) {
    static std::atomic<int> n{0};
    const std::string id = std::to_string(getpid()) + "_" + std::to_string(n++);
    const std::string sock = "/tmp/cs" + id + ".sock";
    const std::string master_prefix = "csm" + id, client_prefix = "csc" + id;
    const std::string master_json = scratch("master.json"), client_json = scratch("client.json");
    const std::string client_lcore = std::thread::hardware_concurrency() > 1 ? "1" : "0";
    auto eal = [&](const std::string& lcore, const std::string& prefix, const std::string& role) {
        return std::vector<std::string>{kApp,
                                        "-l",
                                        lcore,
                                        "--no-huge",
                                        "-m",
                                        "512",
                                        "--no-pci",
                                        "--file-prefix=" + prefix,
                                        "--log-level=lib.eal:warning",
                                        "--vdev=net_memif0,role=" + role + ",socket=" + sock,
                                        "--"};
    };
    std::vector<std::string> master = eal("0", master_prefix, "server");
    // The master's run starts when the client connects (link wait): it outlives the client.
    master.insert(master.end(), {"--role", "master", "--duration", std::to_string(client_s + 1),
                                 "--stats-period", "0", "--json", master_json});
    std::vector<std::string> client = eal(client_lcore, client_prefix, "client");
    client.insert(client.end(), {"--role", "client", "--duration", std::to_string(client_s),
                                 "--stats-period", "0", "--json", client_json});
    client.insert(client.end(), client_args.begin(), client_args.end());

    PairResult r;
    std::thread m([&] { r.master = run_process(master, {.timeout_s = client_s + 30}); });
    // A memif client connects once, when its port starts, and the server refuses it ("ID not
    // found") until its own port has started: give the master's EAL and port setup a head
    // start. The master then waits (link wait) for the client, so the margin costs no run time.
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    std::thread c([&] { r.client = run_process(client, {.timeout_s = client_s + 30}); });
    if (query) r.telemetry = query_client(client_prefix, client_s - 1);
    c.join();
    m.join();
    r.master_json = read_json(master_json);
    r.client_json = read_json(client_json);
    std::error_code ec;
    for (const std::string& prefix : {master_prefix, client_prefix})
        std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);
    std::filesystem::remove(sock, ec);
    unlink(master_json.c_str());
    unlink(client_json.c_str());
    return r;
}

}  // namespace

// The case: 5 ms off, 8 ppm fast (within rho = 10 ppm), 6 s. The probe timeout is
// generous because the test shares two cores with builds and other tests: a descheduled poller
// stretches a round trip to tens of ms, which widens ε but must never break it.
TEST(ClocksyncTwoProcess, ClientWithinBoundDriftHasNoViolations) {
    PairResult r = run_pair({"--sim-offset-ns", "5000000", "--sim-drift-ppm", "8",
                             "--probe-timeout-ms", "80", "--client-id", "77"},
                            6.0, true);
    ASSERT_EQ(r.master.exit_status, 0) << r.master.out;
    ASSERT_EQ(r.client.exit_status, 0) << r.client.out;
    const nlohmann::json& j = r.client_json;
    print_figures("within bound", j);
    ASSERT_TRUE(j.is_object()) << r.client.out;
    EXPECT_EQ(j["role"], "client");
    EXPECT_GE(j["syncs"].get<uint64_t>(), 40u) << r.client.out;
    EXPECT_EQ(j["violations"], 0) << r.client.out;
    const uint64_t eps_max = j["epsilon_ns"]["max"];
    EXPECT_GT(eps_max, 0u);
    // ε0 = δ/2 < timeout/2, plus ρ·(time since the last sync): finite and bounded.
    EXPECT_LT(eps_max, 50'000'000u) << r.client.out;
    EXPECT_GT(j["epsilon_ns"]["mean"].get<double>(), 0);
    EXPECT_LE(j["epsilon_ns"]["p50"], j["epsilon_ns"]["p999"]);
    EXPECT_GT(j["rtt_ns"]["min"].get<uint64_t>(), 0u);
    EXPECT_GT(j["epsilon_samples"].get<uint64_t>(), 4000u);  // the 1 ms grid over ~6 s
    // θ = master − local ≈ −5 ms − 8 ppm · t, within the reported bound of the truth.
    EXPECT_LT(std::abs(j["theta_ns"].get<int64_t>() + 5'000'000), 50'000'000);
    EXPECT_TRUE(j["master_mac"].is_string()) << "master MAC not learned";
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    EXPECT_EQ(r.master_json["role"], "master");
    EXPECT_EQ(r.master_json["timestamps"], "sw");
    EXPECT_GE(r.master_json["tx_packets"].get<uint64_t>(), j["syncs"].get<uint64_t>());
    EXPECT_EQ(r.master_json["mempool_in_use_at_exit"], 0);
    if (r.telemetry.is_null()) {
        std::printf("note: /linerate/clocksync not read (no dpdk-telemetry.py, or too slow)\n");
    } else {
        std::printf("telemetry: %s\n", r.telemetry.dump().c_str());
        EXPECT_EQ(r.telemetry["synced"], 1) << r.telemetry;
        EXPECT_GT(r.telemetry["epsilon_ns"].get<uint64_t>(), 0u) << r.telemetry;
        EXPECT_TRUE(r.telemetry["theta_ns"].is_string()) << r.telemetry;
    }
}

// The benchmark's flood: --background-pps frames share the probes' port and queue, the master
// drops every one of them as not_clocksync, and the bound still holds.
TEST(ClocksyncTwoProcess, BackgroundLoadReachesTheMastersPort) {
    PairResult r = run_pair(
        {"--sim-offset-ns", "5000000", "--sim-drift-ppm", "8", "--probes", "4", "--sync-period-ms",
         "50", "--probe-timeout-ms", "80", "--background-pps", "100000"},
        3.0);
    ASSERT_EQ(r.master.exit_status, 0) << r.master.out;
    ASSERT_EQ(r.client.exit_status, 0) << r.client.out;
    const nlohmann::json& j = r.client_json;
    print_figures("background load", j);
    ASSERT_TRUE(j.is_object()) << r.client.out;
    EXPECT_GE(j["syncs"].get<uint64_t>(), 10u) << r.client.out;
    EXPECT_EQ(j["violations"], 0) << r.client.out;
    const uint64_t sent = j["background_frames"];
    EXPECT_GT(sent, 100'000u) << r.client.out;  // 0.1 Mpps over 3 s, less the pauses
    EXPECT_EQ(r.master_json["drops"]["not_clocksync"], sent) << r.master.out;
    EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
    EXPECT_EQ(r.master_json["mempool_in_use_at_exit"], 0);
}

// Negative control: 50 ppm against rho = 10 ppm must be caught. ε0 <= δ/2 is capped by the
// 0.1 ms probe timeout (slower answers are dropped), and the error at the sync is within ε0, so
// once 40 ppm · t > 2 ε0 (t > 2.5 s) a violation is certain; one round of 64 spaced probes early
// in the run, and a 10 s period (no second sync), give it more than 5 s.
TEST(ClocksyncTwoProcess, DriftBeyondTheBoundIsCaught) {
    PairResult r =
        run_pair({"--sim-offset-ns", "5000000", "--sim-drift-ppm", "50", "--sync-period-ms",
                  "10000", "--probes", "64", "--probe-gap-us", "5000", "--probe-timeout-ms", "0.1"},
                 6.0);
    ASSERT_EQ(r.client.exit_status, 0) << r.client.out;
    const nlohmann::json& j = r.client_json;
    print_figures("beyond bound", j);
    ASSERT_TRUE(j.is_object()) << r.client.out;
    ASSERT_GE(j["syncs"].get<uint64_t>(), 1u)
        << "no probe came back within 0.1 ms: machine too loaded for the control\n"
        << r.client.out;
    EXPECT_GT(j["violations"].get<uint64_t>(), 0u) << r.client.out;
}

TEST(ClocksyncCli, BadOptionsExit2AndHelpExits0) {
    EXPECT_EQ(run_process({kApp, "--help"}).exit_status, 0);
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {},                                          // --role is required
             {"--role", "boss"},                          // not a role
             {"--role", "master", "--probes", "4"},       // client-only option
             {"--role", "client", "--timestamps", "hw"},  // master-only option
             {"--role", "client", "--master-mac", "02:00:00:00:00"},
             {"--role", "client", "--master-ip", "10.0.0.256"},
             {"--role", "client", "--probes", "65"},
             {"--role", "client", "--drift-bound-ppm", "-1"},
             {"--role", "client", "--sync-period-ms", "0"},
             {"--role", "master", "--timestamps", "ptp"},
         }) {
        std::vector<std::string> argv = {kApp};
        argv.insert(argv.end(), args.begin(), args.end());
        ProcessResult r = run_process(argv);
        std::string line;
        for (const auto& a : args) line += a + " ";
        EXPECT_EQ(r.exit_status, 2) << line << "\n" << r.out;
        EXPECT_NE(r.out.find("see --help"), std::string::npos) << line << "\n" << r.out;
    }
}
