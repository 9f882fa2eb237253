// What an app tells systemd (lib/runtime/service_notify.hpp), without systemd: the test binds the
// notification socket a service manager would (NOTIFY_SOCKET), runs l2reflect on net_null, and
// reads every datagram: READY=1 only once `running` is printed, WATCHDOG=1 at half WATCHDOG_USEC
// while the worker polls and never once it stopped polling (the test-only stall,
// LINERATE_TEST_STALL=1 and SIGUSR2), STOPPING=1 at SIGINT, nothing at all without a watchdog,
// and a failed start's error line as STATUS= before the exit.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <optional>
#include <string>

#include "support/process.hpp"
#include "support/scratch.hpp"

using namespace linerate::test;

namespace {

const std::string kApp = binary("apps/l2reflect/l2reflect");
const std::string kReady = "READY=1\nSTATUS=l2reflect: running";
const std::string kStopping = "STOPPING=1\nSTATUS=l2reflect: stopping";
const std::string kPing = "WATCHDOG=1";

// The service manager's end: a unix datagram socket at a scratch path.
class NotifySocket {
  public:
    NotifySocket() : path_(scratch("notify.sock")) {
        fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        path_.copy(addr.sun_path, sizeof addr.sun_path - 1);
        if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
            ADD_FAILURE() << "cannot bind " << path_;
    }
    ~NotifySocket() { close(fd_); }
    NotifySocket(const NotifySocket&) = delete;
    NotifySocket& operator=(const NotifySocket&) = delete;

    const std::string& path() const { return path_; }
    // The next datagram, or none within timeout_s.
    std::optional<std::string> next(double timeout_s) const {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, int(timeout_s * 1000)) != 1) return std::nullopt;
        char buf[4096];
        const ssize_t n = recv(fd_, buf, sizeof buf, 0);
        if (n < 0) return std::nullopt;
        return std::string(buf, size_t(n));
    }

  private:
    std::string path_;
    int fd_ = -1;
};

// The environment a service manager gives the app, for the children started while it lives.
class ServiceEnvironment {
  public:
    ServiceEnvironment(const NotifySocket& socket, const char* watchdog_usec, bool stall) {
        setenv("NOTIFY_SOCKET", socket.path().c_str(), 1);
        set_or_unset("WATCHDOG_USEC", watchdog_usec);
        set_or_unset("LINERATE_TEST_STALL", stall ? "1" : nullptr);
    }
    ~ServiceEnvironment() {
        for (const char* name : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "LINERATE_TEST_STALL"})
            unsetenv(name);
    }

  private:
    static void set_or_unset(const char* name, const char* value) {
        if (value)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
};

std::vector<std::string> app_command(const std::string& json) {
    std::vector<std::string> argv = {kApp};
    for (const std::string& a : no_huge_eal("0-1")) argv.push_back(a);
    argv.insert(argv.end(), {"--vdev=net_null0", "--", "--stats-period", "0", "--json", json});
    return argv;
}

// l2reflect started as a service manager starts it, up to READY=1.
struct NotifiedRun {
    NotifySocket socket;
    std::string json = scratch("notify.json");
    ServiceEnvironment env;
    BackgroundProcess app;

    NotifiedRun(const char* watchdog_usec, bool stall)
        : env(socket, watchdog_usec, stall), app(app_command(json)) {}

    // The first datagram is READY=1, and the `running` line is out by then.
    void expect_ready_after_running() {
        const std::optional<std::string> first = socket.next(60);
        ASSERT_TRUE(first.has_value()) << app.output();
        const std::string out_at_ready = app.output();
        EXPECT_EQ(*first, kReady);
        EXPECT_NE(out_at_ready.find("l2reflect: running\n"), std::string::npos) << out_at_ready;
    }

    void expect_pings(int pings) {
        for (int i = 0; i < pings; ++i) EXPECT_EQ(socket.next(5).value_or("none in 5 s"), kPing);
    }

    // SIGINT: pings until STOPPING=1, then nothing; exit 0 with the JSON written.
    void expect_clean_stop() {
        app.signal(SIGINT);
        std::optional<std::string> m;
        while ((m = socket.next(30)) && *m == kPing) {
        }
        EXPECT_EQ(m.value_or("none in 30 s"), kStopping);
        const ProcessResult r = app.finish(30);
        EXPECT_EQ(r.exit_status, 0) << r.out;
        EXPECT_NE(r.out.find("l2reflect: stopped by signal 2\n"), std::string::npos) << r.out;
        EXPECT_EQ(socket.next(0), std::nullopt);
        const nlohmann::json j = read_json(json);
        ASSERT_TRUE(j.is_object()) << r.out;
        EXPECT_EQ(j["mempool_in_use_at_exit"], 0);
        EXPECT_GT(j["rx_packets"].get<uint64_t>(), 0u);
    }
};

}  // namespace

