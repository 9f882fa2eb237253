// kvagg --export's sums exact in a real Redis Cluster on 127.0.0.1 (no root, no namespace; skips
// without redis-server): six redis-server processes (three primaries, three replicas) as
// docs/scale-out.md runs them, the fields read back with redis-cli as it documents (the signed
// decimal's two's complement).
//   - sums that cross 2^63 and wrap past 2^64 between epochs, a single value 0x8000000000000001,
//     -1 then 0x8000000000000001: every field equals the u64 sum mod 2^64;
//   - a field that is not an integer in one partition while the others keep being sent: the
//     others exact within a few periods, the held key exact once the field is repaired;
//   - SIGINT while Redis is stopped, no --state: every sum Redis did not take is in the file the
//     stop's line names;
//   - --export without redis://: exit 2, one line.
// A running kvagg gets its frames through a FIFO that net_pcap reads (rx_pcap), written here as
// the test goes; kvagg stops on SIGINT.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kvagg_trace.hpp"
#include "redis_node.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;
using namespace linerate::kvagg::test;

namespace {

const std::string kApp = binary("apps/kvagg/kvagg");
constexpr uint64_t kTop = uint64_t(1) << 63;
using Sums = std::map<uint64_t, uint64_t>;

// The lines of `out` that hold `needle`.
int lines_with(const std::string& out, const std::string& needle) {
    std::istringstream lines(out);
    int n = 0;
    for (std::string line; std::getline(lines, line);) n += line.find(needle) != line.npos;
    return n;
}

// Until `done` holds, up to `seconds`.
template <class Done>
bool wait_until(Done done, double seconds) {
    for (int i = 0; i < seconds * 20 && !done(); ++i) usleep(50'000);
    return done();
}

// A kvagg that runs until SIGINT, its frames written into a FIFO that net_pcap reads (one frame a
// burst: net_pcap's receive blocks until it has a whole burst).
class LiveKvagg {
  public:
    LiveKvagg(const std::string& name, const std::vector<std::string>& args)
        : fifo_(scratch(name + ".fifo")), json_(scratch(name + ".json")) {
        std::filesystem::remove(fifo_);
        mkfifo(fifo_.c_str(), 0600);
        std::vector<std::string> argv{kApp,
                                      "--no-huge",
                                      "-m",
                                      "256",
                                      "--no-pci",
                                      "--file-prefix=" + name + std::to_string(getpid()),
                                      "--vdev=net_pcap0,rx_pcap=" + fifo_ + ",tx_pcap=/dev/null",
                                      "--",
                                      "--json",
                                      json_,
                                      "--stats-period",
                                      "0",
                                      "--burst",  // net_pcap waits for a whole burst
                                      "1",
                                      "--keys",
                                      "4096",
                                      "--dup-window",
                                      "256",
                                      "--max-streams",
                                      "4"};
        argv.insert(argv.end(), args.begin(), args.end());
        app_ = std::make_unique<BackgroundProcess>(argv);
        // net_pcap opens the FIFO while the EAL starts: until then there is no reader.
        for (int i = 0; i < 400 && fd_ < 0; ++i) {
            fd_ = open(fifo_.c_str(), O_WRONLY | O_NONBLOCK);
            if (fd_ < 0) usleep(50'000);
        }
        if (fd_ < 0) return;
        fcntl(fd_, F_SETFL, 0);  // blocking from now on
        const uint32_t header[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};
        write_all(header, sizeof header);
        flow_ = std::thread([this] { keep_flowing(); });
    }
    ~LiveKvagg() { close_input(); }
    bool started() const { return fd_ >= 0; }

    // One datagram of `tuples` (stream 0, the next sequence number); `sent` adds them.
    void send(const std::vector<kvagg::KvTuple>& tuples) {
        std::lock_guard lock(mutex_);
        write_frame(kvagg::make_kv_frame(kv_spec(0), 0, seq_++, tuples));
        for (const kvagg::KvTuple& t : tuples) sent_[t.key] += t.value;
    }
    const Sums& sent() const { return sent_; }

    // The end of the input (net_pcap then reads nothing), SIGINT, the exit.
    ProcessResult stop() {
        close_input();
        app_->signal(SIGINT);
        return app_->finish(60);
    }
    const std::string& json() const { return json_; }
    std::string output() const { return app_->output(); }

  private:
    void write_frame(const std::vector<uint8_t>& f) {
        const uint32_t rec[4] = {uint32_t(seq_), 0, uint32_t(f.size()), uint32_t(f.size())};
        write_all(rec, sizeof rec);
        write_all(f.data(), f.size());
    }
    // net_pcap's worker waits in its read of the FIFO while nothing comes, so it would take no
    // flush (the export's epochs) and libpcap would hold the last frame: a frame to UDP port 9
    // (not kvagg's: counted as not_kvagg) every 5 ms keeps it going.
    void keep_flowing() {
        const std::vector<uint8_t> filler = pkt::make_udp_frame(pkt::UdpFrameSpec{}, 1024);
        while (!stopping_.load()) {
            {
                std::lock_guard lock(mutex_);
                write_frame(filler);
            }
            usleep(5'000);
        }
    }
    void write_all(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        while (n > 0 && fd_ >= 0 && !broken_) {
            const ssize_t w = write(fd_, b, n);
            if (w <= 0) {
                broken_ = true;  // kvagg is gone: EPIPE (SIGPIPE ignored)
                return;
            }
            b += w;
            n -= size_t(w);
        }
    }
    void close_input() {
        stopping_.store(true);
        if (flow_.joinable() && flow_.get_id() != std::this_thread::get_id()) flow_.join();
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
    }

    std::string fifo_, json_;
    std::unique_ptr<BackgroundProcess> app_;
    int fd_ = -1;
    uint64_t seq_ = 0;
    std::mutex mutex_;  // one writer at a time into the FIFO
    std::atomic<bool> stopping_{false};
    bool broken_ = false;
    std::thread flow_;
    Sums sent_;
};

// Zero sums are not in Redis (or read 0): left out of both sides.
Sums nonzero(Sums s) {
    std::erase_if(s, [](const auto& kv) { return kv.second == 0; });
    return s;
}

// The first key where two sets of sums differ, for a failure's message.
std::string first_difference(const Sums& want, const Sums& got) {
    for (const auto& [k, v] : want)
        if (!got.count(k) || got.at(k) != v)
            return "key " + std::to_string(k) + ": want " + std::to_string(v) + ", got " +
                   (got.count(k) ? std::to_string(got.at(k)) : "none");
    for (const auto& [k, v] : got)
        if (!want.count(k))
            return "key " + std::to_string(k) + " not sent, got " + std::to_string(v);
    return "none";
}

class ExactExport : public testing::Test {
  protected:
    static void SetUpTestSuite() {
        if (!redis_installed()) return;
        signal(SIGPIPE, SIG_IGN);  // a FIFO whose kvagg ended: write() fails instead
        cluster_ = std::make_unique<SixNodeCluster>(
            std::vector<std::string>{"--cluster-node-timeout", "2000"});
    }
    static void TearDownTestSuite() { cluster_.reset(); }
    void SetUp() override {
        if (!redis_installed()) GTEST_SKIP() << "redis-server or redis-cli not installed";
        ASSERT_TRUE(cluster_->ready()) << "the six-node cluster did not come up";
    }
    static std::string seed() { return "redis://" + cluster_->node(0).address(); }
    static std::string cli(const std::string& args) { return cluster_->node(0).cli("-c " + args); }

    static inline std::unique_ptr<SixNodeCluster> cluster_;
};

// kvagg on a pcap of one datagram per epoch's tuples: each run one epoch (or more), the runs one
// after the other, so the sums move between epochs.
TEST_F(ExactExport, U64SumsExactAcrossTwoToThe63AndPastTwoToThe64) {
    const Sums before = cluster_->sums();
    const std::vector<std::vector<kvagg::KvTuple>> epochs{
        {{1193043, kTop + 1}, {1193044, ~uint64_t(0)}, {1193045, kTop - 3}, {1193046, kTop}},
        {{1193044, kTop + 1}, {1193045, 5}, {1193046, kTop + 9}},  // INT64_MIN; over 2^63; 9
        {{1193045, kTop}, {1193046, ~uint64_t(0)}},                // past 2^64: 2; 8
        {{1193045, kTop - 1}, {1193046, kTop}},                    // 2^63 + 1; 2^63 + 8
    };
    Sums want;
    for (size_t i = 0; i < epochs.size(); ++i) {
        const std::string in = scratch("epoch.pcap");
        pcapio::write_frames(in, {kvagg::make_kv_frame(kv_spec(0), 0, 0, epochs[i])});
        const ProcessResult r =
            run_process({kApp, "--pcap", in, "--export", seed(), "--json", scratch("e.json")},
                        {.timeout_s = 60});
        ASSERT_EQ(r.exit_status, 0) << r.out;
        for (const kvagg::KvTuple& t : epochs[i]) want[t.key] += t.value;
        const Sums now = cluster_->sums();
        for (const auto& [k, v] : want)
            EXPECT_EQ(now.at(k) - (before.count(k) ? before.at(k) : 0), v) << "key " << k;
    }
    if (before.count(1193043) == 0) {  // the values, as redis-cli prints them
        EXPECT_EQ(cli("HGET 'kvagg:{p3}:sums' 1193043"), "-9223372036854775807\n");
        EXPECT_EQ(cli("HGET 'kvagg:{p4}:sums' 1193044"), "-9223372036854775808\n");
        EXPECT_EQ(cli("HGET 'kvagg:{p5}:sums' 1193045"), "-9223372036854775807\n");
    }
}

// Key 3's field (partition 3) set to a string while every key 0-63 keeps being sent: the other
// keys exact within a few periods, key 3's deltas held in kvagg:{p3}:held; once the field is an
// integer again, key 3 exact too. One line, counted.
TEST_F(ExactExport, ABadFieldIsHeldApartWhileTheOthersFlow) {
    for (unsigned p = 0; p < 16; ++p)
        cli("DEL 'kvagg:{p" + std::to_string(p) + "}:sums' 'kvagg:{p" + std::to_string(p) +
            "}:held'");
    cli("HSET 'kvagg:{p3}:sums' 3 not-a-number");
    LiveKvagg kv("held", {"--export", seed(), "--export-ms", "200", "--export-timeout-ms", "500"});
    ASSERT_TRUE(kv.started()) << kv.output();
    std::mt19937_64 rng(46);
    const auto send_some = [&](int datagrams) {
        for (int d = 0; d < datagrams; ++d) {
            std::vector<kvagg::KvTuple> tuples;
            for (uint64_t k = 0; k < 64; k += 1 + rng() % 3)
                tuples.push_back({k, rng() % 4 == 0 ? kTop + rng() % 5 : rng() % 1000});
            kv.send(tuples);
            usleep(20'000);
        }
    };
    const auto others_exact = [&] {
        Sums want = kv.sent(), got = cluster_->sums();
        want.erase(3);
        return nonzero(got) == nonzero(want);
    };
    const auto held_exact = [&] {
        const std::string held = cli("HGET 'kvagg:{p3}:held' 3");
        return held != "\n" && uint64_t(std::stoll(held)) == kv.sent().at(3);
    };
    send_some(50);  // about 5 export periods
    EXPECT_TRUE(wait_until([&] { return others_exact() && held_exact(); }, 5))
        << first_difference(nonzero(kv.sent()), nonzero(cluster_->sums())) << kv.output();
    EXPECT_EQ(cli("HGET 'kvagg:{p3}:sums' 3"), "not-a-number\n");
    cli("HSET 'kvagg:{p3}:sums' 3 0");  // repaired
    send_some(50);
    EXPECT_TRUE(wait_until([&] { return nonzero(cluster_->sums()) == nonzero(kv.sent()); }, 5))
        << kv.output();
    EXPECT_EQ(cli("EXISTS 'kvagg:{p3}:held'"), "0\n");
    const ProcessResult r = kv.stop();
    EXPECT_EQ(r.exit_status, 0) << r.out;
    EXPECT_EQ(nonzero(cluster_->sums()), nonzero(kv.sent()));
    EXPECT_EQ(lines_with(r.out,
                         "field 3 of kvagg:{p3}:sums is not an integer: its delta is held "
                         "in kvagg:{p3}:held"),
              1)
        << r.out;
    EXPECT_EQ(lines_with(r.out, "the deltas held in kvagg:{p3}:held are applied"), 1) << r.out;
    const nlohmann::json j = read_json(kv.json())["export"];
    EXPECT_GE(j["held"].get<uint64_t>(), 1u);
    EXPECT_EQ(j["released"], 1);
    EXPECT_EQ(j["held_fields"], 0);
    EXPECT_EQ(j["errors"], 0);
    EXPECT_EQ(j["backlog"], 0);
}

// Redis stopped (SIGSTOP: connections accepted, nothing answered) while kvagg keeps taking sums,
// then SIGINT without --state: what Redis had before is exact, and every sum sent since is in the
// file the stop's one line names (the JSON's name + ".unexported"), exactly.
TEST_F(ExactExport, SigintWhileRedisIsStoppedWritesEverySumToTheFileItNames) {
    RedisNode node(RedisMode::one_node_cluster);  // its own: stopped, then killed
    ASSERT_TRUE(node.ready());
    LiveKvagg kv("stopped", {"--export", "redis://" + node.address(), "--export-ms", "200",
                             "--export-timeout-ms", "500"});
    ASSERT_TRUE(kv.started()) << kv.output();
    std::mt19937_64 rng(47);
    for (int d = 0; d < 20; ++d) kv.send({{rng() % 40, rng()}, {rng() % 40, kTop + 1}});
    EXPECT_TRUE(wait_until([&] { return nonzero(sums_in_redis(node)) == nonzero(kv.sent()); }, 5))
        << first_difference(nonzero(kv.sent()), nonzero(sums_in_redis(node))) << kv.output();
    const Sums in_redis = kv.sent();
    const int pid = node.pid();
    kill(pid, SIGSTOP);
    for (int d = 0; d < 30; ++d) {
        kv.send({{rng() % 40, rng()}, {1000 + rng() % 40, ~uint64_t(0)}});
        usleep(30'000);
    }
    const ProcessResult r = kv.stop();
    kill(pid, SIGKILL);  // what it would take when woken is not what this test reads
    EXPECT_EQ(r.exit_status, 0) << r.out;
    Sums since = kv.sent();
    for (const auto& [k, v] : in_redis) since[k] -= v;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m,
                                  std::regex("kvagg: --export: epochs [0-9]+-[0-9]+ of instance "
                                             "[0-9a-f]{16} not acknowledged by Redis at the stop, "
                                             "no --state: the ([0-9]+) sums Redis did not take "
                                             "are in (.+) \\(key,value lines\\)\n")))
        << r.out;
    EXPECT_EQ(m[2].str(), kv.json() + ".unexported");
    Sums in_file;
    std::ifstream f(m[2].str());
    for (std::string line; std::getline(f, line);)
        in_file[std::stoull(line.substr(0, line.find(',')))] =
            std::stoull(line.substr(line.find(',') + 1));
    EXPECT_EQ(nonzero(in_file), nonzero(since)) << r.out;
    EXPECT_EQ(std::to_string(in_file.size()), m[1].str());
    uint64_t total = 0;
    for (const auto& [k, v] : since) total += v;
    EXPECT_EQ(read_json(kv.json())["export"]["unexported_sum"], total);
}

TEST_F(ExactExport, ExportWithoutRedisSchemeExitsTwoWithOneLine) {
    const std::string in = scratch("empty.pcap");
    pcapio::write_frames(in, {});
    for (const std::string& bad :
         {cluster_->node(0).address(), "http://" + cluster_->node(0).address()}) {
        const ProcessResult r =
            run_process({kApp, "--pcap", in, "--export", bad}, {.timeout_s = 30});
        EXPECT_EQ(r.exit_status, 2) << r.out;
        EXPECT_EQ(lines_with(r.out, "--export " + bad +
                                        ": not redis://HOST:PORT[,HOST:PORT...] (the scheme "
                                        "redis:// first)"),
                  1)
            << r.out;
    }
}

}  // namespace
