#pragma once
// The per-key sums kvagg must arrive at for the tuples gen sent: one entry per key (sum and
// tuple count, so a key whose values sum to 0 is still known to exist), merged over workers and
// written as kvagg's --dump writes its table: lines `key,value`, decimal u64, sorted by key.
#include <cstdint>
#include <string>
#include <vector>

namespace linerate::gen {

struct ExpectedTotals {
    uint64_t keys = 0;    // keys that got at least one tuple
    uint64_t tuples = 0;  // tuples in frames kvagg aggregates
    uint64_t sum = 0;     // of their values, wrapping mod 2^64 like kvagg's sums
};

class ExpectedSums {
  public:
    ExpectedSums() = default;
    explicit ExpectedSums(uint64_t keys) : entries_(keys) {}

    bool enabled() const { return !entries_.empty(); }
    void add(uint64_t key, uint64_t value) {
        entries_[key].sum += value;
        ++entries_[key].count;
    }
    void prefetch(uint64_t key) const { __builtin_prefetch(&entries_[key], 1); }
    void remove(uint64_t key, uint64_t value) {
        entries_[key].sum -= value;
        --entries_[key].count;
    }
    void merge(const ExpectedSums& other);

    uint64_t sum(uint64_t key) const { return entries_[key].sum; }
    uint64_t count(uint64_t key) const { return entries_[key].count; }
    uint64_t keys() const { return entries_.size(); }
    ExpectedTotals totals() const;

    // Throws std::runtime_error when the file cannot be written.
    void write_csv(const std::string& path) const;

  private:
    struct Entry {
        uint64_t sum = 0;
        uint64_t count = 0;
    };
    std::vector<Entry> entries_;
};

}  // namespace linerate::gen
