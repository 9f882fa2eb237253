#include "regions/session.hpp"

#include <fmt/core.h>

#include <fstream>
#include <stdexcept>

#include "eal/eal.hpp"
#include "regions/advise.hpp"
#include "regions/measure.hpp"

namespace linerate::regions {

namespace {

constexpr const char* kTool = "linerate-regions";

Report read_report(const std::string& path) {
    std::ifstream in(path);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(fmt::format("--from {}: {}", path, e.what()));
    }
    return report_from_json(j);
}

Report measured(const Resolved& resolved, const Options& options, const cli::SplitArgs& args) {
    std::vector<std::string> eal_args{args.program};
    const std::vector<std::string> extra = args.had_separator ? args.eal : default_eal_args();
    eal_args.insert(eal_args.end(), extra.begin(), extra.end());
    eal::Eal eal(eal_args);
    return measure(resolved, options.regions);
}

void write_json(const std::string& path, const nlohmann::json& j) {
    std::ofstream out(path);
    out << j.dump(2) << "\n";
    if (!out) throw std::runtime_error("--json: cannot write " + path);
}

}  // namespace

int run_session(const Options& options, const Resolved& resolved, const cli::SplitArgs& args) {
    try {
        const bool from_file = !options.from.empty();
        const Report report =
            from_file ? read_report(options.from) : measured(resolved, options, args);
        nlohmann::json j = to_json(report);
        if (!from_file) fmt::print("{}", format_report(report));
        if (!options.advise.empty()) {
            const AppNeeds needs = app_needs(options);
            const Advice advice = advise(report, needs, options.margin);
            fmt::print("{}", format_advice(advice, needs));
            j["advice"] = to_json(advice, needs);
        }
        if (!options.json_path.empty()) write_json(options.json_path, j);
        return 0;
    } catch (const std::invalid_argument& e) {
        cli::usage_error(kTool, e.what());
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: error: {}\n", kTool, e.what());
        return 1;
    }
}

}  // namespace linerate::regions