TEST(ServiceNotify, ReadyAfterRunningThenPingsThenStopping) {
    NotifiedRun run("200000", false);
    run.expect_ready_after_running();
    EXPECT_TRUE(run.app.wait_for_output(
        "l2reflect: systemd watchdog: pinged every 0.1 s while every worker polls\n", 10))
        << run.app.output();
    run.expect_pings(5);
    run.expect_clean_stop();
}

TEST(ServiceNotify, WithoutAWatchdogOnlyReadyAndStopping) {
    NotifiedRun run(nullptr, false);
    run.expect_ready_after_running();
    // Half a second of running: a ping would be a datagram before STOPPING=1.
    EXPECT_EQ(run.socket.next(0.5), std::nullopt);
    run.expect_clean_stop();
    EXPECT_EQ(run.app.output().find("systemd watchdog"), std::string::npos) << run.app.output();
}

// A worker that stops polling (the test-only stall) stops the pings: systemd would restart the
// service once WATCHDOG_USEC passed without one.
TEST(ServiceNotify, AStalledWorkerStopsThePings) {
    NotifiedRun run("200000", true);
    run.expect_ready_after_running();
    run.expect_pings(2);
    run.app.signal(SIGUSR2);
    ASSERT_TRUE(run.app.wait_for_output("test: a worker stops polling until a stop", 10))
        << run.app.output();
    // At most one more ping (the round the worker finished before it stalled), then the status
    // for `systemctl status`, sent before this line.
    ASSERT_TRUE(run.app.wait_for_output("the systemd watchdog is no longer pinged\n", 10))
        << run.app.output();
    std::optional<std::string> m;
    while ((m = run.socket.next(0)) && *m == kPing) {
    }
    EXPECT_EQ(m.value_or("none"), "STATUS=l2reflect: a worker stopped polling");
    // Ten intervals: not one ping.
    EXPECT_EQ(run.socket.next(1.0), std::nullopt);
    run.expect_clean_stop();
}

namespace {

// A start that fails under a service manager: its one error line on stderr is the last STATUS=
// too, followed by sd_notify_barrier's BARRIER=1 (the manager has read the status before the
// exit), and the exit status is the one without a manager.
void expect_error_line_as_status(const std::vector<std::string>& argv, int exit_status,
                                 const std::string& line) {
    NotifySocket socket;
    ServiceEnvironment env(socket, nullptr, false);
    BackgroundProcess app(argv);
    std::optional<std::string> m, status;
    while ((m = socket.next(30)) && m->starts_with("STATUS=")) status = m;
    EXPECT_EQ(status.value_or("none"), "STATUS=" + line);
    EXPECT_EQ(m.value_or("none in 30 s"), "BARRIER=1");  // its fd closed as the datagram is read
    const ProcessResult r = app.finish(30);
    EXPECT_EQ(r.exit_status, exit_status) << r.out;
    EXPECT_NE(r.out.find(line + "\n"), std::string::npos) << r.out;
}

}  // namespace

// `systemctl status` shows why a start failed: a usage error (exit 2) and a start-up failure
// (exit 1, the EAL refusing a driver it does not have).
TEST(ServiceNotify, AFailedStartsErrorLineIsTheStatus) {
    expect_error_line_as_status({kApp, "--no-such-option"}, 2,
                                "l2reflect: The following argument was not expected: "
                                "--no-such-option (see --help)");
    std::vector<std::string> argv = {kApp};
    for (const std::string& a : no_huge_eal("0")) argv.push_back(a);
    argv.insert(argv.end(), {"--vdev=net_lrnosuch0", "--"});
    expect_error_line_as_status(argv, 1,
                                "l2reflect: EAL init failed: No such device (no hugepages? add "
                                "--no-huge before `--`, or use --pcap for test mode)");
}

// The stall is a test hook only: without LINERATE_TEST_STALL, SIGUSR2 keeps its default action
// (the process ends by it).
TEST(ServiceNotify, WithoutTheTestVariableSigusr2KeepsItsDefault) {
    NotifiedRun run(nullptr, false);
    run.expect_ready_after_running();
    run.app.signal(SIGUSR2);
    const ProcessResult r = run.app.finish(30);
    EXPECT_EQ(r.exit_status, 128 + SIGUSR2) << r.out;
}
