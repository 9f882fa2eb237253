// --metrics under a real Prometheus (Debian's `prometheus`, started here on 127.0.0.1 with a
// generated config, a 1 s scrape interval and a TSDB in the test's scratch directory): it scrapes
// l2reflect on net_null and kvagg on a veth (the sender stops before the app), and what it
// stored, read back through its HTTP API, matches the app's JSON at exit: counters that
// stopped moving equal it exactly, the moving ones only grew. The endpoint's text passes
// `promtool check metrics`, and every family it serves is in docs/metrics.md with its type
// and labels. Bad addresses exit 2 with one line, before the EAL.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "support/doc_table.hpp"
#include "support/metrics_text.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate::test;

namespace {

// Where the app runs (the host, or a namespace): Prometheus, curl and promtool run there too,
// everything on that 127.0.0.1.
struct Place {
    std::function<std::vector<std::string>(const std::vector<std::string>&)> wrap;
    std::function<ShellResult(const std::string&)> run;
};

Place host() {
    return {[](const std::vector<std::string>& argv) { return argv; },
            [](const std::string& cmd) { return shell(cmd); }};
}

Place inside(const NetNs& ns) {
    return {[&ns](const std::vector<std::string>& argv) { return ns.wrap(argv); },
            [&ns](const std::string& cmd) { return ns.try_run(cmd); }};
}

std::string prometheus_missing() {
    for (const char* tool : {"prometheus", "promtool", "curl"})
        if (shell(std::string("command -v ") + tool).status != 0)
            return std::string(tool) + " is not installed (scripts/setup installs it)";
    return {};
}

// A port nobody listens on now, on this namespace's 127.0.0.1.
int free_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    close(fd);
    return ntohs(sa.sin_port);
}

// The endpoint's port, from the line the app prints at start.
int metrics_port(const std::string& out) {
    std::smatch m;
    if (!std::regex_search(out, m, std::regex("metrics at http://127\\.0\\.0\\.1:(\\d+)/metrics")))
        return -1;
    return std::stoi(m[1]);
}

class PrometheusServer {
  public:
    PrometheusServer(const Place& place, int target_port, int web_port)
        : place_(place), web_(web_port) {
        const std::string config = scratch("prometheus.yml");
        std::ofstream(config) << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                              << "scrape_configs:\n  - job_name: linerate\n    static_configs:\n"
                              << "      - targets: ['127.0.0.1:" << target_port << "']\n";
        std::string path = shell("command -v prometheus").out;
        path.erase(path.find_last_not_of("\n") + 1);  // BackgroundProcess does not search PATH
        proc_ = std::make_unique<BackgroundProcess>(place.wrap(
            {path, "--config.file=" + config, "--storage.tsdb.path=" + scratch("tsdb"),
             "--web.listen-address=127.0.0.1:" + std::to_string(web_port), "--log.level=warn"}));
    }
    ~PrometheusServer() {
        proc_->signal(SIGTERM);
        proc_->finish(20);
    }

    // The result of an instant query (the API's data.result), or null on an error.
    nlohmann::json query(const std::string& expr) const {
        const ShellResult r = place_.run("curl -sf -G http://127.0.0.1:" + std::to_string(web_) +
                                         "/api/v1/query --data-urlencode 'query=" + expr + "'");
        if (r.status != 0) return nullptr;
        const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
        return j.is_object() && j.value("status", "") == "success" ? j["data"]["result"] : nullptr;
    }
    // The value of a query answered with one sample; NaN when there is none.
    double value(const std::string& expr) const {
        const nlohmann::json r = query(expr);
        if (!r.is_array() || r.size() != 1) return NAN;
        return std::stod(r[0]["value"][1].get<std::string>());
    }
    // Waits until `expr` has a value >= `at_least`.
    bool wait_for(const std::string& expr, double at_least, double timeout_s) const {
        for (auto end = clock::now() + seconds(timeout_s); clock::now() < end; sleep(0.2))
            if (value(expr) >= at_least) return true;
        return false;
    }
    std::string output() const { return proc_->output(); }

