#include "kvagg/serve.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "kvagg/agg_buffer.hpp"
#include "kvagg/agg_merge.hpp"
#include "kvagg/results.hpp"
#include "kvagg/sink_loop.hpp"
#include "kvagg/worker_link.hpp"
#include "stats/telemetry.hpp"

namespace linerate::kvagg {

namespace {

constexpr const char* kApp = "kvagg";

// How long telemetry waits for a busy worker to answer between two bursts.
constexpr auto kQueryTimeout = std::chrono::milliseconds(200);

std::optional<uint64_t> parse_key(const std::string& text) {
    std::string_view s = text;
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s.remove_prefix(2);
        base = 16;
    }
    uint64_t key = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), key, base);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return key;
}

template <class Table>
int serve_with(Runtime& runtime, const Options& o) {
    constexpr bool kShared = std::is_same_v<Table, SharedAggTable>;
    const AggConfig cfg = agg_config(o);
    const unsigned workers = runtime.workers().size();

    std::unique_ptr<AggBuffer> buffer;
    try {
        buffer = std::make_unique<AggBuffer>(runtime.regions().resolve(o.aggbuf),
                                             AggGeometry::slots_for(cfg), kShared ? 1 : workers,
                                             runtime.ports().front()->socket());
    } catch (const mem::RegionError& e) {
        cli::usage_error(kApp, std::string("--aggbuf: ") + e.what());
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: {}\n", kApp, e.what());
        return 1;
    }
    fmt::print("{}: aggbuf {}\n", kApp, buffer->describe());

    std::vector<std::unique_ptr<Table>> tables;
    for (unsigned t = 0; t < buffer->count(); ++t)
        tables.push_back(std::make_unique<Table>(buffer->table(t), cfg));
    std::vector<std::unique_ptr<KvKernel<Table>>> kernels;
    for (unsigned w = 0; w < workers; ++w)
        kernels.push_back(
            std::make_unique<KvKernel<Table>>(*tables[kShared ? 0 : w], kernel_config(o)));
    auto links = std::make_unique<WorkerLink[]>(workers);
    for (const worker::WorkerSlot& slot : runtime.workers().slots())
        if (slot.queues.empty()) links[slot.index].stopped = true;  // it never runs

    // Service ops: answered by a control thread from every worker's part (kv_control.hpp).
    std::vector<typename KvControl<Table>::Worker> control_workers;
    for (unsigned w = 0; w < workers; ++w)
        control_workers.push_back(
            {tables[kShared ? 0 : w].get(), &kernels[w]->dup_filter(), &links[w]});
    const size_t mbuf_room = rte_pktmbuf_data_room_size(runtime.pool()) - RTE_PKTMBUF_HEADROOM;
    std::vector<size_t> port_mtu(RTE_MAX_ETHPORTS, 1500);
    for (const auto& port : runtime.ports()) {
        uint16_t mtu = 0;
        if (rte_eth_dev_get_mtu(port->id(), &mtu) == 0) port_mtu[port->id()] = mtu;
    }
    KvControl<Table> control(
        std::move(control_workers),
        [&](uint16_t port, size_t l3_offset) {
            return std::min(mbuf_room, l3_offset + port_mtu[port % RTE_MAX_ETHPORTS]);
        },
        o.udp_port);
    // The control thread is created by the main lcore's thread and would inherit its one-CPU
    // affinity (the busy worker's CPU in a single-lcore run): it runs on the CPUs no worker
    // polls, or on all of them when the workers take every CPU.
    control.start([&runtime] {
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        for (unsigned c = 0; c < unsigned(CPU_SETSIZE) && c < std::thread::hardware_concurrency();
             ++c)
            CPU_SET(c, &cpus);
        cpu_set_t free_cpus = cpus;
        for (const worker::WorkerSlot& slot : runtime.workers().slots())
            CPU_CLR(rte_lcore_to_cpu_id(int(slot.lcore)), &free_cpus);
        const cpu_set_t& use = CPU_COUNT(&free_cpus) ? free_cpus : cpus;
        pthread_setaffinity_np(pthread_self(), sizeof use, &use);
    });

    stats::register_telemetry(
        "/linerate/kvagg/key",
        "One key's value (params: the key, decimal or 0x hex) summed over the tables, and the "
        "tables' totals",
        [&](const std::string& params) -> nlohmann::json {
            const std::optional<uint64_t> key = parse_key(params);
            if (!key) return {{"error", "params must be a key: decimal or 0x hex u64"}};
            nlohmann::json j = {{"key", *key}, {"agg", agg_mode_name(o.agg)}};
            uint64_t value = 0, found = 0, unanswered = 0, keys = 0, value_sum = 0, overflow = 0;
            std::vector<uint64_t> per_value, per_found, per_keys;
            for (unsigned w = 0; w < workers; ++w) {
                value_sum += links[w].value_sum.load(std::memory_order_relaxed);
                overflow += links[w].overflow_sum.load(std::memory_order_relaxed);
            }
            if constexpr (kShared) {
                const std::optional<uint64_t> v = tables[0]->find_live(*key);
                value = v.value_or(0);
                found = v.has_value();
                keys = tables[0]->size();
            } else {
                for (unsigned w = 0; w < workers; ++w) {
                    const auto a = ask(links[w], *tables[w], *key, kQueryTimeout);
                    unanswered += !a.has_value();
                    const uint64_t v = a && *a ? **a : 0;
                    per_value.push_back(v);
                    per_found.push_back(a && *a);
                    per_keys.push_back(links[w].keys.load(std::memory_order_relaxed));
                    value += v;
                    found |= a && *a;
                    keys += per_keys.back();
                }
                j["workers_value"] = per_value;
                j["workers_found"] = per_found;
                j["workers_keys"] = per_keys;
                j["unanswered_workers"] = unanswered;
                j["note"] =
                    "value: sum over per-worker tables, each read by its own worker; keys: per "
                    "table (distinct: final JSON)";
            }
            const stats::Totals t = runtime.stats().totals();
            j["found"] = found;
            j["value"] = value;
            j["keys"] = keys;
            j["aggregated_sum"] = value_sum;
            j["overflow_sum"] = overflow;
            j["tuples"] = t.app[unsigned(AppCounter::tuples)];
            j["overflow"] = t.app[unsigned(AppCounter::overflow_tuples)];
            return j;
        });

    RunFigures figures;
    bool dump_failed = false;
    std::vector<uint64_t> worker_keys(workers);
    const auto t0 = std::chrono::steady_clock::now();
    runtime.on_stopped([&] {
        control.stop();
        figures.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::vector<AggView> views;
        for (const auto& t : tables) views.push_back(t->view());
        const AggResult merged = merge_tables(views);
        for (unsigned w = 0; w < workers; ++w) {
            figures.totals += kernels[w]->counters();
            worker_keys[w] = kShared ? 0 : tables[w]->size();
        }
        figures.keys = merged.sums.size();
        figures.aggregated_sum = merged.total;
        if (o.dump.empty()) return;
        try {
            write_dump(o.dump, merged.sums);
            fmt::print("{}: dump {} keys to {}\n", kApp, merged.sums.size(), o.dump);
        } catch (const std::exception& e) {
            fmt::print(stderr, "{}: error: {}\n", kApp, e.what());
            dump_failed = true;
        }
    });
    runtime.add_summary([&] { return figures_line(figures); });
    runtime.add_json([&](nlohmann::json& j) {
        figures.seconds = j["duration_s"].get<double>();  // the rate of the JSON's own duration
        j.update(figures_json(figures));
        j["agg"] = agg_mode_name(o.agg);
        j["index"] = index_name(o.index);
        j["aggbuf"] = buffer->placement();
        j["aggbuf_bytes"] = buffer->count() * buffer->table_bytes();
        j["kvagg"] = config_json(o);
        const ControlCounters& cc = control.counters();
        j["service"] = {{"reads", cc.reads.load()},
                        {"statuses", cc.statuses.load()},
                        {"flushes", cc.flushes.load()},
                        {"flushed_sum", cc.flushed_sum.load()},
                        {"flush_repeats", cc.flush_repeats.load()}};
        for (unsigned w = 0; w < workers && w < j["workers"].size(); ++w) {
            const KvCounters& c = kernels[w]->counters();
            j["workers"][w]["overflow_sum"] = c.overflow_sum;
            j["workers"][w]["aggregated_sum"] = c.value_sum;
            if (!kShared) j["workers"][w]["keys"] = worker_keys[w];
        }
    });

    const int status = runtime.run([&](WorkerContext& ctx) {
        SinkLoop<Table> loop(*kernels[ctx.slot.index], links[ctx.slot.index], control,
                             runtime.pool(), o.udp_port);
        loop.run(ctx);
    });
    return dump_failed ? std::max(status, 1) : status;
}

}  // namespace

void precheck_aggbuf(const cli::CommonOptions& common, const Options& o) {
    try {
        mem::RegionCatalog catalog;
        if (!common.regions_file.empty()) catalog.load_file(common.regions_file);
        for (const auto& def : common.region_defs) catalog.define(def);
        mem::check_region_file(catalog.resolve(o.aggbuf));
    } catch (const std::invalid_argument& e) {
        cli::usage_error(kApp, std::string("--aggbuf: ") + e.what());
    }
}

int serve(Runtime& runtime, const Options& o) {
    if (o.agg == AggMode::shared) return serve_with<SharedAggTable>(runtime, o);
    return serve_with<AggTable>(runtime, o);
}

}  // namespace linerate::kvagg
