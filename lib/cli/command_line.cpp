#include "cli/command_line.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>

#include "mem/region_spec.hpp"
#include "pkt/address.hpp"

namespace linerate::cli {

namespace {

// EAL options (DPDK 22.11 `--help`), long ones matched with or without `=value`.
constexpr std::array kEalShort = {"-l", "-c", "-n", "-m", "-a", "-b", "-d", "-v", "-r"};
constexpr std::array kEalLong = {
    "--lcores",
    "--main-lcore",
    "--service-lcores",
    "--service-coremask",
    "--vdev",
    "--allow",
    "--block",
    "--no-huge",
    "--no-pci",
    "--in-memory",
    "--file-prefix",
    "--socket-mem",
    "--socket-limit",
    "--huge-dir",
    "--huge-unlink",
    "--proc-type",
    "--log-level",
    "--iova-mode",
    "--no-shconf",
    "--no-telemetry",
    "--telemetry",
    "--legacy-mem",
    "--single-file-segments",
    "--base-virtaddr",
    "--syslog",
    "--match-allocations",
    "--mbuf-pool-ops-name",
    "--no-hpet",
    "--vfio-intr",
    "--vfio-vf-token",
    "--create-uio-dev",
    "--force-max-simd-bitwidth",
    "--trace",
    "--trace-dir",
    "--trace-bufsz",
    "--trace-mode",
    "--master-lcore",
    "--pci-whitelist",
    "--pci-blacklist",
};

bool is_eal_option(std::string_view arg) {
    for (std::string_view s : kEalShort)
        if (arg == s || (arg.size() > 2 && arg.substr(0, 2) == s && arg[1] != '-')) return true;
    for (std::string_view l : kEalLong)
        if (arg == l ||
            (arg.size() > l.size() && arg.substr(0, l.size()) == l && arg[l.size()] == '='))
            return true;
    return false;
}

}  // namespace

SplitArgs split_args(int argc, const char* const* argv) {
    SplitArgs out;
    out.program = argc > 0 ? argv[0] : "linerate";
    int sep = -1;
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) == "--") {
            sep = i;
            break;
        }
    if (sep < 0) {
        for (int i = 1; i < argc; ++i) out.app.emplace_back(argv[i]);
        return out;
    }
    out.had_separator = true;
    for (int i = 1; i < sep; ++i) out.eal.emplace_back(argv[i]);
    for (int i = sep + 1; i < argc; ++i) out.app.emplace_back(argv[i]);
    return out;
}

std::string find_eal_option(const std::vector<std::string>& app_args,
                            const std::function<bool(std::string_view)>& app_declares) {
    for (const auto& a : app_args)
        if (is_eal_option(a) && !(app_declares && app_declares(a.substr(0, a.find('='))))) return a;
    return {};
}