  private:
    using clock = std::chrono::steady_clock;
    static std::chrono::duration<double> seconds(double s) {
        return std::chrono::duration<double>(s);
    }
    static void sleep(double s) { std::this_thread::sleep_for(seconds(s)); }
    Place place_;
    int web_;
    std::unique_ptr<BackgroundProcess> proc_;
};

// The value of every series of `expr` by the values of `label` (one label: worker, reason...).
std::map<std::string, double> by_label(const nlohmann::json& result, const std::string& label) {
    std::map<std::string, double> out;
    if (!result.is_array()) return out;
    for (const auto& s : result)
        out[s["metric"].value(label, "")] = std::stod(s["value"][1].get<std::string>());
    return out;
}

void expect_documented(const std::string& file);

// The endpoint's text in `file`: promtool finds nothing to say, and every family is in
// docs/metrics.md with the type and the labels served.
void expect_clean_and_documented(const std::string& file) {
    const ShellResult check = shell("promtool check metrics < " + file);
    EXPECT_EQ(check.status, 0) << check.out;
    EXPECT_EQ(check.out, "") << "promtool's findings";
    expect_documented(file);
}

// The same, of what the endpoint on `port` serves now.
void expect_endpoint_clean_and_documented(const Place& place, int port) {
    const std::string text = scratch("metrics.txt");
    const ShellResult got =
        place.run("curl -sf http://127.0.0.1:" + std::to_string(port) + "/metrics -o " + text);
    ASSERT_EQ(got.status, 0) << got.out;
    expect_clean_and_documented(text);
}

// Every family of the endpoint's text in `file` is in docs/metrics.md with the type and the
// labels served.
void expect_documented(const std::string& file) {
    const std::map<std::string, DocMetric> doc = doc_metric_table();
    ASSERT_FALSE(doc.empty()) << "docs/metrics.md has no metric table";
    std::map<std::string, std::set<std::string>> labels;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_match(line, m, std::regex("# TYPE (linerate_\\w+) (\\w+)"))) {
            auto it = doc.find(m[1]);
            ASSERT_NE(it, doc.end()) << m[1] << " is served but not in docs/metrics.md";
            EXPECT_EQ(it->second.type, m[2]) << m[1];
            EXPECT_NE(it->second.json, "") << m[1] << ": no JSON twin column";
        } else if (std::regex_search(line, m, std::regex("^(linerate_\\w+)\\{([^}]*)\\}"))) {
            // A histogram's samples: FAMILY_bucket{..., le=...}, FAMILY_sum, FAMILY_count.
            const std::string family =
                doc.contains(m[1])
                    ? std::string(m[1])
                    : std::regex_replace(std::string(m[1]), std::regex("_(bucket|sum|count)$"), "");
            const std::string ls = m[2];
            const std::regex label("(\\w+)=\"");
            for (std::sregex_iterator i(ls.begin(), ls.end(), label), e; i != e; ++i)
                if ((*i)[1] != "le") labels[family].insert((*i)[1]);
        }
    }
    EXPECT_FALSE(labels.empty());
    for (const auto& [name, served] : labels) {
        const std::vector<std::string>& listed = doc.at(name).labels;
        EXPECT_EQ(served, std::set<std::string>(listed.begin(), listed.end())) << name;
    }
}

// What Prometheus last stored of the stopped counters equals the JSON at exit: drops by reason
// and app counters per worker, port drops by kind, links.
void expect_stopped_counters_match(const PrometheusServer& p, const nlohmann::json& j) {
    const nlohmann::json& w0 = j["workers"][0];
    const auto drops =
        by_label(p.query("last_over_time(linerate_drops_total{worker=\"0\"}[5m])"), "reason");
    ASSERT_EQ(drops.size(), w0["drops"].size()) << w0.dump();
    for (const auto& [reason, n] : w0["drops"].items())
        EXPECT_EQ(drops.at(reason), n.get<double>()) << reason;
    const auto kinds =
        by_label(p.query("last_over_time(linerate_port_drops_total{port=\"0\"}[5m])"), "kind");
    for (const auto& [kind, n] : kinds)
        EXPECT_EQ(n, j["port_drops"]["0"][kind].get<double>()) << kind;
    EXPECT_EQ(p.value("last_over_time(linerate_link_up{port=\"0\"}[5m])"),
              j["links"]["0"]["up"].get<bool>() ? 1 : 0);
    EXPECT_EQ(p.value("last_over_time(linerate_link_downs_total{port=\"0\"}[5m])"),
              j["links"]["0"]["downs"].get<double>());
}

