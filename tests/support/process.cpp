#include "support/process.hpp"

#include "pcapio/pcap_file.hpp"
#include "xdp/datapath/datapath_program.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

namespace linerate::test {

namespace {

// A cross build (aarch64 under qemu) runs the binaries it built through CMake's
// CMAKE_CROSSCOMPILING_EMULATOR (space-separated here), like ctest runs the test binaries:
// no binfmt_misc needed. Other programs run as they are.
std::vector<std::string> with_emulator(const std::vector<std::string>& argv) {
    std::string emulator = LINERATE_EMULATOR;
    std::string bin_dir = std::string(LINERATE_BIN_DIR) + "/";
    if (emulator.empty() || argv.empty() || argv[0].rfind(bin_dir, 0) != 0) return argv;
    std::vector<std::string> out;
    for (size_t pos = 0; pos < emulator.size();) {
        size_t end = emulator.find(' ', pos);
        if (end == std::string::npos) end = emulator.size();
        if (end > pos) out.push_back(emulator.substr(pos, end - pos));
        pos = end + 1;
    }
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const RunOptions& opts) {
    BackgroundProcess p(argv);
    double waited = 0;
    if (opts.signal_after_s >= 0 && opts.signal_after_s < opts.timeout_s) {
        if (!p.wait_exit(opts.signal_after_s)) p.signal(opts.signal);
        waited = opts.signal_after_s;
    }
    return p.finish(opts.timeout_s - waited);
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv_in)
    : log_(scratch("background.log")) {
    std::vector<std::string> argv = with_emulator(argv_in);
    pid_ = fork();
    if (pid_ == 0) {
        int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
}

BackgroundProcess::~BackgroundProcess() {
    if (!done_ && pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
}

std::string BackgroundProcess::output() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

bool BackgroundProcess::wait_for_output(const std::string& text, double timeout_s, size_t times) {
    auto seen = [&] {
        const std::string out = output();
        size_t n = 0;
        for (size_t at = out.find(text); at != std::string::npos; at = out.find(text, at + 1)) ++n;
        return n >= times;
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
        if (seen()) return true;
        if (!done_ && waitpid(pid_, &status_, WNOHANG) == pid_) done_ = true;
        if (done_) return seen();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

void BackgroundProcess::signal(int sig) {
    if (!done_) kill(pid_, sig);
}

bool BackgroundProcess::wait_exit(double timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (!done_) {
        if (waitpid(pid_, &status_, WNOHANG) == pid_) {
            done_ = true;
            break;
        }
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

ProcessResult BackgroundProcess::finish(double timeout_s) {
    if (!wait_exit(timeout_s)) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status_, 0);
        done_ = true;
    }
    ProcessResult r;
    r.exit_status = WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
    r.out = output();
    return r;
}

std::string command_output(const std::string& shell_command) {
    std::string out;
    if (FILE* p = popen(shell_command.c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        pclose(p);
    }
    return out;
}

std::string binary(const std::string& relative) {
    return std::string(LINERATE_BIN_DIR) + "/" + relative;
}

bool telemetry_client_installed() {
    return std::system("command -v dpdk-telemetry.py >/dev/null 2>&1") == 0;
}

std::vector<nlohmann::json> telemetry_query(const std::string& file_prefix,
                                            const std::vector<std::string>& commands,
                                            std::string* out) {
    std::string input;
    for (const auto& c : commands) input += c + "\\n";
    const std::string raw =
        command_output("printf '" + input + "' | dpdk-telemetry.py -f " + file_prefix + " 2>&1");
    if (out) *out = raw;
    // One line per answer: {"<command without its parameters>": value}.
    std::vector<nlohmann::json> answers;
    std::istringstream lines(raw);
    size_t next = 0;
    for (std::string line; std::getline(lines, line) && next < commands.size();) {
        if (line.empty() || line[0] != '{') continue;
        const std::string key = commands[next].substr(0, commands[next].find(','));
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_object() || !j.contains(key)) continue;
        answers.push_back(j[key]);
        ++next;
    }
    answers.resize(commands.size());
    return answers;
}

std::vector<nlohmann::json> telemetry_query_when_ready(const std::string& file_prefix,
                                                       const std::vector<std::string>& commands,
                                                       double timeout_s, std::string* out) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
        std::vector<nlohmann::json> answers = telemetry_query(file_prefix, commands, out);
        const bool all = std::none_of(answers.begin(), answers.end(),
                                      [](const nlohmann::json& a) { return a.is_null(); });
        if (all || std::chrono::steady_clock::now() >= deadline) return answers;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

uint64_t wait_for_stats_total(const std::string& file_prefix, const std::string& key, uint64_t want,
                              double timeout_s) {
    if (!telemetry_client_installed()) return 0;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
        const nlohmann::json s = telemetry_query(file_prefix, {"/linerate/stats"})[0];
        const uint64_t now = s.is_object() ? s.value(key, uint64_t(0)) : 0;
        if (now >= want || std::chrono::steady_clock::now() >= deadline) return now;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) return nlohmann::json();
    return nlohmann::json::parse(in, nullptr, false);
}

void expect_usage_error(const std::string& binary, const std::vector<std::string>& args,
                        const std::string& message) {
    std::vector<std::string> argv = {binary};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = run_process(argv);
    EXPECT_EQ(r.exit_status, 2) << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

std::string test_datapath() {
    const char* d = std::getenv("LINERATE_TEST_DATAPATH");
    return d ? d : "";
}

namespace {

// Under LINERATE_TEST_DATAPATH=xdp every test of the binary is skipped, with the reason, when
// this process cannot load an XDP program (the apps it starts could not either).
class XdpDatapathEnvironment : public ::testing::Environment {
  public:
    void SetUp() override {
        if (test_datapath() != "xdp") return;
        try {
            xdp::DatapathProgram probe("l2reflect.bpf.o", "xdp_l2reflect");
        } catch (const std::exception& e) {
            GTEST_SKIP() << "--datapath xdp: cannot load an XDP program: " << e.what();
        }
    }
};
[[maybe_unused]] ::testing::Environment* const kXdpDatapathEnvironment =
    ::testing::AddGlobalTestEnvironment(new XdpDatapathEnvironment);

}  // namespace

PcapRun run_pcap_app(const std::string& binary, const std::vector<std::vector<uint8_t>>& frames,
                     const std::vector<std::string>& extra) {
    std::string in_path = scratch("in.pcap"), out_path = scratch("out.pcap"),
                json_path = scratch("out.json");
    pcapio::write_frames(in_path, frames);
    std::vector<std::string> argv = {binary, "--pcap", in_path + ":" + out_path, "--json",
                                     json_path};
    if (!test_datapath().empty()) argv.insert(argv.end(), {"--datapath", test_datapath()});
    argv.insert(argv.end(), extra.begin(), extra.end());
    PcapRun r;
    r.proc = run_process(argv, {.timeout_s = 30});
    r.out = pcapio::read_frames(out_path);
    r.json = read_json(json_path);
    return r;
}

PcapPortsRun run_pcap_ports(const std::string& binary,
                            const std::vector<std::vector<std::vector<uint8_t>>>& inputs,
                            const std::vector<std::string>& extra, double duration_s) {
    std::vector<std::string> argv = {binary};
    for (const std::string& a : no_huge_eal()) argv.push_back(a);
    std::vector<std::string> in_paths, out_paths;
    for (size_t i = 0; i < inputs.size(); ++i) {
        in_paths.push_back(scratch("in" + std::to_string(i) + ".pcap"));
        out_paths.push_back(scratch("out" + std::to_string(i) + ".pcap"));
        pcapio::write_frames(in_paths.back(), inputs[i]);
        argv.push_back("--vdev=net_pcap" + std::to_string(i) + ",rx_pcap=" + in_paths.back() +
                       ",tx_pcap=" + out_paths.back());
    }
    const std::string json_path = scratch("out.json");
    argv.insert(argv.end(), {"--", "--stats-period", "0", "--duration", std::to_string(duration_s),
                             "--json", json_path});
    if (!test_datapath().empty()) argv.insert(argv.end(), {"--datapath", test_datapath()});
    argv.insert(argv.end(), extra.begin(), extra.end());
    PcapPortsRun r;
    r.proc = run_process(argv, {.timeout_s = 30 + duration_s});
    for (size_t i = 0; i < inputs.size(); ++i) {
        r.out.push_back(pcapio::read_frames(out_paths[i]));
    }
    r.json = read_json(json_path);
    return r;
}

std::string identifier(std::string text) {
    for (auto& c : text)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return text;
}

namespace {
// What every no-hugepage test run of an app shares; the runtime directory is the callers' choice.
std::vector<std::string> no_huge_eal_base(const std::string& lcores) {
    return {"--lcores=" + lcores,         "--no-huge", "-m", "512", "--no-pci",
            "--log-level=lib.eal:warning"};
}
}  // namespace

std::vector<std::string> no_huge_eal(const std::string& lcores) {
    // No telemetry: see pcap_mode_eal_args.
    std::vector<std::string> args = no_huge_eal_base(lcores);
    args.insert(args.end(), {"--no-shconf", "--no-telemetry"});
    return args;
}

std::vector<std::string> eal_command(const std::string& binary, const std::string& lcores,
                                     const std::string& prefix) {
    std::vector<std::string> argv{binary};
    const std::vector<std::string> eal = no_huge_eal_base(lcores);
    argv.insert(argv.end(), eal.begin(), eal.end());
    argv.push_back("--file-prefix=" + prefix);
    return argv;
}

}  // namespace linerate::test