namespace {

// Bursts, reports and run length, memory regions.
void add_run_options(CLI::App& app, CommonOptions& o) {
    app.footer(
        "Signals: SIGINT/SIGTERM (also during start-up) stop the app, which prints its summary, "
        "writes the JSON and exits 0; a second one only hurries it, a third exits at once "
        "without JSON. SIGPIPE is ignored (a vanished peer is a link down).");
    add_bounded(app, "--burst", o.burst, 1, 512, "Packets per RX/TX burst");
    add_bounded(app, "--stats-period", o.stats_period_s, 0.0, 3600.0,
                "Seconds between stats lines, 0 = off");
    add_bounded(app, "--duration", o.duration_s, 0.0, 1e9,
                "Stop after this many seconds, 0 = until a signal");
    app.add_option("--json", o.json_path, "Write the final figures as one JSON object to FILE");
    app.add_option("--netbuf", o.netbuf,
                   "Memory region of the packet buffer pool: " + mem::region_syntax() +
                       " or an alias (default: the port's NUMA node)");
    app.add_option("--region", o.region_defs, "Define a region alias NAME=SPEC (repeatable)");
    app.add_option("--regions", o.regions_file, "File of region aliases, lines `NAME = SPEC`")
        ->check(CLI::ExistingFile);
}

// Which ports: pcap test mode, AF_XDP queues, port lists.
void add_port_choice_options(CLI::App& app, CommonOptions& o) {
    app.add_option("--pcap", o.pcap,
                   "Test mode: read frames from IN, write what is sent to OUT, stop at end of IN "
                   "(adds a net_pcap vdev, and --no-huge --no-pci when no EAL args are given)");
    app.add_option("--af-xdp", o.af_xdp,
                   "Use queues of a kernel interface through AF_XDP: IFACE[,queues=N], "
                   "repeatable. Adds one net_af_xdp vdev per queue "
                   "(iface=IFACE,start_queue=i,queue_count=1), one queue per worker unless "
                   "queues=N, queue i polled by worker i; with no EAL args also --no-huge "
                   "--no-pci and one lcore per queue. Attaches linerate's XDP steering "
                   "program (steer.bpf.o): the app gets only what it serves (--xdp-steer), the "
                   "host keeps ARP, ping and ssh; exit 1 when the program is missing or the "
                   "interface has another XDP program")
        ->type_name("IFACE[,queues=N]")
        ->excludes("--pcap");
    auto* ports =
        app.add_option("--ports", o.ports, "Comma-separated port ids to use (default all)");
    app.add_option("-p,--portmask", o.port_mask, "Hex mask of ports to use")->excludes(ports);
    app.add_flag("--promisc", o.promiscuous, "Put ports in promiscuous mode");
}

// Queues, pool and frames.
void add_queue_and_pool_options(CLI::App& app, CommonOptions& o) {
    add_bounded(app, "--rx-desc", o.rx_desc, 16, 32768, "RX descriptors per queue");
    add_bounded(app, "--tx-desc", o.tx_desc, 16, 32768, "TX descriptors per queue");
    add_bounded(app, "--tx-retries", o.tx_retries, 0, 1000000,
                "TX attempts for a burst's leftovers before they are dropped and counted");
    app.add_option("--mbufs", o.mbufs, "Mbufs in the pool (default: sized from the setup)")
        ->check(CLI::Range(0, 1 << 26));
    add_bounded(app, "--mbuf-cache", o.mbuf_cache, 0, 512, "Per-lcore mempool cache");
    app.add_option("--mtu", o.mtu,
                   "Port MTU in bytes (IP packet size; frames are 18 bytes more, 26 with two VLAN "
                   "tags). The pool's mbufs grow to hold a whole frame unless --mbuf-size says "
                   "otherwise; a port that cannot take the MTU is an error")
        ->check(CLI::Range(68, 65000));
    app.add_option("--mbuf-size", o.mbuf_size,
                   "Data room of each mbuf, headroom included (default: 2176, or one frame of "
                   "--mtu). Smaller than a frame: frames arrive as mbuf chains (RX scatter), "
                   "which the port must offer")
        ->check(CLI::Range(1024, 65535));
}

// Links, and sharing a port with the host's kernel.
void add_sharing_options(CLI::App& app, CommonOptions& o) {
    add_bounded(app, "--link-wait", o.link_wait_s, 0.0, 60.0,
                "Seconds to wait for link up at start");
    app.add_option("--xdp-steer", o.xdp_steer,
                   "AF_XDP ports: what linerate's XDP steering program hands to the app, the "
                   "rest going to the kernel: app (what the app serves, the default), ipv4, "
                   "all (every frame) or udp:PORT. --af-xdp attaches the program; a "
                   "hand-written vdev needs xdp_prog=PATH, without it DPDK's default program "
                   "hands the app every frame (a warning says so)");
    app.add_flag("--isolate", o.isolate,
                 "Flow isolated mode: only the app's own traffic reaches it (an rte_flow rule), "
                 "the rest stays with the kernel; exit 2 if the port cannot (mlx5 can)");
    app.add_option("--exception-path", o.exception_path,
                   "tap[:NAME]: frames the app does not serve go to the kernel through a TAP "
                   "interface (default name lr-APP), and what the kernel sends there goes out the "
                   "first port; default: they are dropped and counted");
    app.add_option("--metrics", o.metrics,
                   "HOST:PORT (IPv4): serve OpenMetrics/Prometheus text at "
                   "http://HOST:PORT/metrics while the app runs (docs/metrics.md); port 0 takes "
                   "a free one (printed at start)");
}

}  // namespace

