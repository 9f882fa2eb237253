// xdp_cost: the per-packet cost of the apps' XDP programs against the bare XDP_TX reflector
// (bpf/reflect.bpf.c), measured by the kernel with BPF_PROG_TEST_RUN and `repeat` (no NIC, no
// driver: the program alone on one frame in a loop), alternated `runs` times; prints JSON with
// each program's median ns per packet and the ratios to the reflector. Root (loads programs).
//
//   xdp_cost [--size B] [--repeat N] [--runs R]
#include <fmt/core.h>
#include <linux/bpf.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pkt/build.hpp"
#include "xdp/datapath.hpp"

using namespace linerate;

namespace {

struct Candidate {
    std::string name, object, program;
    uint32_t flags;
    std::unique_ptr<xdp::DatapathProgram> loaded;
    std::vector<double> ns;
};

// nfv as it runs by default: checksum verified, RFC 1812's bad sources, MACs swapped.
void configure(Candidate& c) {
    if (c.flags) c.loaded->set_flags(c.flags);
    if (c.object == "nfv.bpf.o") c.loaded->set_nfv_sources({0x00000000u, 0xFFFFFFFFu}, {});
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli("xdp_cost: ns per packet of each XDP program (BPF_PROG_TEST_RUN, repeat)");
    unsigned size = 64, repeat = 1000000, runs = 5;
    cli.add_option("--size", size, "frame bytes (a valid IPv4/UDP frame)")
        ->check(CLI::Range(42, 1518));
    cli.add_option("--repeat", repeat, "runs of the frame per measurement")
        ->check(CLI::Range(1, 100000000));
    cli.add_option("--runs", runs, "measurements per program, alternated")
        ->check(CLI::Range(1, 100));
    CLI11_PARSE(cli, argc, argv);

    const std::vector<uint8_t> frame = pkt::make_udp_frame(pkt::UdpFrameSpec{}, size);
    std::vector<Candidate> cands;
    cands.push_back({"reflect", "reflect.bpf.o", "xdp_reflect", 0, nullptr, {}});
    cands.push_back({"l2reflect", "l2reflect.bpf.o", DP_PROGRAM, DP_MAC_SWAP, nullptr, {}});
    cands.push_back(
        {"nfv", "nfv.bpf.o", DP_PROGRAM, DP_MAC_SWAP | DP_VERIFY_CHECKSUM, nullptr, {}});
    // nfv --no-checksum: what the header checksum costs.
    cands.push_back({"nfv_no_checksum", "nfv.bpf.o", DP_PROGRAM, DP_MAC_SWAP, nullptr, {}});
    try {
        for (Candidate& c : cands) {
            c.loaded = std::make_unique<xdp::DatapathProgram>(c.object, c.program);
            configure(c);
        }
        for (unsigned r = 0; r < runs; ++r)
            for (Candidate& c : cands) c.ns.push_back(c.loaded->ns_per_run(frame, repeat));
    } catch (const std::exception& e) {
        fmt::print(stderr, "xdp_cost: {}\n", e.what());
        return 1;
    }
    nlohmann::json out = {{"frame_bytes", size}, {"repeat", repeat}, {"runs", runs}};
    const double base = median(cands[0].ns);
    for (const Candidate& c : cands) {
        out["ns_per_packet"][c.name] = median(c.ns);
        out["samples"][c.name] = c.ns;
        out["over_reflect"][c.name] = median(c.ns) / base;
    }
    fmt::print("{}\n", out.dump(1));
}