TEST(Metrics, PrometheusScrapesL2reflectOnNetNull) {
    if (std::string why = prometheus_missing(); !why.empty()) GTEST_SKIP() << why;
    const std::string json = scratch("l2.json");
    std::vector<std::string> argv = {binary("apps/l2reflect/l2reflect")};
    for (const std::string& a : no_huge_eal()) argv.push_back(a);
    // No --duration: the app runs until the test has what it checks (a loaded machine can take
    // longer than any fixed run time to start Prometheus and get four scrapes), then SIGINT.
    argv.insert(argv.end(), {"--vdev=net_null0", "--", "--metrics", "127.0.0.1:0", "--stats-period",
                             "0", "--json", json});
    BackgroundProcess app(argv);
    ASSERT_TRUE(app.wait_for_output("/metrics", 30)) << app.output();
    const int port = metrics_port(app.output());
    ASSERT_GT(port, 0) << app.output();
    expect_endpoint_clean_and_documented(host(), port);

    PrometheusServer prom(host(), port, free_port());
    ASSERT_TRUE(prom.wait_for("count_over_time(linerate_rx_packets_total[1m])", 4, 20))
        << prom.output();
    // Moving: it only grew, and it grew.
    EXPECT_EQ(prom.value("resets(linerate_rx_packets_total[1m])"), 0);
    EXPECT_GT(prom.value("increase(linerate_rx_packets_total[1m])"), 0);
    app.signal(SIGINT);
    const ProcessResult r = app.finish(30);
    ASSERT_EQ(r.exit_status, 0) << r.out;
    const nlohmann::json j = read_json(json);
    const double last_rx = prom.value("last_over_time(linerate_rx_packets_total[5m])");
    EXPECT_GT(last_rx, 0);
    EXPECT_LE(last_rx, j["rx_packets"].get<double>());
    expect_stopped_counters_match(prom, j);
}

// The peer's sender: stream 5, seq 1..30 without 11..13, then 12 late; two tuples each (key k,
// value k + seq): 28 datagrams, 56 tuples, 3 numbers jumped over and 1 of them filled. Then it
// asks for the stream's status (one request, one response frame) and prints its top and gaps.
constexpr const char* kSender = R"(
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
for seq in [n for n in range(1, 31) if n not in (11, 12, 13)] + [12]:
    tuples = b''.join(struct.pack('!QQ', k, k + seq) for k in (4, 9))
    s.sendto(struct.pack('!HBBHIQI', 0x4B56, 1, 0, 2, 5, seq, 0) + tuples, (sys.argv[1], 9000))
s.sendto(struct.pack('!HBBHIQI', 0x4B56, 1, 2, 0, 5, 1, 0).ljust(1472, b'\0'),
         (sys.argv[1], 9000))  # padded: an unkeyed answer is no larger than its request
r = s.recv(2048)
flags, top, gaps = struct.unpack_from('!QQQ', r, 22)
print('status', r[3], 'top', top, 'gaps', gaps)
)";

// The app's port options on interface `iface`: a net_af_packet vdev, the DPDK datapath.
std::vector<std::string> af_packet_port(const std::string& iface) {
    std::vector<std::string> argv = no_huge_eal();
    argv.insert(argv.end(), {"--vdev=net_af_packet0,iface=" + iface, "--"});
    return argv;
}

// The same on the XDP datapath (--af-xdp, generic mode on a veth).
std::vector<std::string> xdp_datapath_port(const std::string& iface) {
    return {"--af-xdp", iface, "--datapath", "xdp"};
}

