#include "gen/options.hpp"

#include <optional>
#include <stdexcept>

#include "cli/command_line.hpp"
#include "pkt/address.hpp"
#include "pkt/headers.hpp"

namespace linerate::gen {

pkt::MacAddr parse_mac(const std::string& text) {
    if (std::optional<pkt::MacAddr> mac = pkt::parse_mac(text)) return *mac;
    throw std::invalid_argument("bad MAC address '" + text + "' (want xx:xx:xx:xx:xx:xx)");
}

uint32_t parse_ip(const std::string& text) {
    if (std::optional<uint32_t> ip = pkt::parse_ipv4(text)) return *ip;
    throw std::invalid_argument("bad IPv4 address '" + text + "'");
}

namespace {

const std::string kTrafficGroup = "Traffic", kKvGroup = "kvagg traffic",
                  kNfvGroup = "nfv-mix traffic", kSendGroup = "Sending";

// What every kind of traffic has: its kind, size, flows, addresses and seed.
void add_traffic_options(CLI::App& app, GenOptions& o) {
    TrafficConfig& t = o.traffic;
    app.add_option("--kind", o.kind, "udp | nfv-mix | kvagg | clocksync")->capture_default_str();
    app.add_option("--size", t.frame_size,
                   "udp, nfv-mix: frame size on the wire with the 4-byte FCS, 64..9000 (the "
                   "frame built is 4 bytes shorter)")
        ->capture_default_str();
    app.add_option("--flows", t.flows,
                   "udp, nfv-mix, clocksync: flows, i.e. UDP source ports --src-port ..")
        ->capture_default_str();
    app.add_option("--src-port", t.src_port, "UDP source port of flow (kvagg: stream) 0")
        ->capture_default_str();
    app.add_option("--dst-port", t.dst_port,
                   "UDP destination port (default: udp/nfv-mix 9, kvagg 9000, clocksync 9001)");
    app.add_option("--src-mac", o.src_mac, "Source MAC (default 02:00:00:00:00:01)");
    app.add_option("--dst-mac", o.dst_mac, "Destination MAC (default 02:00:00:00:00:02)");
    app.add_option("--src-ip", o.src_ip, "Source IPv4 address (default 192.168.0.1)");
    app.add_option("--dst-ip", o.dst_ip, "Destination IPv4 address (default 192.168.0.2)");
    app.add_option("--seed", t.seed, "Seed of the traffic model: same seed, same frames")
        ->capture_default_str();
}

// nfv-mix: the shares of bad frames, in all and per class.
void add_nfv_options(CLI::App& app, GenOptions& o) {
    app.add_option("--bad,--bad-share", o.bad_all,
                   "Share of bad frames, spread evenly over the 7 bad classes")
        ->check(linerate::cli::finite_range(0.0, 1.0));
    for (size_t i = 0; i < kBadClassCount; ++i)
        app.add_option(std::string("--bad-") + kBadClassOptions[i], o.bad[i],
                       std::string("Share of '") + kBadClassVerdicts[i] +
                           "' frames (overrides --bad for this class)")
            ->check(linerate::cli::finite_range(0.0, 1.0));
}

// kvagg: tuples, keys, their distribution and streams, and the sums sent.
void add_kvagg_options(CLI::App& app, GenOptions& o) {
    TrafficConfig& t = o.traffic;
    app.add_option("--tuples", t.tuples, "Key/value tuples per frame")->capture_default_str();
    app.add_option("--keys", t.keys, "Distinct keys: 0 .. N-1")->capture_default_str();
    app.add_option("--dist", o.dist, "Key distribution: uniform | zipf:S (key 0 hottest)")
        ->capture_default_str();
    app.add_option("--streams", t.streams, "Streams (own sequence numbers and source port each)")
        ->capture_default_str();
    app.add_option("--dup-share", t.dup_share, "Share of frames repeating an earlier frame")
        ->check(linerate::cli::finite_range(0.0, 1.0));
    app.add_option("--malformed-share", t.malformed_share,
                   "Share of frames kvagg must refuse (bad magic/version/op, tuple count too big)")
        ->check(linerate::cli::finite_range(0.0, 1.0));
    app.add_option("--value-min", t.value_min, "Smallest tuple value")->capture_default_str();
    app.add_option("--value-max", t.value_max, "Largest tuple value")->capture_default_str();
    app.add_option("--expect", o.expect_path,
                   "Write the per-key sums of the tuples sent to FILE (lines key,value sorted by "
                   "key, as kvagg --dump)");
}

// How much, how fast and where: count, rate, catch-up, drain, or a pcap file instead.
void add_send_options(CLI::App& app, GenOptions& o) {
    app.add_option("--count", o.count, "Frames to send (all workers), 0 = until --duration");
    auto* pps = app.add_option("--rate-pps", o.rate_pps, "Frames per second (default full rate)")
                    ->check(linerate::cli::finite_range(0.0, 1e10));
    app.add_option("--rate-gbps", o.rate_gbps,
                   "Gb/s counting 24 bytes of wire overhead per frame (default full rate)")
        ->check(linerate::cli::finite_range(0.0, 1e4))
        ->excludes(pps);
    cli::add_bounded(app, "--catch-up", o.catch_up_s, 0.0, 10.0,
                     "Paced: after a stall (preempted, ring full) send at most this many seconds "
                     "of missed traffic at once (at least a burst)");
    cli::add_bounded(app, "--drain", o.drain_s, 0.0, 60.0,
                     "Seconds to keep receiving after the last frame went out, for the returns");
    app.add_option("--write-pcap", o.write_pcap,
                   "Write --count frames to FILE instead of sending (no EAL, no ports)");
}

}  // namespace

void add_gen_options(CLI::App& app, GenOptions& o) {
    cli::add_group(app, kTrafficGroup, [&](CLI::App& a) { add_traffic_options(a, o); });
    cli::add_group(app, kNfvGroup, [&](CLI::App& a) { add_nfv_options(a, o); });
    cli::add_group(app, kKvGroup, [&](CLI::App& a) { add_kvagg_options(a, o); });
    cli::add_group(app, kSendGroup, [&](CLI::App& a) { add_send_options(a, o); });
}

void finish_gen_options(const CLI::App& app, GenOptions& o) {
    TrafficConfig& t = o.traffic;
    t.kind = parse_kind(o.kind);
    t.dist = parse_dist(o.dist);
    if (!o.src_mac.empty()) t.src_mac = parse_mac(o.src_mac);
    if (!o.dst_mac.empty()) t.dst_mac = parse_mac(o.dst_mac);
    if (!o.src_ip.empty()) t.src_ip = parse_ip(o.src_ip);
    if (!o.dst_ip.empty()) t.dst_ip = parse_ip(o.dst_ip);
    for (size_t i = 0; i < kBadClassCount; ++i)
        t.bad[i] = app.count(std::string("--bad-") + kBadClassOptions[i])
                       ? o.bad[i]
                       : o.bad_all / kBadClassCount;
    t.track_expected = !o.expect_path.empty();

    auto only_for = [&](const char* opt, bool applies, const char* kinds) {
        if (app.count(opt) && !applies)
            throw std::invalid_argument(std::string(opt) + " applies to --kind " + kinds + " only");
    };
    const bool kv = t.kind == Kind::kvagg, nfvmix = t.kind == Kind::nfv_mix;
    const bool sized = t.kind == Kind::udp || nfvmix;
    only_for("--size", sized, "udp and nfv-mix");
    only_for("--flows", !kv, "udp, nfv-mix and clocksync");
    only_for("--bad", nfvmix, "nfv-mix");
    for (const char* c : kBadClassOptions)
        only_for(("--bad-" + std::string(c)).c_str(), nfvmix, "nfv-mix");
    for (const char* opt : {"--tuples", "--keys", "--dist", "--streams", "--dup-share",
                            "--malformed-share", "--value-min", "--value-max", "--expect"})
        only_for(opt, kv, "kvagg");
    if (!o.write_pcap.empty() && o.count == 0)
        throw std::invalid_argument("--write-pcap needs --count N");
    t.validate();
}

double target_pps(const GenOptions& o) {
    if (o.rate_pps > 0) return o.rate_pps;
    if (o.rate_gbps > 0)
        return o.rate_gbps * 1e9 / 8 / double(o.traffic.frame_len() + pkt::kWireOverhead);
    return 0;
}

}  // namespace linerate::gen
