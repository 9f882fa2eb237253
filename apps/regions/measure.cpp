#include "regions/measure.hpp"

#include <fmt/core.h>
#include <rte_lcore.h>
#include <rte_memory.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>

#include "mem/placed_buffer.hpp"
#include "mem/region.hpp"
#include "regions/memory_kernels.hpp"
#include "worker/worker_map.hpp"

namespace linerate::regions {

namespace {

constexpr size_t kMinBuffer = size_t(1) << 20;

// One line on stderr that says what is being measured: rewritten in place on a terminal; in a
// log, one line per figure (not per point).
class Progress {
  public:
    Progress() : tty_(isatty(STDERR_FILENO) != 0) {}
    ~Progress() {
        if (tty_ && shown_) fmt::print(stderr, "\r\033[K");
    }
    void figure(const std::string& text) {
        if (!tty_) fmt::print(stderr, "linerate-regions: {}\n", text);
        point(text);
    }
    void point(const std::string& text) {
        if (!tty_) return;
        fmt::print(stderr, "\r\033[Klinerate-regions: {}", text);
        std::fflush(stderr);
        shown_ = true;
    }

  private:
    bool tty_;
    bool shown_ = false;
};

// The measured buffer: as large as asked, or the largest power-of-two fraction of it the region
// holds, placed as the apps place their buffers (mem::PlacedBuffer: a Region, then rte_malloc on
// its heap, zeroed, so every page is present before timing).
class RegionBuffer {
  public:
    RegionBuffer(const mem::RegionSpec& spec, size_t want, unsigned index) {
        const int socket = int(rte_lcore_to_socket_id(rte_get_main_lcore()));
        std::string why = "out of memory";
        for (size_t bytes = want; bytes >= kMinBuffer; bytes /= 2) try {
                placed_ = std::make_unique<mem::PlacedBuffer>(
                    spec, bytes, fmt::format("regions{}", index), socket, "measured buffer");
                return;
            } catch (const std::exception& e) {
                placed_.reset();  // too large for it: try half
                why = e.what();
            }
        throw std::runtime_error(fmt::format("region {}: cannot hold even {} for the figures ({})",
                                             spec.text, mem::format_bytes(double(kMinBuffer)),
                                             why));
    }

    char* data() const { return static_cast<char*>(placed_->data()); }
    size_t bytes() const { return placed_->bytes(); }
    const mem::Region& region() const { return placed_->region(); }

