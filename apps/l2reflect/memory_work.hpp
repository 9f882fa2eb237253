#pragma once
// l2reflect's memory work (--touch, --lookups): what the DPA study's memory-bound reflector does
// beside the MAC swap (its Fig. 11), as plain code on bytes, unit-tested without EAL.
//   - touch: read the first PCT % of each frame as little-endian 8-byte words and add them up
//     (Fig. 11a). The touched prefix is floor(len * PCT / 100) bytes and only its whole words
//     are read: a tail of 1 to 7 bytes is not (a 1020-byte frame at 100 % reads 127 words).
//   - lookups: N random 8-byte reads per frame from a lookup buffer (Fig. 11b). Dependent: the
//     buffer is one cycle through all its slots, each slot holding the index of the next, and
//     each read's address is the previous read's value (a chained lookup: a read cannot start
//     before the one before it ended, so the figure is the memory's latency). Independent: the
//     addresses come from a random generator, so the core may overlap the reads (the memory's
//     parallelism).
// Every word read is added to a per-worker sum that outlives the run (the JSON's), so the
// compiler cannot drop the reads.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "mem/pointer_chain.hpp"

namespace linerate::l2reflect {

enum class LookupKind : uint8_t { none, dependent, independent };

// One worker's figures: plain, the worker is their only writer and they are read after it
// stopped.
struct MemoryTally {
    uint64_t touch_sum = 0;      // the touched words, added up (mod 2^64)
    uint64_t touched_bytes = 0;  // 8 per word read
    uint64_t lookup_sum = 0;     // the values the lookups read, added up (mod 2^64)
    uint64_t lookups = 0;        // reads from the lookup buffer
};

inline constexpr size_t kWordBytes = 8;

// The words --touch PCT reads of a frame whose first `len` bytes are contiguous.
inline size_t touched_words(size_t len, unsigned pct) {
    return len * pct / 100 / kWordBytes;
}

inline uint64_t load_le64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
    return v;
}

// The sum of the first `words` little-endian 8-byte words at `bytes`.
inline uint64_t fold_words(const uint8_t* bytes, size_t words) {
    uint64_t sum = 0;
    for (size_t i = 0; i < words; ++i) sum += load_le64(bytes + i * kWordBytes);
    return sum;
}

// One worker's memory work on each frame, chosen once per worker: kTouch and kLookup are
// template parameters, so no frame tests whether they are on. `buffer` is the lookup chain
// (mem::make_cyclic_chain); `start` the worker's first slot (dependent) or its generator's seed
// (independent, not 0).
template <bool kTouch, LookupKind kLookup>
class FrameMemoryWork {
  public:
    FrameMemoryWork(unsigned touch_pct, unsigned lookups, std::span<const uint64_t> buffer,
                    uint64_t start, MemoryTally& tally)
        : pct_(touch_pct), lookups_(lookups), buffer_(buffer), at_(start), tally_(tally) {}

    // A frame whose first `len` bytes are contiguous at `frame` (the first segment).
    void operator()(const uint8_t* frame, size_t len) {
        if constexpr (kTouch) {
            const size_t words = touched_words(len, pct_);
            tally_.touch_sum += fold_words(frame, words);
            tally_.touched_bytes += words * kWordBytes;
        }
        if constexpr (kLookup != LookupKind::none) {
            tally_.lookup_sum += lookup();
            tally_.lookups += lookups_;
        }
    }

  private:
    // The sum of this frame's reads.
    uint64_t lookup() {
        uint64_t sum = 0;
        if constexpr (kLookup == LookupKind::dependent) {
            uint64_t at = at_;
            for (unsigned i = 0; i < lookups_; ++i) {
                at = buffer_[at];
                sum += at;
            }
            at_ = at;
        } else {
            const uint64_t n = buffer_.size();
            for (unsigned i = 0; i < lookups_; ++i) sum += buffer_[mem::random_index(at_, n)];
        }
        return sum;
    }

    const unsigned pct_;
    const unsigned lookups_;
    const std::span<const uint64_t> buffer_;
    uint64_t at_;  // dependent: the slot read last; independent: the generator's state
    MemoryTally& tally_;
};

}  // namespace linerate::l2reflect
