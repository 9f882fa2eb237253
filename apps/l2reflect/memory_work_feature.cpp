#include "l2reflect/memory_work_feature.hpp"

#include <fmt/core.h>

#include <stdexcept>
#include <string>

#include "mem/pointer_chain.hpp"

namespace linerate::l2reflect {

namespace {

constexpr uint64_t kChainSeed = 0x9e3779b97f4a7c15;

}  // namespace

MemoryWorkFeature::MemoryWorkFeature(const MemoryWorkOptions& o,
                                     const mem::RegionSpec& lookup_region, int default_socket,
                                     unsigned workers)
    : o_(o), tallies_(workers) {
    if (o_.lookups > 0) {
        buffer_ = std::make_unique<mem::PlacedBuffer>(lookup_region, o_.lookup_buffer_bytes,
                                                      "l2reflect_lookup", default_socket,
                                                      "lookup buffer");
        chain_ = {static_cast<uint64_t*>(buffer_->data()), o_.lookup_slots()};
        mem::make_cyclic_chain(chain_, kChainSeed);
    }
    figures_ = declare_figures();
}

uint64_t MemoryWorkFeature::start(unsigned w) const {
    if (o_.kind() == LookupKind::independent) return (kChainSeed + w) | 1;
    // Workers spread evenly over the cycle's slots (any slot is on the one cycle).
    return chain_.empty() ? 0 : uint64_t(w) * (chain_.size() / tallies_.size());
}

stats::FigureSet MemoryWorkFeature::declare_figures() const {
    using stats::Figure;
    using stats::FigureReading;
    auto read = [this](uint64_t MemoryTally::*field) {
        return [this, field](unsigned w) { return FigureReading{tally(w).*field}; };
    };
    stats::FigureSet set;
    if (o_.touch_pct > 0) {
        set.figures.push_back(
            {.json = "touch_sum", .per_worker = true, .read_final = read(&MemoryTally::touch_sum)});
        set.figures.push_back({.json = "touched_bytes",
                               .text = "touched bytes",
                               .per_worker = true,
                               .read_final = read(&MemoryTally::touched_bytes)});
    }
    if (o_.lookups > 0) {
        set.figures.push_back({.json = "lookup_sum",
                               .per_worker = true,
                               .read_final = read(&MemoryTally::lookup_sum)});
        set.figures.push_back({.json = "lookups",
                               .text = "lookups",
                               .per_worker = true,
                               .read_final = read(&MemoryTally::lookups)});
    }
    return set;
}

void MemoryWorkFeature::add_json(nlohmann::json& j) const {
    nlohmann::json& m = j["memory_work"];
    m["touch_pct"] = o_.touch_pct;
    m["lookups"] = o_.lookups;
    if (o_.lookups == 0) return;
    m["lookup_kind"] = lookup_kind_name(o_.lookup_kind);
    m["lookup_buffer_bytes"] = o_.lookup_buffer_bytes;
    m["lookup_region"] = buffer_->placement();
}

std::string MemoryWorkFeature::summary() const {
    if (!buffer_) return {};
    return fmt::format("  lookup buffer {}, {} {} lookups per frame, {}",
                       mem::format_bytes(double(o_.lookup_buffer_bytes)), o_.lookups,
                       lookup_kind_name(o_.lookup_kind), buffer_->placement());
}

std::unique_ptr<MemoryWorkFeature> start_memory_work(Runtime& runtime, const MemoryWorkOptions& o) {
    if (!o.on()) return nullptr;
    std::unique_ptr<MemoryWorkFeature> work;
    try {
        work = std::make_unique<MemoryWorkFeature>(o, runtime.plan().app_region(kLookupRegionFlag),
                                                   runtime.ports().front()->socket(),
                                                   runtime.workers().size());
    } catch (const mem::RegionError& e) {
        throw cli::UsageError(std::string(kLookupRegionFlag) + ": " + e.what());
    } catch (const std::runtime_error& e) {
        // The size or the place the user chose does not fit this machine: theirs to change.
        throw cli::UsageError(std::string(e.what()) +
                              " (a smaller --lookup-buffer, more memory or another " +
                              kLookupRegionFlag + ")");
    }
    if (std::string line = work->summary(); !line.empty())
        fmt::print("l2reflect:{}\n", line.substr(1));
    runtime.add_feature(*work);
    return work;
}

}  // namespace linerate::l2reflect
