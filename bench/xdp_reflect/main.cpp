// xdp_reflect: attaches lib/xdp/reflect/reflect.bpf.c (XDP MAC-swap reflector, XDP_TX) to an
// interface with libbpf, prints its rate every second like the apps' stats line, detaches at the
// end. The XDP-native baseline of `bench/run af-xdp`.
//
//   xdp_reflect IFACE [--duration S] [--generic] [--json FILE]
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/core.h>
#include <linux/if_link.h>
#include <net/if.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "xdp/bpf_object.hpp"
#include "xdp/reflect/reflect_abi.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;

reflect_counters read_counters(int map_fd) {
    int cpus = libbpf_num_possible_cpus();
    std::vector<reflect_counters> per_cpu(static_cast<size_t>(cpus > 0 ? cpus : 1));
    uint32_t key = 0;
    reflect_counters sum{};
    if (bpf_map_lookup_elem(map_fd, &key, per_cpu.data()) == 0)
        for (const auto& c : per_cpu) {
            sum.reflected += c.reflected;
            sum.bytes += c.bytes;
            sum.too_short += c.too_short;
        }
    return sum;
}

struct Options {
    std::string iface, object = linerate::xdp::find_bpf_object("reflect.bpf.o"), json_path;
    double duration = 10, period = 1;
    bool generic = false;
};

void add_options(CLI::App& cli, Options& o) {
    cli.add_option("iface", o.iface, "Interface to attach to")->required();
    cli.add_option("--duration", o.duration, "Seconds, then detach")->check(CLI::Range(0.1, 1e6));
    cli.add_option("--stats-period", o.period, "Seconds between rate lines")
        ->check(CLI::Range(0.1, 3600.0));
    cli.add_option("--object", o.object, "The BPF object (default: reflect.bpf.o of the build)");
    cli.add_flag("--generic", o.generic, "Attach in generic (skb) mode instead of driver mode");
    cli.add_option("--json", o.json_path, "Write the totals as JSON");
}

// The program attached to the interface, until detach().
struct Attachment {
    bpf_object* obj = nullptr;
    int map_fd = -1;
    unsigned ifindex = 0;
    uint32_t flags = 0;

    void detach() {
        bpf_xdp_detach(int(ifindex), flags & ~XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
        bpf_object__close(obj);
    }
};

// Loads and attaches the program: 0, or the exit status (2: no such interface, 1: the kernel
// refused) after one line on stderr.
int attach(const Options& o, Attachment& a) {
    a.ifindex = if_nametoindex(o.iface.c_str());
    if (a.ifindex == 0) {
        fmt::print(stderr, "xdp_reflect: no interface {}\n", o.iface);
        return 2;
    }
    a.obj = bpf_object__open_file(o.object.c_str(), nullptr);
    if (!a.obj || bpf_object__load(a.obj)) {
        fmt::print(stderr, "xdp_reflect: cannot load {}: {}\n", o.object, std::strerror(errno));
        return 1;
    }
    int prog_fd = bpf_program__fd(bpf_object__find_program_by_name(a.obj, "xdp_reflect"));
    a.map_fd = bpf_object__find_map_fd_by_name(a.obj, REFLECT_COUNTERS_MAP);
    a.flags = XDP_FLAGS_UPDATE_IF_NOEXIST | (o.generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
    if (int err = bpf_xdp_attach(int(a.ifindex), prog_fd, a.flags, nullptr)) {
        fmt::print(stderr, "xdp_reflect: cannot attach to {}: {}\n", o.iface, std::strerror(-err));
        bpf_object__close(a.obj);
        return 1;
    }
    return 0;
}

using Clock = std::chrono::steady_clock;

// The rate line every --stats-period until --duration has passed since `start` or a signal.
void print_rates(int map_fd, const Options& o, Clock::time_point start) {
    auto last_t = start;
    reflect_counters last = read_counters(map_fd);
    while (!g_stop && Clock::now() - start < std::chrono::duration<double>(o.duration)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        auto now = Clock::now();
        double dt = std::chrono::duration<double>(now - last_t).count();
        if (dt < o.period) continue;
        reflect_counters c = read_counters(map_fd);
        double pps = double(c.reflected - last.reflected) / dt;
        double gbps =
            double(c.bytes - last.bytes + 24 * (c.reflected - last.reflected)) * 8 / dt / 1e9;
        fmt::print("[xdp_reflect] rx {:.3f} Mpps {:.3f} Gbps | tx {:.3f} Mpps\n", pps / 1e6, gbps,
                   pps / 1e6);
        std::fflush(stdout);
        last = c;
        last_t = now;
    }
}

void report(const Options& o, const reflect_counters& total, double seconds) {
    fmt::print("xdp_reflect summary over {:.3f} s: reflected {} frames {} bytes, too short {}\n",
               seconds, total.reflected, total.bytes, total.too_short);
    if (o.json_path.empty()) return;
    nlohmann::json j = {{"app", "xdp_reflect"},         {"duration_s", seconds},
                        {"reflected", total.reflected}, {"bytes", total.bytes},
                        {"too_short", total.too_short}, {"generic", o.generic}};
    std::ofstream(o.json_path) << j.dump(2) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli("xdp_reflect: XDP-native MAC-swap reflector (XDP_TX), the af-xdp bench baseline",
                 "xdp_reflect");
    Options o;
    add_options(cli, o);
    try {
        cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli.exit(e) == 0 ? 0 : 2;
    }
    Attachment a;
    if (int status = attach(o, a)) return status;
    fmt::print("xdp_reflect: attached to {} ({} mode)\n", o.iface,
               o.generic ? "generic" : "driver");
    std::fflush(stdout);
    std::signal(SIGINT, [](int) { g_stop = 1; });
    std::signal(SIGTERM, [](int) { g_stop = 1; });

    const auto start = Clock::now();
    print_rates(a.map_fd, o, start);
    reflect_counters total = read_counters(a.map_fd);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    a.detach();
    report(o, total, seconds);
    return 0;
}
