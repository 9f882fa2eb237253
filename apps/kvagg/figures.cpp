#include "kvagg/figures.hpp"

#include <atomic>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>

namespace linerate::kvagg {

namespace {

using stats::Figure;
using stats::FigureKind;
using stats::FigureReading;
using Reader = std::function<FigureReading(unsigned)>;

Reader atomic(const std::atomic<uint64_t>& a) {
    return [&a](unsigned) { return FigureReading{a.load()}; };
}

// The run's totals after the merge: the JSON's top-level keys and the summary's line.
std::vector<Figure> run_figures(const RunFigures& r) {
    const auto total = [&r](const char* json, const char* text, auto read) {
        return Figure{.json = json, .text = text, .read_final = [&r, read](unsigned) {
                          return FigureReading{read(r)};
                      }};
    };
    return {
        total("tuples", "tuples", [](const RunFigures& f) { return f.tuples(); }),
        total("mtuples_per_s", "Mtuples/s", [](const RunFigures& f) { return f.mtuples_per_s(); }),
        total("keys", "keys", [](const RunFigures& f) { return f.keys; }),
        total("overflow", "overflow",
              [](const RunFigures& f) { return f.totals.tuples_overflowed(); }),
        total("overflow_sum", "overflow sum",
              [](const RunFigures& f) { return f.totals.overflow_sum; }),
        total("aggregated_sum", "aggregated sum",
              [](const RunFigures& f) { return f.aggregated_sum; }),
        total("duplicates", "duplicates",
              [](const RunFigures& f) { return f.totals[KvVerdict::duplicate]; }),
        total("stale", "", [](const RunFigures& f) { return f.totals[KvVerdict::stale]; }),
        total("gaps_opened", "", [](const RunFigures& f) { return f.gaps.opened; }),
        total("gaps_filled", "", [](const RunFigures& f) { return f.gaps.filled; }),
    };
}

// One --metrics family with a `kind` label over control counters, a JSON key each:
// {json key, kind, counter}.
void add_by_kind(
    std::vector<Figure>& f, const char* metric, const char* help,
    std::initializer_list<std::tuple<const char*, const char*, const std::atomic<uint64_t>*>>
        counters) {
    for (auto [json, kind, n] : counters)
        f.push_back({.json = json,
                     .metric = metric,
                     .help = help,
                     .labels = {{"kind", kind}},
                     .read_live = atomic(*n),
                     .read_final = atomic(*n)});
}

// Counters read at the end alone (the JSON, no metric): {json key, counter}.
void add_final(
    std::vector<Figure>& f,
    std::initializer_list<std::pair<const char*, const std::atomic<uint64_t>*>> counters) {
    for (auto [json, a] : counters) f.push_back({.json = json, .read_final = atomic(*a)});
}

// The requests by kind and the error replies by kind, and the flush figures (JSON only).
std::vector<Figure> service_figures(const ControlCounters& cc) {
    std::vector<Figure> f;
    add_by_kind(f, "linerate_kvagg_service_requests_total",
                "Control requests the service thread answered, by kind",
                {{"service.reads", "read", &cc.reads},
                 {"service.statuses", "status", &cc.statuses},
                 {"service.flushes", "flush", &cc.flushes}});
    add_final(f, {{"service.flushed_sum", &cc.flushed_sum},
                  {"service.flush_repeats", &cc.flush_repeats},
                  {"service.flush_replayed", &cc.flush_replayed}});
    add_by_kind(f, "linerate_kvagg_error_replies_total",
                "Error replies to refused requests: sent, or not sent (rate limit)",
                {{"service.error_replies", "sent", &cc.error_replies},
                 {"service.error_replies_limited", "limited", &cc.error_replies_limited}});
    return f;
}

// A worker's duplicate window's gaps: live from its link, final from its kernel.
Figure gaps_figure(const FigureSources& s, const char* json, const char* metric, const char* help,
                   std::atomic<uint64_t> WorkerLink::*live, uint64_t SeqGaps::*final) {
    const WorkerLink* links = s.links;
    return {
        .json = json,
        .metric = metric,
        .help = help,
        .per_worker = true,
        .read_live = [links, live](unsigned w) { return FigureReading{(links[w].*live).load()}; },
        .read_final = [gaps = s.gaps, final](unsigned w) { return FigureReading{gaps(w).*final}; }};
}

// What each worker publishes once per burst (WorkerLink), and its kernel's sums at the end.
std::vector<Figure> worker_figures(const FigureSources& s) {
    const WorkerLink* links = s.links;
    const std::vector<uint64_t>* table_keys = s.table_keys;
    const auto kernel_sum = [kernel = s.kernel](const char* json, uint64_t KvCounters::*sum) {
        return Figure{.json = json, .per_worker = true, .read_final = [kernel, sum](unsigned w) {
                          return FigureReading{kernel(w).*sum};
                      }};
    };
    return {
        {.kind = FigureKind::gauge,
         .json = "keys",
         .metric = "linerate_kvagg_keys",
         .help = "Distinct keys in the worker's table (shared: all of them)",
         .per_worker = true,
         .read_live = [links](unsigned w) { return FigureReading{links[w].keys.load()}; },
         .read_final = table_keys ? Reader([table_keys](unsigned w) {
             return FigureReading{(*table_keys)[w]};
         })
                                  : nullptr},
        gaps_figure(s, "gaps_opened", "linerate_kvagg_gaps_opened_total",
                    "Sequence numbers its streams jumped over (a higher one arrived first)",
                    &WorkerLink::gaps_opened, &SeqGaps::opened),
        gaps_figure(s, "gaps_filled", "linerate_kvagg_gaps_filled_total",
                    "Sequence numbers jumped over that arrived later (accepted late)",
                    &WorkerLink::gaps_filled, &SeqGaps::filled),
        kernel_sum("overflow_sum", &KvCounters::overflow_sum),
        kernel_sum("aggregated_sum", &KvCounters::value_sum),
    };
}

// --state: the file, the checkpoint resumed from, the checkpoints' counters (JSON `state`).
std::vector<Figure> state_figures(const FigureSources& s) {
    const StateCounters& c = *s.state;
    std::vector<Figure> f = {
        {.json = "state.path",
         .read_final = [path = s.state_path](unsigned) { return FigureReading{*path}; }},
        {.json = "state.loaded_checkpoint",
         .read_final = [n = s.loaded_checkpoint](unsigned) { return FigureReading{*n}; }},
    };
    add_final(f, {{"state.checkpoints", &c.checkpoints},
                  {"state.failures", &c.failures},
                  {"state.last_checkpoint", &c.last_checkpoint},
                  {"state.last_bytes", &c.last_bytes},
                  {"state.last_us", &c.last_us},
                  {"state.last_copy_us", &c.last_copy_us},
                  {"state.max_copy_us", &c.max_copy_us},
                  {"state.copy_total_us", &c.copy_total_us}});
    return f;
}

Figure export_total(std::string json, std::string metric, std::string help,
                    const std::atomic<uint64_t>& a) {
    return {.json = std::move(json),
            .metric = std::move(metric),
            .help = std::move(help),
            .read_live = atomic(a),
            .read_final = atomic(a)};
}

// --export's counters (ExportCounters) and the cluster client's.
std::vector<Figure> export_figures(const FigureSources& s) {
    const ExportCounters& c = *s.exports;
    std::vector<Figure> f = {
        export_total("export.epochs", "linerate_kvagg_export_epochs_total",
                     "Epochs Redis acknowledged", c.epochs),
        export_total("export.keys", "linerate_kvagg_export_keys_total",
                     "Key deltas in the acknowledged epochs", c.keys),
        export_total("export.errors", "linerate_kvagg_export_errors_total",
                     "Export tries that failed (unreachable, error reply) and were retried",
                     c.errors),
        export_total("export.already_applied", "linerate_kvagg_export_already_applied_total",
                     "Partition batches Redis had applied before (a retry or a restart): not "
                     "applied twice",
                     c.already),
        export_total("export.backlog_full", "linerate_kvagg_export_backlog_full_total",
                     "Export periods skipped because the backlog was full", c.backlog_full),
        export_total("export.held", "linerate_kvagg_export_held_total",
                     "Key deltas held apart in kvagg:{pP}:held: their field was not an integer",
                     c.held),
        export_total("export.held_fields", "linerate_kvagg_export_held_fields",
                     "Fields waiting in the held hashes at the last look", c.held_fields),
        export_total("export.backlog", "linerate_kvagg_export_backlog_epochs",
                     "Epochs Redis has not acknowledged yet", c.backlog),
    };
    f.back().kind = FigureKind::gauge;
    f[f.size() - 2].kind = FigureKind::gauge;
    add_final(f, {{"export.applied", &c.applied},
                  {"export.released", &c.released},
                  {"export.unexported_sum", &c.unexported_sum},
                  {"export.taken_sum", &c.taken_sum},
                  {"export.wait_short", &c.wait_short},
                  {"export.last_export_us", &c.last_export_us}});
    for (auto [key, field] : {std::pair{"export.moved", &ClusterCounters::moved},
                              {"export.ask", &ClusterCounters::ask},
                              {"export.connects", &ClusterCounters::connects},
                              {"export.slot_maps", &ClusterCounters::slot_maps}})
        f.push_back({.json = key, .read_final = [cluster = s.cluster, field](unsigned) {
                         const ClusterCounters* cc = cluster ? cluster() : nullptr;
                         return FigureReading{cc ? (cc->*field).load() : uint64_t(0)};
                     }});
    return f;
}

}  // namespace

stats::FigureSet kvagg_figures(const FigureSources& s) {
    stats::FigureSet set{"", "", run_figures(s.run)};
    for (auto part : {service_figures(s.control), worker_figures(s),
                      s.state ? state_figures(s) : std::vector<Figure>{},
                      s.exports ? export_figures(s) : std::vector<Figure>{}})
        set.figures.insert(set.figures.end(), part.begin(), part.end());
    return set;
}

}  // namespace linerate::kvagg
