#pragma once
// Runs an app binary as a child process for integration tests: captures its output and exit
// status, optionally sends it a signal after a delay.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "support/scratch.hpp"

namespace linerate::test {

struct ProcessResult {
    int exit_status = -1;  // exit code, or 128 + signal if killed
    std::string out;       // stdout and stderr interleaved
};

struct RunOptions {
    double timeout_s = 60;       // killed with SIGKILL after this
    double signal_after_s = -1;  // send `signal` after this many seconds (< 0: never)
    int signal = 2;              // SIGINT
};

ProcessResult run_process(const std::vector<std::string>& argv, const RunOptions& opts = {});

// A child process running while the test drives it (e.g. an app on a port the test feeds through
// a socket): start, wait for a line of its output, signal, then collect like run_process.
class BackgroundProcess {
  public:
    explicit BackgroundProcess(const std::vector<std::string>& argv);
    ~BackgroundProcess();  // SIGKILL if still running
    BackgroundProcess(const BackgroundProcess&) = delete;
    BackgroundProcess& operator=(const BackgroundProcess&) = delete;

    int pid() const { return pid_; }
    // True once `text` appeared in the output (`times` times); false if the process ended or
    // the time ran out.
    bool wait_for_output(const std::string& text, double timeout_s, size_t times = 1);
    std::string output() const;
    void signal(int sig);
    // True once the process ended (within timeout_s).
    bool wait_exit(double timeout_s);
    // Waits for the exit (SIGKILL after timeout_s) and returns status and output.
    ProcessResult finish(double timeout_s = 30);

  private:
    int pid_ = -1;
    std::string log_;
    bool done_ = false;
    int status_ = 0;
};

// Output of a shell command (e.g. dpdk-telemetry.py reading a running app), stdout as it printed.
std::string command_output(const std::string& shell_command);

// Telemetry of a running app (started with --file-prefix=`file_prefix`), asked with DPDK's
// dpdk-telemetry.py: the answer to each command ("/linerate/stats", "/linerate/kvagg/key,5"), in
// order; null for a command that got none. `out`, when given, gets the client's raw output.
bool telemetry_client_installed();
std::vector<nlohmann::json> telemetry_query(const std::string& file_prefix,
                                            const std::vector<std::string>& commands,
                                            std::string* out = nullptr);

// telemetry_query repeated until every command has an answer (an app answers once its EAL and
// its commands are up, and some answer only once the app has its state, e.g. kvagg's table),
// or timeout_s has passed; what it has then.
std::vector<nlohmann::json> telemetry_query_when_ready(const std::string& file_prefix,
                                                       const std::vector<std::string>& commands,
                                                       double timeout_s,
                                                       std::string* out = nullptr);

// /linerate/stats's total `key` (e.g. "rx_packets") of a running app once it has reached `want`
// (readiness: a master stopped before it has polled what a client sent would miss it), or what it
// is when `timeout_s` has passed (0 without an answer, or without dpdk-telemetry.py).
uint64_t wait_for_stats_total(const std::string& file_prefix, const std::string& key, uint64_t want,
                              double timeout_s);

// Path of a built binary, e.g. binary("apps/l2reflect/l2reflect").
std::string binary(const std::string& relative);
nlohmann::json read_json(const std::string& path);

// A command line an app must refuse: exit status 2 and one line that contains `message`.
struct CliCase {
    std::vector<std::string> args;
    std::string message;
    friend void PrintTo(const CliCase& c, std::ostream* os) {
        for (const auto& a : c.args) *os << a << ' ';
    }
};
void expect_usage_error(const std::string& binary, const std::vector<std::string>& args,
                        const std::string& message);

// The datapath the pcap tests ask for (LINERATE_TEST_DATAPATH: "xdp", or "" for the app's
// default); CMake registers nfv's and l2reflect's pcap tests a second time with it set to xdp.
std::string test_datapath();

// An app in test mode: `APP --pcap IN:OUT --json J [--datapath D] [extra]` on `frames`; what it
// sent and wrote.
struct PcapRun {
    ProcessResult proc;
    std::vector<std::vector<uint8_t>> out;
    nlohmann::json json;
};
PcapRun run_pcap_app(const std::string& binary, const std::vector<std::vector<uint8_t>>& frames,
                     const std::vector<std::string>& extra = {});

// An app on one net_pcap vdev per entry of `inputs` (port i reads inputs[i]), for multi-port
// modes: it runs `duration_s` (net_pcap has no end of input), then what each port sent.
struct PcapPortsRun {
    ProcessResult proc;
    std::vector<std::vector<std::vector<uint8_t>>> out;  // per port
    nlohmann::json json;
};
PcapPortsRun run_pcap_ports(const std::string& binary,
                            const std::vector<std::vector<std::vector<uint8_t>>>& inputs,
                            const std::vector<std::string>& extra = {}, double duration_s = 1);

// A string test parameter as a test name: every character but [A-Za-z0-9] becomes '_'.
std::string identifier(std::string text);

// EAL args for a no-hugepage run beside other tests: `--lcores`, memory, no PCI, no shared
// config, no telemetry.
std::vector<std::string> no_huge_eal(const std::string& lcores = "0");

// A command line's start: `binary` and no_huge_eal's options, but with a runtime directory of its
// own (`--file-prefix=prefix`, telemetry on) instead of no shared config: telemetry needs one, and
// so does each of several processes at once. The caller appends vdevs, "--" and the app's options.
std::vector<std::string> eal_command(const std::string& binary, const std::string& lcores,
                                     const std::string& prefix);

}  // namespace linerate::test
