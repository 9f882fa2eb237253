// xdp_reflect: attaches bpf/reflect.bpf.c (XDP MAC-swap reflector, XDP_TX) to an interface with
// libbpf, prints its rate every second like the apps' stats line, detaches at the end. The
// XDP-native baseline of `bench/run af-xdp`.
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

#include "reflect_abi.h"
#include "xdp/steer.hpp"

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

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli("xdp_reflect: XDP-native MAC-swap reflector (XDP_TX), the af-xdp bench baseline",
                 "xdp_reflect");
    std::string iface, object = linerate::xdp::find_bpf_object("reflect.bpf.o"), json_path;
    double duration = 10, period = 1;
    bool generic = false;
    cli.add_option("iface", iface, "Interface to attach to")->required();
    cli.add_option("--duration", duration, "Seconds, then detach")->check(CLI::Range(0.1, 1e6));
    cli.add_option("--stats-period", period, "Seconds between rate lines")
        ->check(CLI::Range(0.1, 3600.0));
    cli.add_option("--object", object, "The BPF object (default: reflect.bpf.o of the build)");
    cli.add_flag("--generic", generic, "Attach in generic (skb) mode instead of driver mode");
    cli.add_option("--json", json_path, "Write the totals as JSON");
    try {
        cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli.exit(e) == 0 ? 0 : 2;
    }
    unsigned ifindex = if_nametoindex(iface.c_str());
    if (ifindex == 0) {
        fmt::print(stderr, "xdp_reflect: no interface {}\n", iface);
        return 2;
    }
    bpf_object* obj = bpf_object__open_file(object.c_str(), nullptr);
    if (!obj || bpf_object__load(obj)) {
        fmt::print(stderr, "xdp_reflect: cannot load {}: {}\n", object, std::strerror(errno));
        return 1;
    }
    int prog_fd = bpf_program__fd(bpf_object__find_program_by_name(obj, "xdp_reflect"));
    int map_fd = bpf_object__find_map_fd_by_name(obj, REFLECT_COUNTERS_MAP);
    uint32_t flags =
        XDP_FLAGS_UPDATE_IF_NOEXIST | (generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
    if (int err = bpf_xdp_attach(int(ifindex), prog_fd, flags, nullptr)) {
        fmt::print(stderr, "xdp_reflect: cannot attach to {}: {}\n", iface, std::strerror(-err));
        bpf_object__close(obj);
        return 1;
    }
    fmt::print("xdp_reflect: attached to {} ({} mode)\n", iface, generic ? "generic" : "driver");
    std::fflush(stdout);
    std::signal(SIGINT, [](int) { g_stop = 1; });
    std::signal(SIGTERM, [](int) { g_stop = 1; });

    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto last_t = start;
    reflect_counters last = read_counters(map_fd);
    while (!g_stop && clock::now() - start < std::chrono::duration<double>(duration)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        auto now = clock::now();
        double dt = std::chrono::duration<double>(now - last_t).count();
        if (dt < period) continue;
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
    reflect_counters total = read_counters(map_fd);
    double seconds = std::chrono::duration<double>(clock::now() - start).count();
    bpf_xdp_detach(int(ifindex), flags & ~XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
    bpf_object__close(obj);
    fmt::print("xdp_reflect summary over {:.3f} s: reflected {} frames {} bytes, too short {}\n",
               seconds, total.reflected, total.bytes, total.too_short);
    if (!json_path.empty()) {
        nlohmann::json j = {{"app", "xdp_reflect"},         {"duration_s", seconds},
                            {"reflected", total.reflected}, {"bytes", total.bytes},
                            {"too_short", total.too_short}, {"generic", generic}};
        std::ofstream(json_path) << j.dump(2) << "\n";
    }
    return 0;
}
