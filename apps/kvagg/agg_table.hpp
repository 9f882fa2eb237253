#pragma once
// The aggregation table (AggBuf): u64 key -> u64 wrapping sum, on slot memory the caller GIVES
// (the app allocates it in the --aggbuf region). Two index modes:
//   hash:   open addressing, capacity a power of two, linear probe bounded by probe_limit slots.
//           Slot key 0 marks an empty slot, so key 0 itself lives in a side slot in the table
//           object; any u64 key works.
//   direct: slot[key] for key < max_keys (dense keys); slot.key is a "received a tuple" flag.
// A tuple that cannot be stored (key limit reached, no free slot within the probe bound, or
// key >= max_keys in direct mode) is refused: add() returns false and the caller counts it as
// table_full and adds its value to the overflow sum, so that
//   sum(aggregated values) + overflow_sum == sum(sent values)  (mod 2^64).
// A key is never split: once refused it is refused for good (keys are never removed).
//
// AggTable is single-writer (one per worker, no atomics); SharedAggTable (shared_agg_table.hpp)
// is the --agg shared variant on the same slot layout.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace linerate::kvagg {

struct AggSlot {
    uint64_t key;    // hash: the key, 0 = empty; direct: 1 = used
    uint64_t value;  // wrapping sum
};
static_assert(sizeof(AggSlot) == 16);

enum class IndexMode : uint8_t { hash, direct };

struct AggConfig {
    static constexpr unsigned kDefaultProbeLimit = 64;
    IndexMode mode = IndexMode::hash;
    uint64_t max_keys = 0;  // --keys N: distinct keys held (hash), key bound (direct)
    unsigned probe_limit = kDefaultProbeLimit;  // hash mode; clamped to the capacity
};

// A read-only description of a table, for merging, lookups and dumps. Valid while the table
// memory is; read it only when no worker is adding (or accept torn reads of a live table).
struct AggView {
    std::span<const AggSlot> slots;
    IndexMode mode = IndexMode::hash;
    unsigned probe_limit = 0;
    bool zero_used = false;  // hash mode: key 0, kept outside the slots
    uint64_t zero_value = 0;
};

// Slots per 64-byte cache line. A hash key's probe starts at the first slot of a line (its
// bucket), so one line holds the four slots a key is almost always found in.
inline constexpr size_t kAggLineSlots = 64 / sizeof(AggSlot);

// First slot of `key`'s probe in a hash table of 2^bits slots (bits >= 2): the top bits of a
// folded 64x64->128-bit product of the key with itself under two constants (wyhash's "mum"),
// rounded down to a line. One multiply: the murmur3 finalizer's two multiplies and three
// shift-xors cost 5 instructions a tuple more for the same spread (in-line rate, load 1/2:
// 93-98 % for dense, strided (x64, x1000, <<12, <<40, hi 32 bits) and random keys, fmix64
// 96 %). A plain multiplicative hash is not enough: keys i<<12 put only 56 % in their line.
inline size_t agg_hash_index(uint64_t key, unsigned bits) {
    const unsigned __int128 p =
        static_cast<unsigned __int128>(key ^ 0x2D358DCCAA6C78A5ull) * (key ^ 0x8BB84B93962EACC9ull);
    const uint64_t h = uint64_t(p) ^ uint64_t(p >> 64);
    return size_t(h >> (64 - bits)) & ~(kAggLineSlots - 1);
}

// Bit j set: slot j of the line holds `key`. Arithmetic, not a chain of compares: GCC turns a
// select chain back into branches, and a branch per slot mispredicts as often as a probe loop.
inline unsigned agg_line_match(const AggSlot* line, uint64_t key) {
    unsigned m = 0;
    for (unsigned j = 0; j < kAggLineSlots; ++j) m |= unsigned(line[j].key == key) << j;
    return m;
}

// Geometry shared by both tables; validates the config at construction (throws
// std::invalid_argument: hash capacity not a power of two >= kAggLineSlots, direct capacity <
// max_keys).
class AggGeometry {
  public:
    // Slots to allocate for a config: hash -> power of two >= 2 x max_keys (load <= 1/2), at
    // least 16; direct -> max_keys. With load <= 1/2 and the default probe limit 64, a key is
    // refused below the key limit only by bad luck (measured: 0 of 1 Mi random keys; with limit
    // 32, 6 of 1 Mi; at load 2/3, 25 with 64 and 808 with 32).
    static size_t slots_for(const AggConfig& cfg);
    static constexpr size_t bytes_for(size_t capacity) { return capacity * sizeof(AggSlot); }