void add_common_options(CLI::App& app, CommonOptions& o) {
    add_run_options(app, o);
    add_port_choice_options(app, o);
    add_queue_and_pool_options(app, o);
    add_sharing_options(app, o);
}

void CommonOptions::add(CLI::App& app) {
    add_common_options(app, *this);
}

void CommonOptions::check() const {
    check_common_options(*this);
}

void add_checksum_flags(CLI::App& app, bool& verify, bool& strict, const std::string& what) {
    CLI::Option* no_verify =
        app.add_flag("--no-verify-checksums{false}", verify,
                     what + " without verifying their IPv4 header and UDP checksums");
    app.add_flag("--strict-checksums", strict,
                 "Count a UDP checksum that holds only the pseudo-header sum (left by the "
                 "sender to TX checksum offload, e.g. a datagram from a local socket over a "
                 "veth) as bad_udp_checksum; by default such datagrams are accepted and "
                 "counted as udp_checksum_offloaded")
        ->excludes(no_verify);
}

CLI::Validator finite_range(double min, double max) {
    return CLI::Validator(
        [min, max](std::string& text) -> std::string {
            double v = 0;
            if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a number";
            if (!std::isfinite(v) || v < min || v > max)
                return fmt::format("must be a finite number in [{} - {}], not {}", min, max, text);
            return {};
        },
        fmt::format("FLOAT in [{} - {}]", min, max));
}

CLI::Validator ipv4_address() {
    return CLI::Validator(
        [](std::string& text) {
            return pkt::parse_ipv4(text) ? std::string() : "bad IPv4 address '" + text + "'";
        },
        "A.B.C.D");
}

CLI::Option* add_key_option(CLI::App& app, std::optional<auth::Key>& key, const std::string& help) {
    auto load = [&key](const std::string& path) {
        try {
            key = auth::load_key_file(path);
        } catch (const auth::KeyFileError& e) {
            throw CLI::ValidationError("--key", e.what());
        }
    };
    return app.add_option_function<std::string>("--key", load, help)->type_name("FILE");
}

CLI::Option* add_allow_option(CLI::App& app, pkt::Ipv4AllowList& allow, const std::string& help) {
    auto add = [&allow](const std::vector<std::string>& nets) {
        for (const std::string& text : nets) {
            const std::optional<pkt::Ipv4Net> net = pkt::parse_ipv4_net(text);
            if (!net)
                throw CLI::ValidationError("--allow", "bad IPv4 network '" + text +
                                                          "' (a.b.c.d/len, host bits 0, or "
                                                          "an address)");
            allow.nets.push_back(*net);
        }
    };
    return app.add_option_function<std::vector<std::string>>("--allow", add, help)
        ->delimiter(',')
        ->type_name("CIDR[,CIDR...]");
}

void check_writable(const std::string& path, const std::string& option) {
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode))
            throw std::invalid_argument(option + " " + path + ": is a directory");
        if (access(path.c_str(), W_OK) != 0)
            throw std::invalid_argument(option + " " + path + ": " + std::strerror(errno));
        return;
    }
    // Missing: create it to see, and take it away again (the run writes it at the end).
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) throw std::invalid_argument(option + " " + path + ": " + std::strerror(errno));
    close(fd);
    unlink(path.c_str());
}

