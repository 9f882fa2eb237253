// gen: linerate's traffic generator. Wiring only: the traffic model is traffic.hpp, sending is
// sender.hpp, --write-pcap is pcap_out.hpp.
#include <fmt/core.h>

#include <fstream>

#include "cli/command_line.hpp"
#include "gen/options.hpp"
#include "gen/pcap_out.hpp"
#include "gen/sender.hpp"
#include "runtime/runtime.hpp"

using namespace linerate;
using namespace linerate::gen;

namespace {

int write_pcap(const GenOptions& g, const cli::CommonOptions& common, const TrafficPlan& plan) {
    PcapSummary s;
    try {
        s = write_traffic_pcap(plan, g.count, g.write_pcap, target_pps(g));
        if (!g.expect_path.empty()) s.expected.write_csv(g.expect_path);
    } catch (const std::exception& e) {
        fmt::print(stderr, "gen: {}\n", e.what());
        return 1;
    }
    fmt::print("gen: wrote {} {} frames ({} bytes) to {}\n", s.frames,
               kind_name(plan.config().kind), s.bytes, g.write_pcap);
    nlohmann::json classes = nlohmann::json::object();
    for (size_t c = 0; c < s.classes.size(); ++c)
        if (s.classes[c]) {
            classes[frame_class_name(FrameClass(c))] = s.classes[c];
            fmt::print("  {:<14} {}\n", frame_class_name(FrameClass(c)), s.classes[c]);
        }
    nlohmann::json j = {{"app", "linerate-gen"}, {"kind", kind_name(plan.config().kind)},
                        {"pcap", g.write_pcap},  {"frames", s.frames},
                        {"bytes", s.bytes},      {"expected_back", s.expects_return},
                        {"classes", classes},    {"seed", plan.config().seed}};
    if (s.expected.enabled()) {
        const ExpectedTotals e = s.expected.totals();
        fmt::print("  expected sums: {} keys, {} tuples, total {} -> {}\n", e.keys, e.tuples, e.sum,
                   g.expect_path);
        j["expect"] = {
            {"file", g.expect_path}, {"keys", e.keys}, {"tuples", e.tuples}, {"sum", e.sum}};
    }
    if (!common.json_path.empty()) {
        std::ofstream out(common.json_path);
        out << j.dump(2) << "\n";
        if (!out) {
            fmt::print(stderr, "gen: error: cannot write {}\n", common.json_path);
            return 1;
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App cli(
        "gen: linerate's traffic generator. Sends udp, nfv-mix, kvagg or clocksync traffic at "
        "full or set rate and measures what comes back, or writes the same frames to a pcap",
        "linerate-gen");
    cli::CommonOptions common;
    common.add(cli);
    GenOptions g;
    add_gen_options(cli, g);
    // Parsed once, here: --write-pcap needs no EAL, and the runtime starts from the same parse.
    cli::SplitArgs args = cli::parse_or_exit(cli, argc, argv);
    try {
        common.check();
        finish_gen_options(cli, g);
    } catch (const std::invalid_argument& e) {
        cli::usage_error("linerate-gen", e.what());
    }
    if (!common.pcap.empty())
        cli::usage_error("linerate-gen",
                         "linerate-gen has no --pcap test mode; use --write-pcap FILE --count N");
    std::unique_ptr<TrafficPlan> plan;
    try {
        plan = std::make_unique<TrafficPlan>(g.traffic);
    } catch (const std::invalid_argument& e) {
        cli::usage_error("linerate-gen", e.what());
    }
    if (!g.write_pcap.empty()) return write_pcap(g, common, *plan);

    AppInfo info{"linerate-gen", "traffic generator", kGenDrops, kGenCounters};
    Runtime runtime(info, std::move(args), common);
    std::unique_ptr<Sender> sender;
    try {
        sender = std::make_unique<Sender>(runtime, g, *plan);
    } catch (const std::invalid_argument& e) {
        cli::usage_error("linerate-gen", e.what());
    }
    return sender->run();
}