    // The slot a key's probe starts at, or capacity() when it has none (direct: key out of
    // range; hash: key 0, kept aside). The kernel hashes each key once: the hint serves the
    // prefetch now and add_at() a few tuples later (hashing twice cost a third of the rate).
    size_t slot_hint(uint64_t key) const {
        return mode_ == IndexMode::direct ? slot_hint<IndexMode::direct>(key)
                                          : slot_hint<IndexMode::hash>(key);
    }
    // The same for a mode known at compile time: the kernel picks the mode once per burst, so
    // the tuple loop tests no mode (M must be mode()).
    template <IndexMode M>
    size_t slot_hint(uint64_t key) const {
        if constexpr (M == IndexMode::direct) return key < max_keys_ ? size_t(key) : capacity_;
        return key != 0 ? index(key) : capacity_;
    }
    // Brings a hint's slot into cache for writing (capacity() is one past the end: harmless).
    void prefetch_hint(size_t hint) const { __builtin_prefetch(slots_ + hint, 1, 3); }
    // The same from a key: the slot its probe starts at, if it has one.
    void prefetch(uint64_t key) const {
        if (const AggSlot* s = home(key)) __builtin_prefetch(s, 1, 3);
    }

    size_t capacity() const { return capacity_; }
    IndexMode mode() const { return mode_; }
    uint64_t max_keys() const { return max_keys_; }
    unsigned probe_limit() const { return probe_; }

  protected:
    AggGeometry(AggSlot* slots, size_t capacity, const AggConfig& cfg);
    size_t index(uint64_t key) const { return agg_hash_index(key, bits_); }
    // The slot a key maps to, or nullptr if it maps to none (key 0 in hash mode, key out of
    // range in direct mode).
    AggSlot* home(uint64_t key) const {
        if (mode_ == IndexMode::direct) return key < max_keys_ ? slots_ + key : nullptr;
        return key != 0 ? slots_ + index(key) : nullptr;
    }

    AggSlot* slots_;
    size_t capacity_;
    size_t mask_;
    uint64_t max_keys_;
    unsigned bits_;
    unsigned probe_;
    IndexMode mode_;
};

// add() and the run-time add_at() of a table whose Derived::add_at<M>() does the work, so both
// tables (AggTable, SharedAggTable) share one mode dispatch.
template <class Derived>
class AggTableOps : public AggGeometry {
  public:
    // Adds value to key's sum. false: refused (table full), nothing changed.
    bool add(uint64_t key, uint64_t value) { return add_at(slot_hint(key), key, value); }

    // add() with the key's slot_hint() already computed.
    bool add_at(size_t hint, uint64_t key, uint64_t value) {
        Derived& d = static_cast<Derived&>(*this);
        return mode_ == IndexMode::direct ? d.template add_at<IndexMode::direct>(hint, key, value)
                                          : d.template add_at<IndexMode::hash>(hint, key, value);
    }

  protected:
    using AggGeometry::AggGeometry;
};

class AggTable : public AggTableOps<AggTable> {
  public:
    // Clears the slots (the first touch of the memory happens here, in the constructing thread).
    AggTable(std::span<AggSlot> slots, const AggConfig& cfg);

    using AggTableOps::add_at;
    // The same for a mode known at compile time (M must be mode()).
    template <IndexMode M>
    bool add_at(size_t hint, uint64_t key, uint64_t value) {
        if constexpr (M == IndexMode::direct) {
            if (hint >= capacity_) return false;
            AggSlot& s = slots_[hint];
            size_ += s.key == 0;  // the line is loaded anyway: keeps size() O(1) here too
            s.key = 1;
            s.value += value;
            return true;
        }
        if (key == 0) [[unlikely]]
            return add_zero(value);
        // A held key sits in its home line in nearly every case (measured: 96 % of random keys
        // at load 1/2): compare all four slots without branching, so the common update costs
        // no mispredicted probe-loop exit. Correct whatever the probe limit: slots are never
        // freed, so a key in the line was placed there by the probe the slow path repeats.
        AggSlot* const line = slots_ + hint;
        if (const unsigned hit = agg_line_match(line, key)) [[likely]] {
            line[std::countr_zero(hit)].value += value;
            return true;
        }
        return add_probe(hint, key, value);
    }

    std::optional<uint64_t> find(uint64_t key) const;
    // Distinct keys held, O(1).
    uint64_t size() const { return size_; }
    AggView view() const;
    void clear();

  private:
    // The full bounded probe: a key beyond its home line, or a new key (out of line: rare).
    bool add_probe(size_t hint, uint64_t key, uint64_t value);
    bool add_zero(uint64_t value) {
        if (!zero_used_) {
            if (size_ >= max_keys_) return false;
            zero_used_ = true;
            ++size_;
        }
        zero_value_ += value;
        return true;
    }

    uint64_t size_ = 0;  // distinct keys held (hash: incl. key 0)
    uint64_t zero_value_ = 0;
    bool zero_used_ = false;
};

// Looks a key up in one table view; nullopt if the key received no tuple there.
std::optional<uint64_t> agg_find(const AggView& t, uint64_t key);

}  // namespace linerate::kvagg
