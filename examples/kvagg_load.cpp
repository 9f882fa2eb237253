// kvagg_load: one C++ client of kvagg's service ops (include/linerate/kvagg_client.hpp) sending
// a reproducible stream of tuples, for the tests and bench/run kvagg-service.
//
//   kvagg_load --host 10.0.0.1 --tuples 1000000 --keys 10000 --seed 1 --drop-share 0.05
//              --sums-out sent.csv --json load.json
//
// Sends the tuples (key = hash of a counter mod --keys, value = a counter), runs status() until
// kvagg has every datagram, writes what it sent per key (`key,value` lines) and a JSON object
// with tuples/s and counters. --reads N then times N read() calls of one key (p50/p99, µs).
// --durable waits until kvagg's --state holds every datagram instead (wait_durable()), riding out
// kvagg restarts meanwhile; --pace N sleeps 1 ms after every N tuples and --until FILE stops
// sending once FILE exists (a sender that keeps going while a test does things to kvagg).
// --sample-held-ms MS samples, every MS while sending, how many datagrams the client holds for a
// resend (held(): unconfirmed, or received but not yet durable), reported as mean and max.
// --endpoints HOST[:PORT],... instead of --host sends through the sharded client (each key to its
// owner instance, docs/scale-out.md); --endpoints-file FILE (one line, the same list) is read
// again every 1000 tuples, and the instances it adds or drops are added or removed at once.
#include <fmt/core.h>
#include <fmt/ostream.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "linerate/kvagg_client.hpp"

