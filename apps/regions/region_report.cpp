#include "regions/region_report.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <fstream>
#include <stdexcept>

#include "mem/region.hpp"
#include "mem/region_spec.hpp"

namespace linerate::regions {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LatencyPoint, working_set_bytes, latency_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LatencyCurve, stride_bytes, points)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BandwidthPoint, working_set_bytes, gb_per_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Sequential, working_set_bytes, read_one_worker_gb_per_s,
                                   read_all_workers_gb_per_s, write_one_worker_gb_per_s,
                                   write_all_workers_gb_per_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RegionFacts, heap_page_size_bytes, kernel_page_size_bytes,
                                   huge_bytes, numa_node, placement)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MixedPoint, workers_on_first, workers_on_second, read_gb_per_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Mixed, first, second, working_set_bytes, points)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CacheLevel, level, type, size_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Machine, cpu_model, cpus, caches)

std::vector<size_t> working_sets(size_t min, size_t max) {
    std::vector<size_t> sizes;
    for (size_t s = std::bit_ceil(min); s <= max && s != 0; s *= 2) sizes.push_back(s);
    return sizes;
}

namespace {

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

std::vector<CacheLevel> cpu0_caches() {
    std::vector<CacheLevel> caches;
    for (unsigned i = 0;; ++i) {
        const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
        const std::string size = first_line(dir + "size");
        if (size.empty()) break;
        CacheLevel c;
        c.level = unsigned(std::atoi(first_line(dir + "level").c_str()));
        c.type = first_line(dir + "type");
        c.size_bytes = mem::parse_byte_size(size);
        if (c.type != "Instruction") caches.push_back(c);
    }
    return caches;
}

}  // namespace

Machine this_machine() {
    Machine m;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.starts_with("model name") && line.find(':') != std::string::npos) {
            m.cpu_model = line.substr(line.find(':') + 2);
            break;
        }
    m.cpus = unsigned(sysconf(_SC_NPROCESSORS_ONLN));
    try {
        m.caches = cpu0_caches();
    } catch (const std::exception&) {
        m.caches.clear();  // a size sysfs writes in a way we do not read: no cache figures
    }
    return m;
}

nlohmann::json to_json(const Report& r) {
    nlohmann::json regions = nlohmann::json::array();
    for (const RegionFigures& f : r.regions) {
        nlohmann::json j = {{"spec", f.spec},
                            {"name", f.name},
                            {"buffer_bytes", f.buffer_bytes},
                            {"facts", f.facts},
                            {"latency", f.latency},
                            {"random_read_one_worker", f.random_one_worker},
                            {"random_read_all_workers", f.random_all_workers}};
        if (f.sequential) j["sequential"] = *f.sequential;
        regions.push_back(j);
    }
    nlohmann::json out = {{"tool", "linerate-regions"},
                          {"machine", r.machine},
                          {"workers", r.workers},
                          {"worker_lcores", r.worker_lcores},
                          {"seconds_per_point", r.seconds_per_point},
                          {"max_working_set_bytes", r.max_working_set_bytes},
                          {"regions", regions}};
    if (r.mixed) out["mixed"] = *r.mixed;
    return out;
}

Report report_from_json(const nlohmann::json& j) {
    try {
        Report r;
        r.machine = j.at("machine").get<Machine>();
        r.workers = j.at("workers").get<unsigned>();
        r.worker_lcores = j.at("worker_lcores").get<std::vector<unsigned>>();
        r.seconds_per_point = j.at("seconds_per_point").get<double>();
        r.max_working_set_bytes = j.at("max_working_set_bytes").get<size_t>();
        for (const nlohmann::json& f : j.at("regions")) {
            RegionFigures g;
            g.spec = f.at("spec").get<std::string>();
            g.name = f.at("name").get<std::string>();
            g.buffer_bytes = f.at("buffer_bytes").get<size_t>();
            g.facts = f.at("facts").get<RegionFacts>();
            g.latency = f.at("latency").get<std::vector<LatencyCurve>>();
            g.random_one_worker = f.at("random_read_one_worker").get<std::vector<BandwidthPoint>>();
            g.random_all_workers =
                f.at("random_read_all_workers").get<std::vector<BandwidthPoint>>();
            if (f.contains("sequential")) g.sequential = f["sequential"].get<Sequential>();
            r.regions.push_back(std::move(g));
        }
        if (j.contains("mixed")) r.mixed = j["mixed"].get<Mixed>();
        return r;
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(std::string("not a linerate-regions JSON: ") + e.what());
    }
}

