// xdp_cost: the per-packet cost of the apps' XDP programs against the bare XDP_TX reflector
// (lib/xdp/reflect/reflect.bpf.c), measured by the kernel with BPF_PROG_TEST_RUN and `repeat` (no
// NIC, no driver: the program alone on one frame in a loop), alternated `runs` times; prints JSON
// with each program's median ns per packet and the ratios to the reflector. The apps' programs run
// as on a default interface (MTU 1500: loaded single-buffer, no multi-buffer check; lib/xdp's
// multi_buffer_for_mtu), serving what `--xdp-steer app` serves (IPv4). A run
// takes one frame, so the 10 % bad mix is computed: 0.9 x the valid frame's ns + 0.1 x the mean
// of the bad frames' (a bad checksum, a bad source), each measured alone. Root (loads programs).
//
//   xdp_cost [--size B] [--repeat N] [--runs R]
#include <fmt/core.h>
#include <linux/bpf.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nfv/nfv_xdp.hpp"
#include "pkt/build.hpp"
#include "xdp/datapath/datapath_program.hpp"

using namespace linerate;

namespace {

constexpr double kBadShare = 0.1;

struct Candidate {
    std::string name, object, program;
    uint32_t flags;
    std::unique_ptr<xdp::DatapathProgram> loaded;
    std::map<std::string, std::vector<double>> ns;  // by frame kind
};

struct Frame {
    std::string kind;
    std::vector<uint8_t> bytes;
};

// An app's program as it runs on an interface of MTU 1500 (lib/runtime/xdp_datapath_feature):
// single-buffer, the frames `--xdp-steer app` serves (IPv4); nfv with RFC 1812's bad sources, as
// by default.
void configure(Candidate& c) {
    if (c.object == "reflect.bpf.o") return;  // the reflector and the loop: no config
    c.loaded->set_config(c.flags, {xdp::SteerMode::ipv4, 0});
    if (c.object == "nfv.bpf.o")
        linerate::nfv::set_xdp_sources(*c.loaded, {0x00000000u, 0xFFFFFFFFu}, {});
}

// A valid IPv4/UDP frame, one with its header checksum off by one, one from 255.255.255.255.
std::vector<Frame> frames_of(unsigned size) {
    std::vector<Frame> f;
    f.push_back({"valid", pkt::make_udp_frame(pkt::UdpFrameSpec{}, size)});
    f.push_back({"bad_checksum", f[0].bytes});
    f.back().bytes[14 + 11] ^= 1;  // the header checksum's low byte
    pkt::UdpFrameSpec bad_src;
    bad_src.src_ip = 0xFFFFFFFFu;
    f.push_back({"bad_source", pkt::make_udp_frame(bad_src, size)});
    return f;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

nlohmann::json report(const std::vector<Candidate>& cands, const std::vector<Frame>& frames) {
    nlohmann::json out;
    const double base = median(cands[0].ns.at("valid"));
    for (const Candidate& c : cands) {
        double bad = 0;
        for (const Frame& f : frames) {
            const double ns = median(c.ns.at(f.kind));
            out["ns_by_frame"][c.name][f.kind] = ns;
            out["samples"][c.name][f.kind] = c.ns.at(f.kind);
            if (f.kind != "valid") bad += ns / double(frames.size() - 1);
        }
        const double valid = median(c.ns.at("valid"));
        const double mix = (1 - kBadShare) * valid + kBadShare * bad;
        out["ns_per_packet"][c.name] = valid;
        out["over_reflect"][c.name] = valid / base;
        out["mix_10pct_bad_ns"][c.name] = mix;
        out["mix_10pct_bad_over_reflect"][c.name] = mix / base;
    }
    // Each program's own work: its time less the loop's.
    const double loop = median(cands[1].ns.at("valid"));
    for (const Candidate& c : cands) out["work_ns"][c.name] = median(c.ns.at("valid")) - loop;
    out["work_over_reflect"] = nlohmann::json::object();
    for (const Candidate& c : cands)
        if (base > loop)
            out["work_over_reflect"][c.name] = (median(c.ns.at("valid")) - loop) / (base - loop);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli("xdp_cost: ns per packet of each XDP program (BPF_PROG_TEST_RUN, repeat)");
    unsigned size = 64, repeat = 1000000, runs = 5;
    cli.add_option("--size", size, "frame bytes (IPv4/UDP frames)")->check(CLI::Range(42, 1518));
    cli.add_option("--repeat", repeat, "runs of the frame per measurement")
        ->check(CLI::Range(1, 100000000));
    cli.add_option("--runs", runs, "measurements per program, alternated")
        ->check(CLI::Range(1, 100));
    CLI11_PARSE(cli, argc, argv);

    const std::vector<Frame> frames = frames_of(size);
    std::vector<Candidate> cands;
    cands.push_back({"reflect", "reflect.bpf.o", "xdp_reflect", 0, nullptr, {}});
    // The test run's own loop (a program that only returns XDP_TX): every program's floor.
    cands.push_back({"loop", "reflect.bpf.o", "xdp_tx_only", 0, nullptr, {}});
    cands.push_back({"l2reflect", "l2reflect.bpf.o", DP_PROGRAM, DP_MAC_SWAP, nullptr, {}});
    cands.push_back(
        {"nfv", "nfv.bpf.o", DP_PROGRAM, DP_MAC_SWAP | DP_VERIFY_CHECKSUM, nullptr, {}});
    // nfv --no-checksum: what the header checksum costs.
    cands.push_back({"nfv_no_checksum", "nfv.bpf.o", DP_PROGRAM, DP_MAC_SWAP, nullptr, {}});
    try {
        for (Candidate& c : cands) {
            c.loaded = std::make_unique<xdp::DatapathProgram>(c.object, c.program,
                                                              /*multi_buffer=*/false);
            configure(c);
        }
        for (unsigned r = 0; r < runs; ++r)
            for (const Frame& f : frames)
                for (Candidate& c : cands)
                    c.ns[f.kind].push_back(c.loaded->ns_per_run(f.bytes, repeat));
    } catch (const std::exception& e) {
        fmt::print(stderr, "xdp_cost: {}\n", e.what());
        return 1;
    }
    nlohmann::json out = report(cands, frames);
    out["frame_bytes"] = size;
    out["repeat"] = repeat;
    out["runs"] = runs;
    out["bad_share"] = kBadShare;
    fmt::print("{}\n", out.dump(1));
}