// `app` on the app end of a default veth (addresses 10.97.0.1/.2), its port options
// `port_options(iface)`, scraped every second by a Prometheus in the app's namespace. Once the app
// runs, `send` runs in the peer namespace with the app's address as its last argument; once the
// PromQL query `arrived` reaches `at_least` the scrapes go on 3 s over the stopped counters, the
// app stops with SIGINT, and `check(prometheus, json)` judges what Prometheus stored against the
// app's exit JSON.
template <class Port, class Check>
void scrape_on_veth(const std::string& app, Port&& port_options, const std::string& send,
                    const std::string& arrived, double at_least, Check&& check) {
    NetNs app_ns("mtr"), peer("mtrp");
    VethPair veth(app_ns, peer);
    app_ns.run("ip addr add 10.97.0.1/24 dev " + veth.app_if);
    peer.run("ip addr add 10.97.0.2/24 dev " + veth.peer_if);
    const std::string json = scratch(app + "_veth.json");
    std::vector<std::string> argv = {binary("apps/" + app + "/" + app)};
    for (const std::string& a : port_options(veth.app_if)) argv.push_back(a);
    argv.insert(argv.end(), {"--metrics", "127.0.0.1:0", "--stats-period", "0", "--json", json});
    if (app == "kvagg") argv.insert(argv.end(), {"--allow", "10.97.0.2"});  // its status request
    BackgroundProcess proc(app_ns.wrap(argv));
    ASSERT_TRUE(proc.wait_for_output("/metrics", 30)) << proc.output();
    const int port = metrics_port(proc.output());
    ASSERT_GT(port, 0) << proc.output();
    const Place place = inside(app_ns);
    PrometheusServer prom(place, port, 9090);  // the namespace's own 127.0.0.1
    ASSERT_TRUE(
        prom.wait_for("count_over_time(linerate_rx_packets_total{worker=\"0\"}[1m])", 2, 20))
        << prom.output();
    ASSERT_TRUE(proc.wait_for_output(app + ": running", 30)) << proc.output();
    const ShellResult sent = peer.try_run(send + " 10.97.0.1");
    ASSERT_EQ(sent.status, 0) << sent.out;
    if (app == "kvagg") {  // 0x82; 11 and 13 still missing
        EXPECT_NE(sent.out.find("status 130 top 30 gaps 2"), std::string::npos) << sent.out;
    }
    ASSERT_TRUE(prom.wait_for(arrived, at_least, 20)) << proc.output();
    std::this_thread::sleep_for(std::chrono::seconds(3));  // scrapes of the stopped counters
    expect_endpoint_clean_and_documented(place, port);
    proc.signal(SIGINT);
    const ProcessResult r = proc.finish(30);
    ASSERT_EQ(r.exit_status, 0) << r.out;
    const nlohmann::json j = read_json(json);
    ASSERT_TRUE(j.is_object()) << r.out;
    const nlohmann::json& w0 = j["workers"][0];
    for (const char* key : {"rx_packets", "rx_bytes", "tx_packets", "tx_bytes"})
        EXPECT_EQ(
            prom.value(std::string("last_over_time(linerate_") + key + "_total{worker=\"0\"}[5m])"),
            w0[key].get<double>())
            << key;
    // One worker on one queue: the port's per-queue counts are the worker's.
    EXPECT_EQ(prom.value("last_over_time(linerate_queue_rx_packets_total{port=\"0\",queue=\"0\"}"
                         "[5m])"),
              w0["rx_packets"].get<double>());
    EXPECT_EQ(prom.value("last_over_time(linerate_queue_tx_packets_total{port=\"0\",queue=\"0\"}"
                         "[5m])"),
              w0["tx_packets"].get<double>());
    // Idle: nothing held (af_packet copies into mbufs per burst) but what the driver keeps
    // (net_af_xdp's fill ring, pmd_held).
    EXPECT_EQ(prom.value("last_over_time(linerate_mempool_in_use[5m])"),
              j["mempool_in_use_at_exit"].get<double>() + j["pmd_held"].get<double>())
        << j.dump();
    EXPECT_GT(prom.value("last_over_time(linerate_mempool_size[5m])"), 0);
    EXPECT_LE(prom.value("last_over_time(linerate_uptime_seconds[5m])"),
              j["duration_s"].get<double>());
    expect_stopped_counters_match(prom, j);
    check(prom, j);
}

