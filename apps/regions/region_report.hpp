#pragma once
// What linerate-regions measured (docs/regions.md): the figures of each region, the mixed pair,
// the machine; as JSON (units in the key names: _ns, _gb_per_s, _bytes) and as the terminal's
// table. Read back from JSON for --advise --from. No EAL.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace linerate::regions {

// Working sets of a curve: the powers of two from `min` up to `max` (max rounded down to one).
std::vector<size_t> working_sets(size_t min, size_t max);

struct LatencyPoint {
    size_t working_set_bytes = 0;
    double latency_ns = 0;
};
struct LatencyCurve {
    size_t stride_bytes = 0;
    std::vector<LatencyPoint> points;
};
struct BandwidthPoint {
    size_t working_set_bytes = 0;
    double gb_per_s = 0;  // 10^9 bytes a second
};
struct Sequential {
    size_t working_set_bytes = 0;  // one worker's; every worker reads its own 1/N of it
    double read_one_worker_gb_per_s = 0, read_all_workers_gb_per_s = 0;
    double write_one_worker_gb_per_s = 0, write_all_workers_gb_per_s = 0;
};
// What the kernel really gave the buffer (mem::page_facts) and what DPDK was told.
struct RegionFacts {
    size_t heap_page_size_bytes = 0;    // DPDK's page size of the heap the buffer is in
    size_t kernel_page_size_bytes = 0;  // smaps' KernelPageSize (2 MiB for hugetlbfs)
    size_t huge_bytes = 0;              // on huge pages, THP or hugetlbfs
    int numa_node = -1;                 // of the first page; -1 unknown
    std::string placement;              // mem::describe_placement's line
};
struct RegionFigures {
    std::string spec;  // as given (an alias, or the spec)
    std::string name;  // Region::name(): "pages:thp", "dpa (file:/dev/shm/x)"
    size_t buffer_bytes = 0;
    RegionFacts facts;
    std::vector<LatencyCurve> latency;  // one per stride
    std::vector<BandwidthPoint> random_one_worker, random_all_workers;
    std::optional<Sequential> sequential;
};
struct MixedPoint {
    unsigned workers_on_first = 0, workers_on_second = 0;
    double read_gb_per_s = 0;
};
struct Mixed {
    std::string first, second;
    size_t working_set_bytes = 0;  // per worker
    std::vector<MixedPoint> points;
};
struct CacheLevel {
    unsigned level = 0;
    std::string type;  // Data, Unified
    size_t size_bytes = 0;
};
struct Machine {
    std::string cpu_model;
    unsigned cpus = 0;
    std::vector<CacheLevel> caches;  // as cpu0 sees them (sysfs)
};
struct Report {
    Machine machine;
    unsigned workers = 0;
    std::vector<unsigned> worker_lcores;
    double seconds_per_point = 0;
    size_t max_working_set_bytes = 0;
    std::vector<RegionFigures> regions;
    std::optional<Mixed> mixed;
};

// This machine: /proc/cpuinfo's model name, the CPUs, cpu0's caches under /sys.
Machine this_machine();

nlohmann::json to_json(const Report& report);
// Throws std::invalid_argument naming what is missing or of the wrong kind.
Report report_from_json(const nlohmann::json& j);

// The terminal's tables: the facts and, per region, latency by stride and working set, random
// and sequential bandwidth; the mixed pair.
std::string format_report(const Report& report);

}  // namespace linerate::regions
