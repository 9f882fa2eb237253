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

// Slot index of `key` in a hash table of 2^bits slots: the murmur3 64-bit finalizer, top bits.
// A full mixer keeps probe lengths random-like for dense (0..N-1), strided and random keys alike;
// a plain multiplicative hash gave dense keys structured clusters (home-slot rate 37 % vs 76 % at
// 1 K keys, load 1/2).
inline size_t agg_hash_index(uint64_t key, unsigned bits) {
    key ^= key >> 33;
    key *= 0xFF51AFD7ED558CCDull;
    key ^= key >> 33;
    key *= 0xC4CEB9FE1A85EC53ull;
    key ^= key >> 33;
    return size_t(key >> (64 - bits));
}

// Geometry shared by both tables; validates the config at construction (throws
// std::invalid_argument: hash capacity not a power of two >= 2, direct capacity < max_keys).
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
        if (mode_ == IndexMode::direct) return key < max_keys_ ? size_t(key) : capacity_;
        return key != 0 ? index(key) : capacity_;
    }
    // Brings a hint's slot into cache for writing (capacity() is one past the end: harmless).
    void prefetch_hint(size_t hint) const { __builtin_prefetch(slots_ + hint, 1, 3); }

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

class AggTable : public AggGeometry {
  public:
    // Clears the slots (the first touch of the memory happens here, in the constructing thread).
    AggTable(std::span<AggSlot> slots, const AggConfig& cfg);

    // Hint: bring the slot `key` starts probing at into cache, for writing.
    void prefetch(uint64_t key) const {
        if (const AggSlot* s = home(key)) __builtin_prefetch(s, 1, 3);
    }

    // Adds value to key's sum. false: refused (table full), nothing changed.
    bool add(uint64_t key, uint64_t value) { return add_at(slot_hint(key), key, value); }

    // add() with the key's slot_hint() already computed.
    bool add_at(size_t hint, uint64_t key, uint64_t value) {
        if (mode_ == IndexMode::direct) {
            if (hint >= capacity_) return false;
            AggSlot& s = slots_[hint];
            size_ += s.key == 0;  // the line is loaded anyway: keeps size() O(1) here too
            s.key = 1;
            s.value += value;
            return true;
        }
        if (key == 0) [[unlikely]]
            return add_zero(value);
        size_t i = hint;
        for (unsigned n = 0; n < probe_; ++n, i = (i + 1) & mask_) {
            AggSlot& s = slots_[i];
            if (s.key == key) {
                s.value += value;
                return true;
            }
            if (s.key == 0) {
                if (size_ >= max_keys_) return false;
                s.key = key;
                s.value = value;
                ++size_;
                return true;
            }
        }
        return false;
    }

    std::optional<uint64_t> find(uint64_t key) const;
    // Distinct keys held, O(1).
    uint64_t size() const { return size_; }
    AggView view() const;
    void clear();

  private:
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