  private:
    std::unique_ptr<mem::PlacedBuffer> placed_;
};

// Runs job(i) on workers 0 .. active-1 at once (they start together); the main lcore sleeps.
void run_on(const worker::WorkerMap& map, unsigned active,
            const std::function<void(unsigned)>& job) {
    std::atomic<unsigned> ready{0}, done{0};
    worker::run_workers(
        map,
        [&](const worker::WorkerSlot& slot) {
            if (slot.index >= active) return;
            ready.fetch_add(1);
            while (ready.load() < active) std::this_thread::yield();
            job(slot.index);
            done.fetch_add(1);
        },
        [&] {
            while (done.load() < active) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
}

// Sum over `workers` workers of what each measures (bytes a second), in GB/s.
double gb_per_s(const worker::WorkerMap& map, unsigned workers,
                const std::function<double(unsigned)>& each) {
    std::vector<double> rates(workers);
    run_on(map, workers, [&](unsigned i) { rates[i] = each(i); });
    double sum = 0;
    for (double r : rates) sum += r;
    return sum / 1e9;
}

}  // namespace

namespace {

struct Context {
    const Resolved& plan;
    const worker::WorkerMap& map;
    Progress& progress;
};

std::vector<LatencyCurve> latency_curves(Context& c, const RegionBuffer& buf,
                                         const std::string& name) {
    std::vector<LatencyCurve> curves;
    for (size_t stride : c.plan.strides) {
        LatencyCurve curve{stride, {}};
        c.progress.figure(fmt::format("{}: latency, stride {} B", name, stride));
        for (size_t ws : working_sets(std::max<size_t>(4096, stride), buf.bytes())) {
            c.progress.point(fmt::format("{}: latency, stride {} B, {}", name, stride,
                                         mem::format_bytes(double(ws))));
            double ns = 0;
            run_on(c.map, 1, [&](unsigned) {
                void* start = build_chain(buf.data(), ws, stride, ws ^ stride);
                ns = chase_ns(start, ws / stride, c.plan.seconds_per_point);
            });
            curve.points.push_back({ws, ns});
        }
        curves.push_back(std::move(curve));
    }
    return curves;
}

void random_reads(Context& c, const RegionBuffer& buf, RegionFigures& f) {
    c.progress.figure(fmt::format("{}: random reads", f.name));
    const unsigned all = c.map.size();
    for (size_t ws : working_sets(4096, buf.bytes())) {
        c.progress.point(
            fmt::format("{}: random reads, {}", f.name, mem::format_bytes(double(ws))));
        auto each = [&](unsigned i) {
            return random_read_bytes_per_s(buf.data(), ws, c.plan.seconds_per_point, ws + i);
        };
        f.random_one_worker.push_back({ws, gb_per_s(c.map, 1, each)});
        f.random_all_workers.push_back(
            {ws, all == 1 ? f.random_one_worker.back().gb_per_s : gb_per_s(c.map, all, each)});
    }
}

// Each of `workers` workers reads (or writes) its own 1/workers of the buffer.
double sequential(Context& c, const RegionBuffer& buf, unsigned workers, bool write) {
    const size_t slice = buf.bytes() / workers / 4096 * 4096;
    return gb_per_s(c.map, workers, [&](unsigned i) {
        char* p = buf.data() + i * slice;
        return write ? sequential_write_bytes_per_s(p, slice, c.plan.seconds_per_point)
                     : sequential_read_bytes_per_s(p, slice, c.plan.seconds_per_point);
    });
}

Sequential sequential_figures(Context& c, const RegionBuffer& buf, const std::string& name) {
    c.progress.figure(fmt::format("{}: sequential reads and writes", name));
    const unsigned all = c.map.size();
    Sequential s;
    s.working_set_bytes = buf.bytes();
    s.read_one_worker_gb_per_s = sequential(c, buf, 1, false);
    s.read_all_workers_gb_per_s = sequential(c, buf, all, false);
    s.write_one_worker_gb_per_s = sequential(c, buf, 1, true);
    s.write_all_workers_gb_per_s = sequential(c, buf, all, true);
    return s;
}

// Workers 0 .. k-1 read their slice of `a`, the others theirs of `b`, for k = all .. 0.
Mixed mixed_figures(Context& c, const RegionBuffer& a, const RegionBuffer& b, Mixed m) {
    const unsigned all = c.map.size();
    const size_t slice = std::min(a.bytes(), b.bytes()) / all / 4096 * 4096;
    m.working_set_bytes = slice;
    c.progress.figure(fmt::format("mixed: {} + {}", m.first, m.second));
    for (unsigned k = all + 1; k-- > 0;) {
        const double rate = gb_per_s(c.map, all, [&](unsigned i) {
            const RegionBuffer& on = i < k ? a : b;
            return sequential_read_bytes_per_s(on.data() + i * slice, slice,
                                               c.plan.seconds_per_point);
        });
        m.points.push_back({k, all - k, rate});
    }
    return m;
}

RegionFigures region_figures(Context& c, const RegionBuffer& buf, const std::string& given) {
    RegionFigures f;
    f.spec = given;
    f.name = buf.region().name();
    f.buffer_bytes = buf.bytes();
    const mem::PageFacts pages = mem::page_facts(buf.data(), buf.bytes());
    const rte_memseg_list* msl = rte_mem_virt2memseg_list(buf.data());
    f.facts = {msl ? size_t(msl->page_sz) : 0, pages.kernel_page_size, pages.huge_bytes,
               pages.numa_node, mem::describe_placement(buf.data(), buf.bytes())};
    if (c.plan.figures.latency) f.latency = latency_curves(c, buf, f.name);
    if (c.plan.figures.random) random_reads(c, buf, f);
    if (c.plan.figures.sequential) f.sequential = sequential_figures(c, buf, f.name);
    return f;
}

}  // namespace

Report measure(const Resolved& plan, const std::vector<std::string>& given) {
    const worker::WorkerMap map(worker::worker_lcores(), {});
    Progress progress;
    Context c{plan, map, progress};
    Report r;
    r.machine = this_machine();
    r.workers = map.size();
    for (const worker::WorkerSlot& s : map.slots()) r.worker_lcores.push_back(s.lcore);
    r.seconds_per_point = plan.seconds_per_point;
    r.max_working_set_bytes = plan.max_bytes;
    // Two buffers live at once at most: the region measured and, for the mixed pair, the first.
    std::unique_ptr<RegionBuffer> first;
    for (size_t i = 0; i < plan.regions.size(); ++i) {
        progress.figure(
            fmt::format("{}: mapping {}", given[i], mem::format_bytes(double(plan.max_bytes))));
        auto buf = std::make_unique<RegionBuffer>(plan.regions[i], plan.max_bytes, unsigned(i));
        r.regions.push_back(region_figures(c, *buf, given[i]));
        if (plan.figures.mixed && i == 1)
            r.mixed = mixed_figures(c, *first, *buf, Mixed{given[0], given[1], 0, {}});
        if (i == 0) first = std::move(buf);
        if (i == 1) first.reset();
    }
    return r;
}

std::vector<std::string> default_eal_args() {
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof(set), &set);
    std::vector<unsigned> cpus;
    for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    std::string all, lcores;
    for (unsigned cpu : cpus) all += (all.empty() ? "" : ",") + std::to_string(cpu);
    lcores = "0@(" + all + ")";
    for (size_t i = 0; i < cpus.size(); ++i) lcores += fmt::format(",{}@{}", i + 1, cpus[i]);
    std::vector<std::string> args{"--lcores=" + lcores, "--no-pci", "--in-memory", "--no-telemetry",
                                  "--log-level=lib.eal:warning"};
    std::ifstream meminfo("/proc/meminfo");
    size_t free_pages = 0;
    for (std::string line; std::getline(meminfo, line);)
        if (std::sscanf(line.c_str(), "HugePages_Free: %zu", &free_pages) == 1) break;
    if (free_pages == 0) args.insert(args.end(), {"--no-huge", "-m", "1024"});
    return args;
}

}  // namespace linerate::regions
