#pragma once
// kvagg's figures, each declared once (stats/figures.hpp): the run's totals after the merge, the
// service counters, each worker's table and duplicate window, --state's checkpoints and
// --export's counters. The runtime writes them to the final JSON, --metrics and the summary.
// No EAL: unit tests hold docs/json.md and docs/metrics.md to these declarations.
#include <cstdint>
#include <functional>
#include <vector>

#include "kvagg/checkpointer.hpp"
#include "kvagg/export_backlog.hpp"
#include "kvagg/kv_control.hpp"
#include "kvagg/redis_cluster.hpp"
#include "kvagg/results.hpp"
#include "kvagg/worker_link.hpp"
#include "stats/figures.hpp"

namespace linerate::kvagg {

// What kvagg's figures read. Live: the atomics (counters, each worker's link); final (after the
// workers stopped): `run`, the kernels' own counters and windows, each table's keys.
struct FigureSources {
    const RunFigures& run;
    const ControlCounters& control;
    const WorkerLink* links;                     // one per worker
    std::function<KvCounters(unsigned)> kernel;  // worker w's kernel's counters, after the stop
    std::function<SeqGaps(unsigned)> gaps;       // worker w's duplicate window's, after the stop
    const std::vector<uint64_t>* table_keys;     // each table's keys at the stop; null: shared
    // --state: its counters, file and resumed checkpoint (null: no --state).
    const StateCounters* state = nullptr;
    const std::string* state_path = nullptr;
    const uint64_t* loaded_checkpoint = nullptr;
    // --export: its counters and the cluster client's (null until the client is made).
    const ExportCounters* exports = nullptr;
    std::function<const ClusterCounters*()> cluster = nullptr;
};

stats::FigureSet kvagg_figures(const FigureSources& s);

}  // namespace linerate::kvagg
