#pragma once
// kvagg running as a service around the Runtime: the aggregation tables in their region (one per
// worker, or one shared), a kernel per worker, the control thread that answers clients (read,
// status, flush), the /linerate/kvagg/key telemetry command, the dump, the summary and the JSON
// figures. main.cpp only wires.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kvagg/agg_buffer.hpp"
#include "kvagg/figures.hpp"
#include "kvagg/kv_control.hpp"
#include "kvagg/kv_kernel.hpp"
#include "kvagg/options.hpp"
#include "kvagg/redis_export.hpp"
#include "kvagg/results.hpp"
#include "kvagg/worker_link.hpp"
#include "runtime/runtime.hpp"

namespace linerate::kvagg {

// Aggregates on the started runtime until a stop; the process exit status.
int serve(Runtime& runtime, const Options& o);

// The service on one kind of table: AggTable (one per worker) or SharedAggTable (one for all),
// a feature of the runtime: its figures (kvagg/figures.hpp) and JSON reach the runtime's
// outputs by its hooks. A usage error found here (--aggbuf, --state) throws cli::UsageError.
template <class Table>
class KvService : public Feature {
  public:
    static constexpr bool kShared = std::is_same_v<Table, SharedAggTable>;

    KvService(Runtime& runtime, const Options& o);
    KvService(const KvService&) = delete;
    KvService& operator=(const KvService&) = delete;

    // Places the tables, starts the control thread, runs the workers until a stop; the exit
    // status (1 when the tables cannot be placed or the dump cannot be written).
    int run();

  private:
    // What telemetry's key lookup found over the tables.
    struct KeyLookup {
        uint64_t value = 0, found = 0, keys = 0;
    };

    bool place_tables();
    void make_kernels();
    std::optional<StateImage> load_state();
    void start_control(const std::optional<StateImage>& loaded);
    void start_export(const std::optional<StateImage>& loaded);
    void stop_export();
    void write_unexported(const AggResult& merged);
    size_t max_response_frame(uint16_t port, size_t l3_offset) const;
    nlohmann::json key_json(const std::string& params);
    KeyLookup lookup_shared(uint64_t key) const;
    KeyLookup lookup_per_worker(uint64_t key, nlohmann::json& j);
    stats::FigureSet declare_figures() const;
    void write_dump_file(const AggResult& merged);
    void poll(WorkerContext& ctx);

    // Feature: /linerate/kvagg/key, the figures (kvagg/figures.hpp: the JSON, --metrics and the
    // summary), and after the stop the merge, the dump and the JSON's other keys.
    void register_telemetry() override;
    const stats::FigureSet* figures() const override { return &figure_set_; }
    void workers_stopped() override;
    void add_json(nlohmann::json& j) const override;

    Runtime& runtime_;
    const Options& o_;
    const unsigned workers_;
    std::unique_ptr<AggBuffer> buffer_;
    std::vector<std::unique_ptr<Table>> tables_;
    std::vector<std::unique_ptr<KvKernel<Table>>> kernels_;
    std::unique_ptr<WorkerLink[]> links_;
    size_t mbuf_room_ = 0;          // bytes of one packet buffer
    std::vector<size_t> port_mtu_;  // by port id
    std::unique_ptr<KvControl<Table>> control_;
    RunFigures figures_;
    std::vector<uint64_t> worker_keys_;  // each table's keys at the stop (per-worker tables)
    bool dump_failed_ = false;
    uint64_t loaded_checkpoint_ = 0;  // --state: the checkpoint this run resumed from (0: none)
    // --export: the epochs not acknowledged yet, the thread that exports them, their counters.
    ExportCounters export_counters_;
    std::unique_ptr<ExportBacklog> backlog_;
    std::unique_ptr<ExportThread> exporter_;
    stats::FigureSet figure_set_;
};

}  // namespace linerate::kvagg