namespace {

uint64_t mix(uint64_t x) {  // splitmix64: keys spread over the u64 range
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

// What to send and how, from the command line.
struct Load {
    linerate::kvclient::Options o;
    uint64_t tuples = 100000, keys = 1000, seed = 1, reads = 0, pace = 0;
    double read_interval_ms = 0, sample_held_ms = 0;
    unsigned timeout_ms = 500;
    std::string sums_out, json_out, until;
    bool durable = false;
    std::string endpoints, endpoints_file;  // the sharded client (instead of --host)
};

void add_options(CLI::App& cli, Load& l) {
    cli.add_option("--host", l.o.host, "kvagg's IPv4 address");
    cli.add_option("--endpoints", l.endpoints,
                   "instead of --host: kvagg instances HOST[:PORT],... for the sharded client");
    cli.add_option("--endpoints-file", l.endpoints_file,
                   "with the sharded client: the endpoints, one line, followed while sending");
    cli.add_option("--port", l.o.port, "kvagg's UDP port");
    cli.add_option("--key", l.o.key_file,
                   "kvagg's --key file: every datagram MAC'd, responses checked");
    cli.add_option("--tuples", l.tuples, "tuples to send");
    cli.add_option("--keys", l.keys, "distinct keys")->check(CLI::PositiveNumber);
    cli.add_option("--seed", l.seed, "seed of keys, stream id and simulated loss");
    cli.add_option("--drop-share", l.o.drop_share, "share of data datagrams dropped before sending")
        ->check(CLI::Range(0.0, 0.9));
    cli.add_option("--max-tuples", l.o.max_tuples, "tuples per datagram (0: fill the MTU)");
    cli.add_option("--timeout-ms", l.timeout_ms, "per request attempt (6 attempts)");
    cli.add_option("--reads", l.reads, "then time this many read() calls of one key");
    cli.add_option("--read-interval-ms", l.read_interval_ms, "pause between timed reads");
    cli.add_option("--sums-out", l.sums_out, "write the sums sent, key,value lines");
    cli.add_option("--json", l.json_out, "write counters and rates as JSON");
    cli.add_flag(
        "--durable", l.durable,
        "confirm with wait_durable(): every datagram in kvagg's --state, through restarts");
    cli.add_option("--status-every", l.o.status_every,
                   "unconfirmed datagrams before add() runs status() itself");
    cli.add_option("--until", l.until, "stop sending (before --tuples) once this file exists");
    cli.add_option("--pace", l.pace, "sleep 1 ms after every this many tuples (0: never)");
    cli.add_option("--sample-held-ms", l.sample_held_ms,
                   "while sending, sample the datagrams held for a resend this often (0: never)");
}

// --sample-held-ms: the client's held() and unconfirmed() at regular times while it sends.
class HeldSamples {
  public:
    explicit HeldSamples(double every_ms)
        : every_(std::chrono::duration<double, std::milli>(every_ms)), on_(every_ms > 0) {}
    // Called every tuple; reads the clock every 64.
    template <class AnyClient>
    void maybe(const AnyClient& c, uint64_t i) {
        if (!on_ || i % 64 != 0) return;
        const auto now = std::chrono::steady_clock::now();
        if (now < next_) return;
        next_ = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(every_);
        held_.push_back(c.held());
        unconfirmed_.push_back(c.unconfirmed());
    }
    void to_json(nlohmann::json& j) const {
        if (!on_) return;
        auto mean = [](const std::vector<uint64_t>& v) {
            double s = 0;
            for (uint64_t x : v) s += double(x);
            return v.empty() ? 0.0 : s / double(v.size());
        };
        auto max = [](const std::vector<uint64_t>& v) {
            return v.empty() ? uint64_t(0) : *std::max_element(v.begin(), v.end());
        };
        j["held_samples"] = held_.size();
        j["held_mean"] = mean(held_);
        j["held_max"] = max(held_);
        j["unconfirmed_mean"] = mean(unconfirmed_);
        j["unconfirmed_max"] = max(unconfirmed_);
    }

  private:
    std::chrono::duration<double, std::milli> every_;
    bool on_;
    std::chrono::steady_clock::time_point next_{};
    std::vector<uint64_t> held_, unconfirmed_;
};

// Sends the tuples (fewer when --until's file appears: l.tuples is set to what was sent); the
// sums sent per key. every_1000(c) runs before every 1000th tuple.
template <class AnyClient, class Every1000>
std::map<uint64_t, uint64_t> send_tuples(AnyClient& c, Load& l, HeldSamples& held,
                                         Every1000 every_1000) {
    std::map<uint64_t, uint64_t> sent;
    for (uint64_t i = 0; i < l.tuples; ++i) {
        held.maybe(c, i);
        if (i % 1000 == 0) {
            if (!l.until.empty() && std::ifstream(l.until)) {
                l.tuples = i;
                break;
            }
            every_1000(c);
        }
        const uint64_t key = mix(l.seed << 40 ^ (mix(i + l.seed) % l.keys));
        const uint64_t value = i + 1;
        try {
            c.add(key, value);  // may run status(): a kvagg down meanwhile times it out
        } catch (const linerate::kvclient::Timeout&) {
            if (!l.durable) throw;  // the datagram is kept and sent again later
        }
        sent[key] += value;
        if (l.pace && (i + 1) % l.pace == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return sent;
}

// --reads: the latencies of read() calls of one key, microseconds.
std::vector<double> timed_reads(linerate::kvclient::Client& c, const Load& l, uint64_t key) {
    std::vector<double> lat;
    for (uint64_t r = 0; r < l.reads; ++r) {
        const auto a = std::chrono::steady_clock::now();
        const auto got = c.read(std::span(&key, 1));
        lat.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a)
                .count());
        if (got.size() != 1) throw linerate::kvclient::Error("read: wrong key count");
        if (l.read_interval_ms > 0)
            std::this_thread::sleep_for(
                std::chrono::duration<double, std::milli>(l.read_interval_ms));
    }
    return lat;
}

void write_sums(const std::string& path, const std::map<uint64_t, uint64_t>& sent) {
    std::ofstream f(path);
    for (const auto& [k, v] : sent) fmt::print(f, "{},{}\n", k, v);
    if (!f) throw linerate::kvclient::Error("cannot write " + path);
}

std::vector<std::string> split_endpoints(const std::string& list) {
    std::vector<std::string> out;
    std::stringstream in(list);
    for (std::string e; std::getline(in, e, ',');)
        if (!e.empty()) out.push_back(e);
    return out;
}

// Why the --endpoints list is unusable ("" when it is fine, or not given).
std::string bad_endpoints(const std::string& list) {
    if (list.empty()) return "";
    const std::vector<std::string> all = split_endpoints(list);
    if (all.empty()) return "no endpoint in '" + list + "'";
    try {
        for (const std::string& e : all) linerate::kvclient::parse_endpoint(e);
    } catch (const linerate::kvclient::Error& e) {
        return e.what();
    }
    return "";
}

// --endpoints-file: the instances the file lists and the client does not are added, those the
// client has and the file no longer lists are removed (their sums move to the others). A removal
// the instance does not answer is tried again next time. Returns the removals done.
unsigned follow_endpoints(linerate::kvclient::ShardedClient& c, const std::string& path) {
    std::ifstream f(path);
    std::string line;
    if (!std::getline(f, line)) return 0;  // not written yet, or being written: next time
    std::set<std::string> want;
    for (const std::string& e : split_endpoints(line))
        want.insert(linerate::kvclient::parse_endpoint(e).name());
    if (want.empty()) return 0;
    const std::vector<std::string> have = c.endpoints();
    for (const std::string& e : want)
        if (std::find(have.begin(), have.end(), e) == have.end()) c.add_endpoint(e);
    unsigned removed = 0;
    for (const std::string& e : have) {
        if (want.count(e)) continue;
        try {
            c.remove_endpoint(e);
            ++removed;
        } catch (const linerate::kvclient::Timeout&) {
        }
    }
    return removed;
}

// The run's JSON (with the held-share samples) on stdout and in --json, its sums in --sums-out.
void report(const Load& l, const HeldSamples& held, const std::map<uint64_t, uint64_t>& sent,
            nlohmann::json& j) {
    held.to_json(j);
    fmt::print("{}\n", j.dump());
    if (!l.json_out.empty()) std::ofstream(l.json_out) << j.dump(2) << '\n';
    if (!l.sums_out.empty()) write_sums(l.sums_out, sent);
}

// --endpoints: the sharded client sends, confirms (durable with --durable) and reports.
void run_sharded(Load& l) {
    namespace kv = linerate::kvclient;
    kv::ShardOptions so;
    so.status_every = l.o.status_every;
    kv::ShardedClient c(split_endpoints(l.endpoints), l.o, so);
    HeldSamples held(l.sample_held_ms);
    unsigned removed = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const std::map<uint64_t, uint64_t> sent = send_tuples(c, l, held, [&](kv::ShardedClient& s) {
        if (!l.endpoints_file.empty()) removed += follow_endpoints(s, l.endpoints_file);
    });
    const auto t1 = std::chrono::steady_clock::now();
    if (l.durable)
        c.wait_durable();
    else
        c.status();
    const double send_s = std::chrono::duration<double>(t1 - t0).count();
    nlohmann::json j = {{"endpoints", c.endpoints()},
                        {"tuples", l.tuples},
                        {"keys_sent", sent.size()},
                        {"datagrams", c.sent_datagrams()},
                        {"retransmitted", c.retransmitted()},
                        {"restarts_seen", c.restarts_seen()},
                        {"refused", c.refused()},
                        {"outages", c.outages()},
                        {"removed", removed},
                        {"send_s", send_s},
                        {"tuples_per_s", send_s > 0 ? double(l.tuples) / send_s : 0}};
    report(l, held, sent, j);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli("kvagg_load: send tuples to kvagg with the C++ client, confirm, report",
                 "kvagg_load");
    Load l;
    add_options(cli, l);
    CLI11_PARSE(cli, argc, argv);
    l.o.seed = l.seed;
    l.o.timeout = std::chrono::milliseconds(l.timeout_ms);
    if (l.o.host.empty() == l.endpoints.empty()) {
        fmt::print(stderr, "kvagg_load: give --host or --endpoints (one of them)\n");
        return 2;
    }
    if (std::string bad = bad_endpoints(l.endpoints); !bad.empty()) {
        fmt::print(stderr, "kvagg_load: --endpoints: {}\n", bad);
        return 2;
    }
    try {
        if (!l.endpoints.empty()) {
            run_sharded(l);
            return 0;
        }
        linerate::kvclient::Client c(l.o);
        const auto t0 = std::chrono::steady_clock::now();
        HeldSamples held(l.sample_held_ms);
        const std::map<uint64_t, uint64_t> sent =
            send_tuples(c, l, held, [](linerate::kvclient::Client&) {});
        const auto t1 = std::chrono::steady_clock::now();
        const linerate::kvclient::StreamStatus st = l.durable ? c.wait_durable() : c.status();
        const auto t2 = std::chrono::steady_clock::now();
        const std::vector<double> lat = l.reads && !sent.empty()
                                            ? timed_reads(c, l, sent.begin()->first)
                                            : std::vector<double>();
        const double send_s = std::chrono::duration<double>(t1 - t0).count();
        nlohmann::json j = {{"stream", c.stream()},
                            {"tuples", l.tuples},
                            {"keys_sent", sent.size()},
                            {"tuples_per_datagram", c.max_tuples()},
                            {"datagrams", c.sent_datagrams()},
                            {"dropped_datagrams", c.dropped_datagrams()},
                            {"retransmitted", st.retransmitted},
                            {"status_rounds", st.rounds},
                            {"duplicates_seen_by_kvagg", st.duplicates},
                            {"restarts_seen", c.restarts_seen()},
                            {"refused", c.refused()},
                            {"send_s", send_s},
                            {"confirm_s", std::chrono::duration<double>(t2 - t1).count()},
                            {"tuples_per_s", send_s > 0 ? double(l.tuples) / send_s : 0},
                            {"reads", l.reads},
                            {"read_p50_us", percentile(lat, 0.5)},
                            {"read_p99_us", percentile(lat, 0.99)}};
        report(l, held, sent, j);
    } catch (const linerate::kvclient::Error& e) {
        fmt::print(stderr, "kvagg_load: {}\n", e.what());
        return 1;
    }
    return 0;
}
