#include "kvagg/serve.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "kvagg/agg_merge.hpp"
#include "kvagg/sink_loop.hpp"
#include "stats/telemetry.hpp"
#include "worker/affinity.hpp"

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

}  // namespace

template <class Table>
KvService<Table>::KvService(Runtime& runtime, const Options& o)
    : runtime_(runtime),
      o_(o),
      workers_(runtime.workers().size()),
      port_mtu_(RTE_MAX_ETHPORTS, 1500),
      worker_keys_(workers_) {}

template <class Table>
int KvService<Table>::run() {
    if (!place_tables()) return 1;
    make_kernels();
    start_control(load_state());
    figure_set_ = declare_figures();
    runtime_.add_feature(*this);
    const int status = runtime_.run([this](WorkerContext& ctx) { poll(ctx); });
    return dump_failed_ ? std::max(status, 1) : status;
}

// The AggBuf in its region on the first port's socket, a table per worker (or one shared).
template <class Table>
bool KvService<Table>::place_tables() {
    const AggConfig cfg = agg_config(o_);
    const size_t slots = AggGeometry::slots_for(cfg);
    try {
        buffer_ = std::make_unique<AggBuffer>(
            runtime_.plan().app_region(kAggbufFlag), slots, kShared ? 1 : workers_,
            runtime_.ports().front()->socket(),
            kShared ? SharedAggTable::column_words(slots, workers_) : 0);
    } catch (const mem::RegionError& e) {
        throw cli::UsageError(std::string("--aggbuf: ") + e.what());
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: {}\n", kApp, e.what());
        return false;
    }
    fmt::print("{}: aggbuf {}\n", kApp, buffer_->describe());
    for (unsigned t = 0; t < buffer_->count(); ++t)
        if constexpr (kShared)  // a column of sums per worker
            tables_.push_back(
                std::make_unique<Table>(buffer_->table(t), cfg, workers_, buffer_->columns(t)));
        else
            tables_.push_back(std::make_unique<Table>(buffer_->table(t), cfg));
    return true;
}

template <class Table>
void KvService<Table>::make_kernels() {
    for (unsigned w = 0; w < workers_; ++w)
        kernels_.push_back(
            std::make_unique<KvKernel<Table>>(*tables_[kShared ? 0 : w], kernel_config(o_), w));
    links_ = std::make_unique<WorkerLink[]>(workers_);
    for (const worker::WorkerSlot& slot : runtime_.workers().slots())
        if (slot.queues.empty()) links_[slot.index].stopped = true;  // it never runs
}

// --state: the file loaded into the tables and windows before any worker runs; a bad file is
// one line and exit 2, a missing one a start from empty.
template <class Table>
std::optional<StateImage> KvService<Table>::load_state() {
    if constexpr (kShared) {
        return std::nullopt;  // Options::check refused --state with --agg shared
    } else {
        if (o_.state.empty()) return std::nullopt;
        std::optional<StateImage> image;
        try {
            image = load_state_file(o_.state, state_layout(o_, workers_));
        } catch (const StateError& e) {
            throw cli::UsageError(
                fmt::format("--state {}: {}; nothing loaded", o_.state, e.what()));
        }
        if (!image) {
            fmt::print("{}: state {}: no such file, starting empty\n", kApp, o_.state);
            return image;
        }
        uint64_t keys = 0, streams = 0;
        for (unsigned w = 0; w < workers_; ++w) {
            tables_[w]->restore(image->workers[w].table);
            kernels_[w]->dup_filter() = image->workers[w].dup;
            keys += image->workers[w].table.size;
            streams += image->workers[w].dup.streams();
        }
        loaded_checkpoint_ = image->checkpoint;
        fmt::print("{}: state {}: checkpoint {} loaded ({} keys, {} streams)\n", kApp, o_.state,
                   image->checkpoint, keys, streams);
        return image;
    }
}

