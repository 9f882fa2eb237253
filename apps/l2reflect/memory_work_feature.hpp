#pragma once
// l2reflect's memory work on a run (--touch, --lookups): the lookup buffer in its region
// (--lookup-region), each worker's tally, and what the run reports of them (the JSON's
// configuration, each worker's sums). Each worker gets its kernel's work, chosen once
// (with_frame_work): the kinds of work are template parameters of FrameMemoryWork.
#include <rte_config.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "l2reflect/memory_work.hpp"
#include "l2reflect/memory_work_options.hpp"
#include "mem/placed_buffer.hpp"
#include "runtime/feature.hpp"
#include "runtime/runtime.hpp"

namespace linerate::l2reflect {

class MemoryWorkFeature : public Feature {
  public:
    // Places and fills the lookup buffer when there are lookups. Throws mem::RegionError (bad
    // region) or std::runtime_error (no memory).
    MemoryWorkFeature(const MemoryWorkOptions& o, const mem::RegionSpec& lookup_region,
                      int default_socket, unsigned workers);

    // Calls run(work) with worker `w`'s FrameMemoryWork of the options' kinds.
    template <class Run>
    void with_frame_work(unsigned w, Run&& run) {
        const bool touch = o_.touch_pct > 0;
        switch (o_.kind()) {
            case LookupKind::none:
                return touch ? call<true, LookupKind::none>(w, run) : void();
            case LookupKind::dependent:
                return touch ? call<true, LookupKind::dependent>(w, run)
                             : call<false, LookupKind::dependent>(w, run);
            case LookupKind::independent:
                return touch ? call<true, LookupKind::independent>(w, run)
                             : call<false, LookupKind::independent>(w, run);
        }
    }

    const MemoryTally& tally(unsigned w) const { return tallies_[w].tally; }
    const stats::FigureSet* figures() const override { return &figures_; }
    void add_json(nlohmann::json& j) const override;
    std::string summary() const override;

  private:
    template <bool kTouch, LookupKind kLookup, class Run>
    void call(unsigned w, Run& run) {
        FrameMemoryWork<kTouch, kLookup> work(o_.touch_pct, o_.lookups, chain_, start(w),
                                              tallies_[w].tally);
        run(work);
    }
    // Worker w's first slot of the chain (dependent) or its generator's seed (independent).
    uint64_t start(unsigned w) const;
    stats::FigureSet declare_figures() const;

    // A tally per cache line: workers never share one.
    struct alignas(RTE_CACHE_LINE_SIZE) WorkerTally {
        MemoryTally tally;
    };

    const MemoryWorkOptions o_;
    std::unique_ptr<mem::PlacedBuffer> buffer_;  // none without lookups
    std::span<uint64_t> chain_;
    std::vector<WorkerTally> tallies_;
    stats::FigureSet figures_;
};

// The run's memory work, added to `runtime` as its feature, or none when the options are off.
// Its lookup buffer's placement is printed; a region that cannot be made is a usage error
// (cli::UsageError), no memory there an error (std::runtime_error).
std::unique_ptr<MemoryWorkFeature> start_memory_work(Runtime& runtime, const MemoryWorkOptions& o);

}  // namespace linerate::l2reflect