void check_common_options(const CommonOptions& o) {
    if (!o.json_path.empty()) check_writable(o.json_path, "--json");
    // DPDK refuses a pool smaller than 1.5 x its per-lcore cache (the cache's flush threshold)
    // with a bare EINVAL.
    if (o.mbufs != 0 && uint64_t(o.mbufs) * 2 < uint64_t(o.mbuf_cache) * 3)
        throw std::invalid_argument(fmt::format(
            "--mbufs {} is too small for a per-lcore cache of {} mbufs (--mbuf-cache): the pool "
            "must hold 1.5 x the cache, so give --mbufs {} or more, or --mbuf-cache {} or less",
            o.mbufs, o.mbuf_cache, (uint64_t(o.mbuf_cache) * 3 + 1) / 2, o.mbufs * 2 / 3));
}

namespace {
ErrorLineListener g_error_line_listener = nullptr;  // constant-initialized: set before main
}  // namespace

void set_error_line_listener(ErrorLineListener listener) {
    g_error_line_listener = listener;
}

void print_usage_error(const std::string& program, const std::string& message) {
    const std::string line = fmt::format("{}: {} (see --help)", program, message);
    fmt::print(stderr, "{}\n", line);
    if (g_error_line_listener) g_error_line_listener(line);
}

void usage_error(const std::string& program, const std::string& message) {
    print_usage_error(program, message);
    std::exit(2);
}

SplitArgs parse_or_exit(CLI::App& app, int argc, const char* const* argv) {
    SplitArgs split = split_args(argc, argv);
    std::string name = app.get_name();
    // An option of the app's own that an EAL option shares the name of (an --allow of sources,
    // DPDK's PCI allow list) is the app's where no `--` says otherwise.
    auto declares = [&app](std::string_view option) {
        const std::string n(option);
        if (app.get_option_no_throw(n)) return true;
        for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
            if (sub->get_option_no_throw(n)) return true;
        return false;
    };
    if (!split.had_separator) {
        if (auto eal = find_eal_option(split.app, declares); !eal.empty())
            usage_error(name, "'" + eal + "' is an EAL option: EAL args go before `--`, e.g. " +
                                  name + " " + eal + " ... -- [app args]");
    }
    std::vector<std::string> reversed(split.app.rbegin(), split.app.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
        // `APP SUBCOMMAND --help`: the subcommand is the first app argument.
        std::string subcommand;
        for (const CLI::App* sub : app.get_subcommands()) subcommand += sub->get_name() + " ";
        fmt::print("Usage: {} [EAL args] -- {}[app args]\n\n{}", name, subcommand, app.help());
        std::exit(0);
    } catch (const CLI::ParseError& e) {
        usage_error(name, e.what());
    }
    return split;
}

std::vector<uint16_t> parse_port_list(const CommonOptions& o) {
    std::vector<uint16_t> ports;
    if (!o.port_mask.empty()) {
        char* end = nullptr;
        unsigned long long mask = std::strtoull(o.port_mask.c_str(), &end, 16);
        if (*end != '\0' || mask == 0)
            throw std::invalid_argument("bad port mask '" + o.port_mask + "'");
        for (uint16_t p = 0; p < 64; ++p)
            if (mask >> p & 1) ports.push_back(p);
        return ports;
    }
    if (o.ports.empty()) return ports;
    std::string_view s = o.ports;
    std::set<uint16_t> seen;
    for (bool more = true; more;) {
        auto comma = s.find(',');
        more = comma != std::string_view::npos;
        std::string tok(s.substr(0, comma));
        char* end = nullptr;
        unsigned long v = std::strtoul(tok.c_str(), &end, 10);
        if (tok.empty() || *end != '\0' || v >= 1024)
            throw std::invalid_argument("bad port id '" + tok + "' in --ports");
        if (!seen.insert(uint16_t(v)).second)
            throw std::invalid_argument("port " + tok + " is given twice in --ports");
        ports.push_back(uint16_t(v));
        if (more) s = s.substr(comma + 1);
    }
    return ports;
}

}  // namespace linerate::cli