TEST(Metrics, PrometheusScrapesKvaggOnAVethAndTheStoppedCountersEqualTheJson) {
    if (std::string why = prometheus_missing(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const std::string sender = scratch("sender.py");
    std::ofstream(sender) << kSender;
    scrape_on_veth(
        "kvagg", af_packet_port, "python3 " + sender,
        "linerate_app_events_total{counter=\"tuples\"}", 56,
        [](const PrometheusServer& prom, const nlohmann::json& j) {
            const nlohmann::json& w0 = j["workers"][0];
            ASSERT_EQ(j["tuples"], 56u);
            const auto app_counters =
                by_label(prom.query("last_over_time(linerate_app_events_total[5m])"), "counter");
            for (const auto& [counter, n] : app_counters)
                EXPECT_EQ(n, w0[counter].get<double>()) << counter;
            EXPECT_EQ(app_counters.at("tuples"), 56);
            EXPECT_EQ(w0["keys"], 2u);  // keys 4 and 9
            EXPECT_EQ(prom.value("last_over_time(linerate_kvagg_keys{worker=\"0\"}[5m])"), 2);
            // The sender's gaps: 11, 12, 13 jumped over, 12 came late; its status request.
            EXPECT_EQ(j["gaps_opened"], 3u);
            EXPECT_EQ(j["gaps_filled"], 1u);
            for (const char* gaps : {"gaps_opened", "gaps_filled"})
                EXPECT_EQ(prom.value(std::string("last_over_time(linerate_kvagg_") + gaps +
                                     "_total{worker=\"0\"}[5m])"),
                          w0[gaps].get<double>())
                    << gaps;
            EXPECT_EQ(w0["requests"], 1u);
            EXPECT_EQ(w0["responses"], 1u);
            const auto kinds = by_label(
                prom.query("last_over_time(linerate_kvagg_service_requests_total[5m])"), "kind");
            const std::pair<const char*, const char*> twins[] = {
                {"read", "reads"}, {"status", "statuses"}, {"flush", "flushes"}};
            for (const auto& [kind, twin] : twins)
                EXPECT_EQ(kinds.at(kind), j["service"].at(twin).get<double>()) << kind;
            EXPECT_EQ(kinds.at("status"), 1);
        });
}

// nfv on a default veth: the peer's kernel pings it (valid IPv4, reflected) and resolves it by
// ARP (not IPv4: dropped by reason); Prometheus's last samples equal the exit JSON.
TEST(Metrics, PrometheusScrapesNfvOnAVethAndTheStoppedCountersEqualTheJson) {
    if (std::string why = prometheus_missing(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    scrape_on_veth("nfv", af_packet_port, "ping -c 5 -i 0.2 -W 1 -q",
                   "linerate_tx_packets_total{worker=\"0\"}", 5,
                   [](const PrometheusServer& prom, const nlohmann::json& j) {
                       EXPECT_GE(j["tx_packets"].get<uint64_t>(), 5u);         // the echo requests
                       EXPECT_GE(j["drops"]["not_ipv4"].get<uint64_t>(), 1u);  // ARP
                       EXPECT_EQ(prom.value("last_over_time(linerate_drops_total{reason=\"not_"
                                            "ipv4\"}[5m])"),
                                 j["drops"]["not_ipv4"].get<double>());
                   });
}

// The peer's raw sender for nfv: 5 valid IPv4 frames and 2 with a broken header checksum, to the
// broadcast MAC (no ARP: the peer's kernel sends nothing of its own), out of the peer's one
// interface (argv[1]) to the app's address (argv[2]).
constexpr const char* kIpv4Sender = R"(
import socket, struct, sys
def checksum(h):
    s = sum(struct.unpack('!10H', h))
    while s >> 16: s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for i in range(7):
    h = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 46, i, 0, 64, 17, 0, socket.inet_aton('10.97.0.2'),
                    socket.inet_aton(sys.argv[2]))
    c = checksum(h) ^ (1 if i >= 5 else 0)
    h = h[:10] + struct.pack('!H', c) + h[12:]
    s.send(bytes([0xFF] * 6 + [2, 0, 0, 0, 0, 2, 8, 0]) + h + bytes(26))
)";

// The value of every series of the stopped counter `family` (last sample) by `label`.
std::map<std::string, double> last_by(const PrometheusServer& p, const std::string& family,
                                      const std::string& label) {
    return by_label(p.query("last_over_time(" + family + "[5m])"), label);
}

// nfv on --datapath xdp on a default veth (its program in generic mode): the XDP program answers
// every frame, and Prometheus's last samples of its families (worker "xdp" rows, the program's
// outcomes, the tiers) equal the exit JSON exactly.
TEST(Metrics, PrometheusScrapesNfvOnTheXdpDatapathAndTheStoppedCountersEqualTheJson) {
    if (std::string why = prometheus_missing(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const std::string sender = scratch("ipv4_sender.py");
    std::ofstream(sender) << kIpv4Sender;
    // The peer namespace's one interface besides lo.
    const std::string send = "python3 " + sender + " $(ls /sys/class/net | grep -v '^lo$')";
    scrape_on_veth(
        "nfv", xdp_datapath_port, send, "sum(linerate_xdp_tier_packets_total)", 7,
        [](const PrometheusServer& prom, const nlohmann::json& j) {
            const nlohmann::json& w0 = j["workers"][0];
            ASSERT_EQ(j["datapath"], "xdp") << j.dump();
            EXPECT_EQ(j["tx_packets"], 5u) << j.dump();
            EXPECT_EQ(j["drops"]["bad_checksum"], 2u) << j.dump();
            // The DPDK worker (the slow path) had none; the rest is the program's, worker "xdp".
            for (const char* key : {"rx_packets", "rx_bytes", "tx_packets", "tx_bytes"})
                EXPECT_EQ(prom.value(std::string("last_over_time(linerate_") + key +
                                     "_total{worker=\"xdp\"}[5m])"),
                          j[key].get<double>() - w0[key].get<double>())
                    << key;
            const auto drops = last_by(prom, "linerate_drops_total{worker=\"xdp\"}", "reason");
            for (const auto& [reason, n] : j["drops"].items())
                EXPECT_EQ(drops.at(reason), n.get<double>() - w0["drops"][reason].get<double>())
                    << reason;
            const auto outcomes = last_by(prom, "linerate_xdp_program_packets_total", "outcome");
            ASSERT_EQ(outcomes.size(), j["xdp"]["program"].size()) << j["xdp"].dump();
            for (const auto& [outcome, n] : j["xdp"]["program"].items())
                EXPECT_EQ(outcomes.at(outcome), n.get<double>()) << outcome;
            EXPECT_EQ(outcomes.at("tx"), 5);
            EXPECT_EQ(outcomes.at("drop"), 2);
            const auto tiers = last_by(prom, "linerate_xdp_tier_packets_total", "tier");
            ASSERT_EQ(tiers.size(), j["xdp"]["tiers"].size()) << j["xdp"].dump();
            for (const auto& [tier, n] : j["xdp"]["tiers"].items())
                EXPECT_EQ(tiers.at(tier), n.get<double>()) << tier;
            EXPECT_EQ(tiers.at("xdp"), 7);
        });
}

// A server app and a client app over net_memif (each with its own --file-prefix), the client
// with --metrics: its endpoint's text (the first scrape that holds `ready`, polled while the
// client runs: its first sync or return may take a while on a loaded machine) and its JSON.
struct MemifPair {
    std::string text;
    nlohmann::json json;
    ProcessResult server, client;
};

MemifPair memif_pair(const std::string& server_bin, std::vector<std::string> server_args,
                     const std::string& client_bin, std::vector<std::string> client_args,
                     double client_s, const std::function<bool(const std::string&)>& ready) {
    const std::string id = std::to_string(getpid()), sock = "/tmp/lrm" + id + ".sock";
    const std::string client_lcore = std::thread::hardware_concurrency() > 1 ? "1" : "0";
    auto eal = [&](const std::string& bin, const std::string& lcore, const std::string& role) {
        std::vector<std::string> argv = eal_command(bin, lcore, "lrm" + role + id);
        argv.insert(argv.end(), {"--vdev=net_memif0,role=" + role + ",socket=" + sock, "--"});
        return argv;
    };
    std::vector<std::string> server = eal(server_bin, "0", "server");
    server.insert(server.end(),
                  {"--duration", std::to_string(client_s + 2), "--stats-period", "0"});
    server.insert(server.end(), server_args.begin(), server_args.end());
    MemifPair r;
    const std::string json = scratch("client.json");
    std::vector<std::string> client = eal(client_bin, client_lcore, "client");
    client.insert(client.end(), {"--duration", std::to_string(client_s), "--stats-period", "0",
                                 "--metrics", "127.0.0.1:0", "--json", json});
    client.insert(client.end(), client_args.begin(), client_args.end());
    BackgroundProcess s(server);
    // The server's socket first: its EAL is up once it describes its pool.
    if (!s.wait_for_output(": netbuf", 30)) {
        r.server = s.finish(5);
        return r;
    }
    BackgroundProcess c(client);
    if (c.wait_for_output("/metrics", 30)) {
        const std::string url =
            "http://127.0.0.1:" + std::to_string(metrics_port(c.output())) + "/metrics";
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(client_s);
        while (!ready(r.text) && std::chrono::steady_clock::now() < end) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            if (const ShellResult got = shell("curl -sf " + url); got.status == 0) r.text = got.out;
        }
    }
    r.client = c.finish(client_s + 30);
    r.server = s.finish(30);
    r.json = read_json(json);
    return r;
}

const std::string kEpsCount = "linerate_clocksync_epsilon_grid_seconds_count{app=\"clocksync\"}";
const std::string kRttCount = "linerate_clocksync_rtt_seconds_count{app=\"clocksync\"}";
const std::string kGenRttCount = "linerate_gen_rtt_seconds_count{app=\"linerate-gen\"}";

TEST(Metrics, ClocksyncClientServesItsClockAndHistogramsDocumented) {
    if (std::string why = prometheus_missing(); !why.empty()) GTEST_SKIP() << why;
    const std::string cs = binary("apps/clocksync/clocksync");
    const MemifPair r = memif_pair(
        cs, {"--role", "master"}, cs, {"--role", "client", "--sync-period-ms", "10"}, 6,
        [](const std::string& text) {
            return metric_sample(text, kEpsCount) > 0 && metric_sample(text, kRttCount) > 0;
        });
    ASSERT_EQ(r.client.exit_status, 0) << r.server.out << r.client.out;
    ASSERT_FALSE(r.text.empty()) << r.client.out;
    const std::string file = scratch("clocksync.txt");
    std::ofstream(file) << r.text;
    expect_clean_and_documented(file);
    ASSERT_EQ(metric_sample(r.text, "linerate_clocksync_synced{app=\"clocksync\"}"), 1)
        << r.text << r.server.out << r.client.out;
    const double syncs = metric_sample(r.text, "linerate_clocksync_syncs_total{app=\"clocksync\"}");
    EXPECT_GT(syncs, 0) << r.text;
    EXPECT_LE(syncs, r.json["syncs"].get<double>());
    // Copied at a sync, so no more than the run's samples; +Inf holds them all.
    const double eps_count = metric_sample(r.text, kEpsCount);
    EXPECT_GT(eps_count, 0) << r.text;
    EXPECT_LE(eps_count, r.json["epsilon_samples"].get<double>());
    EXPECT_EQ(metric_sample(r.text,
                            "linerate_clocksync_epsilon_grid_seconds_bucket{app=\"clocksync\","
                            "le=\"+Inf\"}"),
              eps_count);
    EXPECT_GT(metric_sample(r.text, kRttCount), 0);
    // Synced: epsilon now is served, theta is; no more violations than the run's.
    EXPECT_GT(metric_sample(r.text, "linerate_clocksync_epsilon_seconds{app=\"clocksync\"}"), 0);
    EXPECT_FALSE(
        std::isnan(metric_sample(r.text, "linerate_clocksync_theta_seconds{app=\"clocksync\"}")));
    EXPECT_LE(metric_sample(r.text, "linerate_clocksync_violations_total{app=\"clocksync\"}"),
              r.json["violations"].get<double>());
}

TEST(Metrics, GenServesItsRoundTripsDocumented) {
    if (std::string why = prometheus_missing(); !why.empty()) GTEST_SKIP() << why;
    const MemifPair r =
        memif_pair(binary("apps/l2reflect/l2reflect"), {}, binary("bench/gen/linerate-gen"),
                   {"--kind", "udp", "--rate-pps", "20000"}, 6,
                   [](const std::string& text) { return metric_sample(text, kGenRttCount) > 0; });
    ASSERT_EQ(r.client.exit_status, 0) << r.server.out << r.client.out;
    ASSERT_FALSE(r.text.empty()) << r.client.out;
    const std::string file = scratch("gen.txt");
    std::ofstream(file) << r.text;
    expect_clean_and_documented(file);
    const double rtts = metric_sample(r.text, kGenRttCount);
    EXPECT_GT(rtts, 0) << r.text;
    EXPECT_LE(rtts, r.json["latency_ns"]["count"].get<double>());
    EXPECT_GT(metric_sample(r.text,
                            "linerate_gen_rtt_percentile_seconds{app=\"linerate-gen\","
                            "percentile=\"p50\"}"),
              0);
    // Returns so far (no more than at exit), and what is still out is a count.
    const double returned =
        metric_sample(r.text,
                      "linerate_app_events_total{app=\"linerate-gen\",worker=\"0\","
                      "counter=\"returned\"}");
    EXPECT_GE(returned, rtts) << r.text;
    EXPECT_LE(returned, r.json["workers"][0]["returned"].get<double>());
    EXPECT_GE(metric_sample(r.text, "linerate_gen_outstanding{app=\"linerate-gen\"}"), 0) << r.text;
}

// The scrape config is valid for promtool, and the dashboard asks only for documented metrics.
TEST(Metrics, TheScrapeConfigAndTheDashboardHoldToTheDocs) {
    if (std::string why = prometheus_missing(); !why.empty()) GTEST_SKIP() << why;
    const ShellResult check = shell("promtool check config " + source_file("docs/prometheus.yml"));
    EXPECT_EQ(check.status, 0) << check.out;
    std::ifstream in(source_file("docs/grafana-linerate.json"));
    const nlohmann::json dash = nlohmann::json::parse(in);
    const std::map<std::string, DocMetric> doc = doc_metric_table();
    size_t asked = 0;
    for (const auto& panel : dash["panels"])
        for (const auto& target : panel["targets"]) {
            const std::string expr = target["expr"];
            const std::regex name("linerate_\\w+");
            for (std::sregex_iterator i(expr.begin(), expr.end(), name), e; i != e; ++i, ++asked)
                EXPECT_TRUE(doc.contains(i->str())) << i->str() << " in panel " << panel["title"];
        }
    EXPECT_GT(asked, 0u);
}

TEST(Metrics, BadAddressesExit2WithOneLineBeforeTheEal) {
    const std::string l2 = binary("apps/l2reflect/l2reflect");
    std::vector<std::string> eal = no_huge_eal();
    eal.insert(eal.end(), {"--vdev=net_null0", "--", "--duration", "1"});
    auto with = [&](const std::string& address) {
        std::vector<std::string> args = eal;
        args.insert(args.end(), {"--metrics", address});
        return args;
    };
    expect_usage_error(l2, with("127.0.0.1"), "is not HOST:PORT");
    expect_usage_error(l2, with("localhost:9876"), "is not an IPv4 address");
    expect_usage_error(l2, with("127.0.0.1:65536"), "is not a port");
    // A port another socket listens on.
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ASSERT_EQ(listen(fd, 1), 0);
    socklen_t len = sizeof sa;
    getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    expect_usage_error(l2, with("127.0.0.1:" + std::to_string(ntohs(sa.sin_port))),
                       "Address already in use");
    close(fd);
}

}  // namespace
