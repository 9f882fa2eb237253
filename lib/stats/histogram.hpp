#pragma once
// Log-bucketed histogram of u64 values (HDR style): each power-of-two range is split into
// 2^kSubBits linear sub-buckets, so a percentile is within 1/2^kSubBits (about 1.6%) of the
// true value. Exact count, min, max and mean are kept beside the buckets. Fixed size, no
// allocation on record(): usable on a hot path.
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <mutex>

namespace linerate::stats {

class LogHistogram {
  public:
    static constexpr unsigned kSubBits = 6;
    static constexpr unsigned kSub = 1u << kSubBits;
    static constexpr unsigned kBuckets = (64 - kSubBits + 1) * kSub;

    void record(uint64_t v) {
        ++counts_[index_of(v)];
        ++count_;
        sum_ += static_cast<long double>(v);
        if (v < min_) min_ = v;
        if (v > max_) max_ = v;
    }

    void merge(const LogHistogram& o) {
        for (unsigned i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
        count_ += o.count_;
        sum_ += o.sum_;
        if (o.min_ < min_) min_ = o.min_;
        if (o.max_ > max_) max_ = o.max_;
    }

    uint64_t count() const { return count_; }
    uint64_t min() const { return count_ ? min_ : 0; }
    uint64_t max() const { return max_; }
    double mean() const { return count_ ? double(sum_ / count_) : 0.0; }

    // Smallest recorded-bucket value v such that at least q (0..1) of the samples are <= v;
    // reported as the bucket's upper bound clamped to [min, max].
    uint64_t percentile(double q) const {
        if (count_ == 0) return 0;
        auto rank = static_cast<uint64_t>(q * double(count_));
        if (rank >= count_) rank = count_ - 1;
        uint64_t seen = 0;
        for (unsigned i = 0; i < kBuckets; ++i) {
            seen += counts_[i];
            if (seen > rank) {
                uint64_t v = upper_bound_of(i);
                return v < min_ ? min_ : (v > max_ ? max_ : v);
            }
        }
        return max_;
    }

    // Samples in the buckets up to the one holding `v`: every sample <= v, and those of v's
    // bucket above it (within 1/2^kSubBits of v): a Prometheus histogram's cumulative bucket.
    uint64_t count_at_most(uint64_t v) const {
        uint64_t n = 0;
        for (unsigned i = 0; i <= index_of(v); ++i) n += counts_[i];
        return n;
    }

    static unsigned index_of(uint64_t v) {
        if (v < kSub) return unsigned(v);
        unsigned msb = 63 - unsigned(std::countl_zero(v));  // >= kSubBits
        unsigned shift = msb - kSubBits;
        auto mantissa = unsigned(v >> shift) - kSub;  // top kSubBits bits below the msb
        return (shift + 1) * kSub + mantissa;
    }

    static uint64_t upper_bound_of(unsigned index) {
        if (index < kSub) return index;
        unsigned shift = index / kSub - 1;
        uint64_t mantissa = index % kSub + kSub;
        uint64_t low = mantissa << shift;
        uint64_t width = uint64_t(1) << shift;
        return low + (width - 1);
    }

  private:
    std::array<uint64_t, kBuckets> counts_{};
    uint64_t count_ = 0;
    long double sum_ = 0;
    uint64_t min_ = std::numeric_limits<uint64_t>::max();
    uint64_t max_ = 0;
};

// A copy of a histogram its owner (a worker) hands out now and then, for readers on other
// threads (the metrics endpoint): the owner never waits (a copy that finds the reader busy is
// skipped), a reader gets the last copy made.
class HistogramMirror {
  public:
    void offer(const LogHistogram& h) {
        std::unique_lock lock(mutex_, std::try_to_lock);
        if (lock) copy_ = h;
    }
    LogHistogram read() const {
        std::lock_guard lock(mutex_);
        return copy_;
    }

  private:
    mutable std::mutex mutex_;
    LogHistogram copy_;
};

}  // namespace linerate::stats