namespace {

std::string short_bytes(size_t b) {
    if (b >= (size_t(1) << 30) && b % (size_t(1) << 30) == 0) return fmt::format("{}G", b >> 30);
    if (b >= (size_t(1) << 20) && b % (size_t(1) << 20) == 0) return fmt::format("{}M", b >> 20);
    if (b >= 1024 && b % 1024 == 0) return fmt::format("{}K", b >> 10);
    return fmt::format("{}", b);
}

std::string facts_line(const RegionFigures& f) {
    const RegionFacts& x = f.facts;
    const double huge = f.buffer_bytes ? 100.0 * double(x.huge_bytes) / double(f.buffer_bytes) : 0;
    return fmt::format(
        "{}: buffer {}, heap pages {}, kernel pages {}, on huge pages {} ({:.0f} %), NUMA node "
        "{}\n  {}\n",
        f.name, mem::format_bytes(double(f.buffer_bytes)),
        mem::format_bytes(double(x.heap_page_size_bytes)),
        mem::format_bytes(double(x.kernel_page_size_bytes)),
        mem::format_bytes(double(x.huge_bytes)), huge,
        x.numa_node < 0 ? std::string("unknown") : std::to_string(x.numa_node), x.placement);
}

// A figure of `points` at working set `ws`, or "" when it was not measured there.
template <typename Points, typename Value>
std::string cell(const Points& points, size_t ws, Value value) {
    for (const auto& p : points)
        if (p.working_set_bytes == ws) return fmt::format("{:.2f}", value(p));
    return "";
}

// Rows: working sets; columns: latency per stride (ns), random reads (GB/s).
std::string curves_table(const RegionFigures& f) {
    std::vector<size_t> sizes;
    auto add = [&](size_t ws) {
        if (std::find(sizes.begin(), sizes.end(), ws) == sizes.end()) sizes.push_back(ws);
    };
    for (const LatencyCurve& c : f.latency)
        for (const LatencyPoint& p : c.points) add(p.working_set_bytes);
    for (const BandwidthPoint& p : f.random_one_worker) add(p.working_set_bytes);
    std::sort(sizes.begin(), sizes.end());
    std::string out = fmt::format("  {:>8}", "set");
    for (const LatencyCurve& c : f.latency)
        out += fmt::format(" {:>9}", "ns@" + short_bytes(c.stride_bytes));
    out += fmt::format(" {:>10} {:>10}\n", "rd1 GB/s", "rdN GB/s");
    auto ns = [](const LatencyPoint& p) { return p.latency_ns; };
    auto gbs = [](const BandwidthPoint& p) { return p.gb_per_s; };
    for (size_t ws : sizes) {
        out += fmt::format("  {:>8}", short_bytes(ws));
        for (const LatencyCurve& c : f.latency)
            out += fmt::format(" {:>9}", cell(c.points, ws, ns));
        out += fmt::format(" {:>10} {:>10}\n", cell(f.random_one_worker, ws, gbs),
                           cell(f.random_all_workers, ws, gbs));
    }
    return out;
}

}  // namespace

std::string format_report(const Report& r) {
    std::string out = fmt::format("{} ({} CPUs), {} worker{} on lcores", r.machine.cpu_model,
                                  r.machine.cpus, r.workers, r.workers == 1 ? "" : "s");
    for (unsigned lc : r.worker_lcores) out += fmt::format(" {}", lc);
    out += "; caches:";
    for (const CacheLevel& c : r.machine.caches)
        out += fmt::format(" L{} {}", c.level, mem::format_bytes(double(c.size_bytes)));
    out += "\n";
    for (const RegionFigures& f : r.regions) {
        out += facts_line(f);
        if (!f.latency.empty() || !f.random_one_worker.empty()) out += curves_table(f);
        if (const auto& s = f.sequential)
            out += fmt::format(
                "  sequential over {} a worker: read {:.2f} GB/s (1 worker), {:.2f} GB/s (all); "
                "write {:.2f}, {:.2f}\n",
                mem::format_bytes(double(s->working_set_bytes)), s->read_one_worker_gb_per_s,
                s->read_all_workers_gb_per_s, s->write_one_worker_gb_per_s,
                s->write_all_workers_gb_per_s);
    }
    if (const auto& m = r.mixed) {
        out += fmt::format("mixed sequential reads, {} a worker, workers on {} + {}:",
                           mem::format_bytes(double(m->working_set_bytes)), m->first, m->second);
        for (const MixedPoint& p : m->points)
            out += fmt::format(" {}+{} {:.2f} GB/s;", p.workers_on_first, p.workers_on_second,
                               p.read_gb_per_s);
        out.back() = '\n';
    }
    return out;
}

}  // namespace linerate::regions
