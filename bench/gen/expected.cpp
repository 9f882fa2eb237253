#include "gen/expected.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace linerate::gen {

void ExpectedSums::merge(const ExpectedSums& other) {
    if (entries_.size() < other.entries_.size()) entries_.resize(other.entries_.size());
    for (size_t k = 0; k < other.entries_.size(); ++k) {
        entries_[k].sum += other.entries_[k].sum;
        entries_[k].count += other.entries_[k].count;
    }
}

ExpectedTotals ExpectedSums::totals() const {
    ExpectedTotals t;
    for (const Entry& e : entries_) {
        if (e.count == 0) continue;
        ++t.keys;
        t.tuples += e.count;
        t.sum += e.sum;
    }
    return t;
}

void ExpectedSums::write_csv(const std::string& path) const {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
    if (!f) throw std::runtime_error("cannot write " + path);
    // Keys are the indices, so walking the table in order is sorting by key.
    for (size_t k = 0; k < entries_.size(); ++k)
        if (entries_[k].count) fmt::print(f.get(), "{},{}\n", k, entries_[k].sum);
    const bool failed = std::ferror(f.get()) != 0;
    if (std::fclose(f.release()) != 0 || failed) throw std::runtime_error("cannot write " + path);
}

}  // namespace linerate::gen