// Service ops: answered by a control thread from every worker's part (kv_control.hpp).
template <class Table>
void KvService<Table>::start_control(const std::optional<StateImage>& loaded) {
    std::vector<typename KvControl<Table>::Worker> parts;
    for (unsigned w = 0; w < workers_; ++w)
        parts.push_back({tables_[kShared ? 0 : w].get(), &kernels_[w]->dup_filter(), &links_[w]});
    mbuf_room_ = rte_pktmbuf_data_room_size(runtime_.pool()) - RTE_PKTMBUF_HEADROOM;
    for (const auto& port : runtime_.ports())
        if (const unsigned mtu = port->mtu()) port_mtu_[port->id()] = mtu;
    control_ = std::make_unique<KvControl<Table>>(
        std::move(parts),
        [this](uint16_t port, size_t l3_offset) { return max_response_frame(port, l3_offset); },
        o_.udp_port);
    if (o_.key) control_->enable_key(*o_.key);
    if (!o_.state.empty()) {
        const char* pause = std::getenv("LINERATE_TEST_CHECKPOINT_PAUSE_MS");  // tests only
        control_->enable_state({.path = o_.state,
                                .period = std::chrono::milliseconds(o_.checkpoint_ms),
                                .layout = state_layout(o_, workers_),
                                .pause = std::chrono::milliseconds(pause ? std::atoi(pause) : 0)});
        if (loaded) control_->restore(*loaded);
    }
    start_export(loaded);
    fmt::print("{}: instance {:#018x}\n", kApp, control_->instance());
    for (const std::string& line : exposure_lines(o_)) fmt::print("{}\n", line);
    // Created by the main lcore's thread, the control thread would inherit its one CPU (the
    // busy worker's in a single-lcore run).
    control_->start([this] { worker::pin_beside_workers(runtime_.workers()); });
}

// --export: the backlog (restored from --state), a first look at the cluster, the exporter's
// thread. A Redis without cluster mode, or one that refuses --export-auth (or wants it), is a
// configuration error (one line, exit 2); a cluster that does not answer yet is waited for while
// kvagg aggregates (one line).
template <class Table>
void KvService<Table>::start_export(const std::optional<StateImage>& loaded) {
    if (o_.export_to.empty()) return;
    backlog_ = std::make_unique<ExportBacklog>(o_.export_backlog, export_counters_);
    if (loaded && loaded->exports.instance != 0) {
        backlog_->restore(loaded->exports);
    } else {
        uint64_t id = 0;
        while (id == 0) id = uint64_t(std::random_device{}()) << 32 | std::random_device{}();
        backlog_->set_instance(id);
    }
    const std::chrono::milliseconds timeout(o_.export_timeout_ms);
    exporter_ = std::make_unique<ExportThread>(*backlog_, parse_redis_seeds(o_.export_to), timeout,
                                               export_counters_, o_.export_auth);
    const std::string id = export_instance_name(backlog_->instance());
    try {
        const size_t primaries = exporter_->connect_now();
        fmt::print(
            "{}: export to Redis Cluster {} ({} primaries) as instance {}, {} epochs to "
            "export\n",
            kApp, o_.export_to, primaries, id, backlog_->size());
    } catch (const RedisRefused& e) {  // not a cluster, or the credentials refused
        throw cli::UsageError(fmt::format("--export: {}", e.what()));
    } catch (const RedisError& e) {
        fmt::print(stderr,
                   "{}: --export: {}; aggregating, epochs wait in the backlog (instance {}) until "
                   "the cluster answers\n",
                   kApp, e.what(), id);
    }
    control_->enable_export(*backlog_, export_counters_, std::chrono::milliseconds(o_.export_ms));
    exporter_->start();
}

// At the stop: the last sums as one more epoch, then a few seconds for Redis to take the
// backlog; what is left stays in --state (said in one line), or without it goes to the
// unexported file (write_unexported).
template <class Table>
void KvService<Table>::stop_export() {
    control_->export_epoch_now();
    exporter_->stop(std::chrono::milliseconds(std::max(2000u, 2 * o_.export_timeout_ms)));
    uint64_t left_sum = 0;
    for (const AggSlot& s : backlog_->sums_left()) left_sum += s.value;
    export_counters_.unexported_sum.store(left_sum, std::memory_order_relaxed);
    if (const size_t left = backlog_->size(); left && !o_.state.empty())
        fmt::print(stderr,
                   "{}: --export: {} epochs not acknowledged by Redis at the stop: kept in "
                   "--state {}\n",
                   kApp, left, o_.state);
}

