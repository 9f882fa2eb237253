#pragma once
// The AggBuf: the aggregation table(s) placed in a memory region (--aggbuf). One region holds
// every table (one per worker, or the one shared table); each table is an rte_zmalloc_socket
// on the region's heap (mem::PlacedBuffer), so socket:N lands on DPDK's hugepage heap of node N
// and pages:4k, pages:thp, file:... on the external heap the region adds. Needs the EAL.
#include <cstddef>
#include <span>
#include <string>

#include "kvagg/agg_table.hpp"
#include "mem/placed_buffer.hpp"

namespace linerate::kvagg {

class AggBuffer {
  public:
    // `count` tables of `slots` slots each, each followed by `column_words` u64 words (the shared
    // table's writers' columns, SharedAggTable::column_words). default_socket stands for
    // socket:-1 (the port's node). Throws mem::RegionError (bad region or file) or
    // std::runtime_error (no memory).
    AggBuffer(const mem::RegionSpec& spec, size_t slots, unsigned count, int default_socket,
              size_t column_words = 0, const std::string& heap_name = "kvagg_aggbuf");

    std::span<AggSlot> table(unsigned i) const {
        return {static_cast<AggSlot*>(tables_.data(i)), slots_};
    }
    std::span<uint64_t> columns(unsigned i) const {
        return {reinterpret_cast<uint64_t*>(table(i).data() + slots_), column_words_};
    }
    unsigned count() const { return tables_.count(); }
    size_t table_bytes() const {
        return AggGeometry::bytes_for(slots_) + column_words_ * sizeof(uint64_t);
    }
    const mem::Region& region() const { return tables_.region(); }
    // Where the first table really lives, e.g. "region pages:thp: external heap (socket id 256),
    // 2.0 MiB pages, 32.0 MiB on transparent huge pages".
    std::string placement() const { return tables_.placement(); }
    // "2 tables x 32.0 MiB, " + placement().
    std::string describe() const;

  private:
    size_t slots_;
    size_t column_words_;
    mem::PlacedBuffer tables_;
};

}  // namespace linerate::kvagg
