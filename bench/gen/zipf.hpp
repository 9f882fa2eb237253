#pragma once
// Key distributions for kvagg traffic: uniform over K keys, or Zipf with exponent s
// (P(rank k) = k^-s / H(K, s), k = 1..K; rank k is key k-1, so key 0 is the hottest).
// Zipf uses Walker/Vose alias tables: one random number, one table load and one compare per
// sample, whatever K and s are, which a generator filling dozens of tuples per frame needs.
#include <cstdint>
#include <string>
#include <vector>

#include "gen/rng.hpp"

namespace linerate::gen {

struct DistSpec {
    bool zipf = false;
    double s = 0;  // Zipf exponent
};

// "uniform" or "zipf:S" with 0 <= S <= 10; throws std::invalid_argument.
DistSpec parse_dist(const std::string& text);
std::string to_string(const DistSpec& d);

class KeyDist {
  public:
    // Alias tables cost 8 bytes per key; beyond this many keys Zipf is refused.
    static constexpr uint64_t kMaxZipfKeys = uint64_t(1) << 25;

    // keys >= 1; throws std::invalid_argument for a Zipf over more than kMaxZipfKeys keys.
    KeyDist(uint64_t keys, const DistSpec& spec);

    uint64_t sample(Rng& rng) const {
        if (columns_.empty()) return rng.below(keys_);
        return resolve(rng.next());
    }

    // n samples into out, the same as n calls of sample(). For a Zipf table larger than the
    // caches the columns are prefetched first, so the n cache misses overlap.
    void sample_n(Rng& rng, uint64_t* out, size_t n) const {
        if (columns_.empty()) {
            for (size_t i = 0; i < n; ++i) out[i] = rng.below(keys_);
            return;
        }
        for (size_t i = 0; i < n; ++i) {
            out[i] = rng.next();
            __builtin_prefetch(&columns_[column(out[i])]);
        }
        for (size_t i = 0; i < n; ++i) out[i] = resolve(out[i]);
    }

    uint64_t keys() const { return keys_; }
    // The exact probability of `key` under the distribution (tests compare samples against it).
    double probability(uint64_t key) const;

  private:
    // The high 32 random bits pick a column, the low 32 bits toss its coin.
    uint32_t column(uint64_t r) const { return uint32_t((r >> 32) * keys_ >> 32); }
    uint64_t resolve(uint64_t r) const {
        const uint32_t col = column(r);
        return uint32_t(r) < columns_[col].threshold ? col : columns_[col].alias;
    }

    struct Column {
        uint32_t threshold;  // stay in the column if the coin is below
        uint32_t alias;      // where to go otherwise
    };

    uint64_t keys_;
    DistSpec spec_;
    double norm_ = 1;  // H(K, s)
    std::vector<Column> columns_;
};

}  // namespace linerate::gen