// --export without --state, at the stop: the sums Redis did not take (the backlog's epochs and
// what the tables still hold, when the backlog was full) per key in --dump's FILE, else in the
// --json FILE's name + ".unexported", else ./kvagg.unexported; one line names it.
template <class Table>
void KvService<Table>::write_unexported(const AggResult& merged) {
    std::vector<AggSlot> all = backlog_->sums_left();
    for (const KeySum& ks : merged.sums) all.push_back({ks.key, ks.sum});
    AggResult left;
    for (const AggSlot& s : sum_per_key(std::move(all))) left.sums.push_back({s.key, s.value});
    if (left.sums.empty() && o_.dump.empty()) return;
    const std::string& json = runtime_.options().json_path;
    const std::string path = !o_.dump.empty() ? o_.dump
                             : !json.empty()  ? json + ".unexported"
                                              : std::string("kvagg.unexported");
    try {
        write_dump(path, left.sums);
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: error: {}: {} sums Redis did not take are lost\n", kApp, e.what(),
                   left.sums.size());
        dump_failed_ = true;
        return;
    }
    const ExportImage image = backlog_->image();
    if (left.sums.empty())
        fmt::print("{}: dump 0 keys to {}\n", kApp, path);
    else if (image.epochs.empty())  // the backlog was full: the tables kept them
        fmt::print(stderr,
                   "{}: --export: no --state: the {} sums Redis did not take are in {} "
                   "(key,value lines)\n",
                   kApp, left.sums.size(), path);
    else
        fmt::print(stderr,
                   "{}: --export: epochs {}-{} of instance {} not acknowledged by Redis at the "
                   "stop, no --state: the {} sums Redis did not take are in {} (key,value "
                   "lines)\n",
                   kApp, image.epochs.front()->epoch, image.epochs.back()->epoch,
                   export_instance_name(image.instance), left.sums.size(), path);
}

template <class Table>
size_t KvService<Table>::max_response_frame(uint16_t port, size_t l3_offset) const {
    return std::min(mbuf_room_, l3_offset + port_mtu_[port % RTE_MAX_ETHPORTS]);
}

template <class Table>
void KvService<Table>::register_telemetry() {
    stats::register_telemetry(
        "/linerate/kvagg/key",
        "One key's value (params: the key, decimal or 0x hex) summed over the tables, and the "
        "tables' totals",
        [this](const std::string& params) { return key_json(params); });
}

template <class Table>
nlohmann::json KvService<Table>::key_json(const std::string& params) {
    const std::optional<uint64_t> key = parse_key(params);
    if (!key) return {{"error", "params must be a key: decimal or 0x hex u64"}};
    nlohmann::json j = {{"key", *key}, {"agg", agg_mode_name(o_.agg)}};
    const KeyLookup found = kShared ? lookup_shared(*key) : lookup_per_worker(*key, j);
    uint64_t value_sum = 0, overflow = 0;
    for (unsigned w = 0; w < workers_; ++w) {
        value_sum += links_[w].value_sum.load(std::memory_order_relaxed);
        overflow += links_[w].overflow_sum.load(std::memory_order_relaxed);
    }
    const stats::Totals t = runtime_.stats().totals();
    j["found"] = found.found;
    j["value"] = found.value;
    j["keys"] = found.keys;
    j["aggregated_sum"] = value_sum;
    j["overflow_sum"] = overflow;
    j["tuples"] = t.app[unsigned(AppCounter::tuples)];
    j["overflow"] = t.app[unsigned(AppCounter::overflow_tuples)];
    return j;
}

// The shared table is read here with atomic loads.
template <class Table>
typename KvService<Table>::KeyLookup KvService<Table>::lookup_shared(uint64_t key) const {
    const std::optional<uint64_t> v = lookup(*tables_[0], key);
    return {.value = v.value_or(0), .found = v.has_value(), .keys = tables_[0]->size()};
}

// Each per-worker table is read by its own worker between bursts (worker_link.hpp).
template <class Table>
typename KvService<Table>::KeyLookup KvService<Table>::lookup_per_worker(uint64_t key,
                                                                         nlohmann::json& j) {
    KeyLookup sum;
    uint64_t unanswered = 0;
    std::vector<uint64_t> per_value, per_found, per_keys;
    for (unsigned w = 0; w < workers_; ++w) {
        const auto a = ask(links_[w], *tables_[w], key, kQueryTimeout);
        unanswered += !a.has_value();
        per_value.push_back(a && *a ? **a : 0);
        per_found.push_back(a && *a);
        per_keys.push_back(links_[w].keys.load(std::memory_order_relaxed));
        sum.value += per_value.back();
        sum.found |= per_found.back();
        sum.keys += per_keys.back();
    }
    j["workers_value"] = per_value;
    j["workers_found"] = per_found;
    j["workers_keys"] = per_keys;
    j["unanswered_workers"] = unanswered;
    j["note"] =
        "value: sum over per-worker tables, each read by its own worker; keys: per table "
        "(distinct: final JSON)";
    return sum;
}

// The service counters (atomics of the control thread) and what each worker publishes once per
// burst (WorkerLink: its table's key count, its duplicate window's gaps), read live beside the
// workers; at the end the JSON reads the kernels' own figures.
template <class Table>
stats::FigureSet KvService<Table>::declare_figures() const {
    FigureSources s{
        .run = figures_,
        .control = control_->counters(),
        .links = links_.get(),
        .kernel = [this](unsigned w) { return kernels_[w]->counters(); },
        .gaps = [this](unsigned w) { return kernels_[w]->dup_filter().gaps(); },
        .table_keys = kShared ? nullptr : &worker_keys_,
    };
    if (!o_.state.empty()) {
        s.state = &control_->state_counters();
        s.state_path = &o_.state;
        s.loaded_checkpoint = &loaded_checkpoint_;
    }
    if (!o_.export_to.empty()) {
        s.exports = &export_counters_;
        s.cluster = [this] { return exporter_ ? &exporter_->cluster_counters() : nullptr; };
    }
    return kvagg_figures(s);
}

// After the workers stopped: the tables merged into the run's figures, then the dump.
template <class Table>
void KvService<Table>::workers_stopped() {
    control_->stop();
    if (exporter_) stop_export();
    control_->checkpoint_now();  // the last sums: a clean stop loses nothing
    figures_.seconds = runtime_.elapsed_s();
    std::vector<AggView> views;
    for (const auto& t : tables_) views.push_back(t->view());
    const AggResult merged = merge_tables(views);
    for (unsigned w = 0; w < workers_; ++w) {
        figures_.totals += kernels_[w]->counters();
        figures_.gaps += kernels_[w]->dup_filter().gaps();
        worker_keys_[w] = kShared ? 0 : tables_[w]->size();
    }
    figures_.keys = merged.sums.size();
    figures_.aggregated_sum = merged.total;
    if (exporter_ && o_.state.empty())
        write_unexported(merged);  // into --dump's FILE when given
    else if (!o_.dump.empty())
        write_dump_file(merged);
}

template <class Table>
void KvService<Table>::write_dump_file(const AggResult& merged) {
    try {
        write_dump(o_.dump, merged.sums);
        fmt::print("{}: dump {} keys to {}\n", kApp, merged.sums.size(), o_.dump);
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: error: {}\n", kApp, e.what());
        dump_failed_ = true;
    }
}

// The JSON's keys that are not figures: the configuration and the identities.
template <class Table>
void KvService<Table>::add_json(nlohmann::json& j) const {
    j["agg"] = agg_mode_name(o_.agg);
    j["index"] = index_name(o_.index);
    j["aggbuf"] = buffer_->placement();
    j["aggbuf_bytes"] = buffer_->count() * buffer_->table_bytes();
    j["kvagg"] = config_json(o_);
    j["instance"] = control_->instance();
    if (exporter_) j["export"]["instance"] = export_instance_name(backlog_->instance());
}

template <class Table>
void KvService<Table>::poll(WorkerContext& ctx) {
    SinkLoop<Table> loop(*kernels_[ctx.slot.index], links_[ctx.slot.index], *control_,
                         runtime_.pool(), o_.udp_port);
    loop.run(ctx);
}

template class KvService<AggTable>;
template class KvService<SharedAggTable>;

int serve(Runtime& runtime, const Options& o) {
    if (o.agg == AggMode::shared) return KvService<SharedAggTable>(runtime, o).run();
    return KvService<AggTable>(runtime, o).run();
}

}  // namespace linerate::kvagg
