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
#include <vector>

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

// wyhash's "mum" fold: the 64x64->128-bit product of the key with itself under two constants,
// high half xor low half. One multiply: the murmur3 finalizer's two multiplies and three
// shift-xors cost 5 instructions a tuple more for the same spread (in-line rate, load 1/2:
// 93-98 % for dense, strided (x64, x1000, <<12, <<40, hi 32 bits) and random keys, fmix64
// 96 %). A plain multiplicative hash is not enough: keys i<<12 put only 56 % in their line.
inline uint64_t agg_hash(uint64_t key) {
    const uint64_t a = key ^ 0x2D358DCCAA6C78A5ull, b = key ^ 0x8BB84B93962EACC9ull;
#if defined(__x86_64__)
    // GCC 12 keeps an unsigned __int128 product in a stack slot inside loops (4 extra loads and
    // stores a key); one mulq leaves it in rdx:rax.
    uint64_t lo = a, hi;
    asm("mulq %2" : "+a"(lo), "=d"(hi) : "rm"(b) : "cc");
    return lo ^ hi;
#else
    const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    return uint64_t(p) ^ uint64_t(p >> 64);
#endif
}

// Byte offset of `key`'s home line in a hash table of 2^bits slots, given shift = 60 - bits
// (bits >= 2): the hash's top bits, rounded down to a line. The one mapping from key to line.
inline size_t agg_line_offset(uint64_t key, unsigned shift) {
    return size_t(agg_hash(key) >> shift) & ~size_t(63);
}

// First slot of `key`'s probe in a hash table of 2^bits slots: the first of its home line.
inline size_t agg_hash_index(uint64_t key, unsigned bits) {
    return agg_line_offset(key, 60 - bits) / sizeof(AggSlot);
}

// The slot of `line` that holds `key` if any, else the line's first slot (whose key the caller
// compares again). Branch-free: the slot a key sits in is random, and a branch per slot
// mispredicts as often as a probe loop. Portable form: a bit mask of four compares, each slot's
// key read by key_of(slot) (the shared table's: an atomic load).
template <class KeyOf>
inline AggSlot* agg_line_find_by(AggSlot* line, uint64_t key, KeyOf key_of) {
    unsigned m = 0;
    for (unsigned j = 0; j < kAggLineSlots; ++j) m |= unsigned(key_of(line[j]) == key) << j;
    return line + (m ? std::countr_zero(m) : 0);
}
inline AggSlot* agg_line_find_portable(AggSlot* line, uint64_t key) {
    return agg_line_find_by(line, key, [](const AggSlot& s) { return s.key; });
}

// agg_line_find_portable(); on x86-64 three cmovs, 9 instructions against 21 (GCC turns a
// select chain written in C++ back into branches).
inline AggSlot* agg_line_find(AggSlot* line, uint64_t key) {
#if defined(__x86_64__)
    AggSlot* s = line;
    AggSlot* t;
    asm("lea 16(%[l]), %[t]\n\t"
        "cmp %[k], 16(%[l])\n\t"
        "cmove %[t], %[s]\n\t"
        "lea 32(%[l]), %[t]\n\t"
        "cmp %[k], 32(%[l])\n\t"
        "cmove %[t], %[s]\n\t"
        "lea 48(%[l]), %[t]\n\t"
        "cmp %[k], 48(%[l])\n\t"
        "cmove %[t], %[s]"
        : [s] "+r"(s), [t] "=&r"(t)
        : [l] "r"(line), [k] "r"(key), "m"(*reinterpret_cast<const AggSlot(*)[kAggLineSlots]>(line))
        : "cc");
    return s;
#else
    return agg_line_find_portable(line, key);
#endif
}

// Where keys' probes start, from three values the tuple loop keeps in registers: the kernel
// copies them out of the table once per burst (read through the table they are reloaded after
// every add, as a slot store may alias the table's own u64 members). The home of a key is its
// line (hash; key 0, kept aside, gets one too, never used) or its slot (direct; nullptr when
// out of range). Prefetching any home is harmless.
struct AggHomes {
    AggSlot* slots;
    uint64_t max_keys;  // direct: the key bound
    unsigned shift;     // hash: 60 - log2(capacity): the hash's top bits are the line's byte offset

    template <IndexMode M>
    AggSlot* home(uint64_t key) const {
        if constexpr (M == IndexMode::direct) return key < max_keys ? slots + key : nullptr;
        return reinterpret_cast<AggSlot*>(reinterpret_cast<char*>(slots) +
                                          agg_line_offset(key, shift));
    }
};

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

    // The kernel hashes each key once: the home serves the prefetch now and add_at() a few
    // tuples later (hashing twice cost a third of the rate).
    AggHomes homes() const { return {slots_, max_keys_, 60 - bits_}; }
    AggSlot* home(uint64_t key) const {
        return mode_ == IndexMode::direct ? homes().home<IndexMode::direct>(key)
                                          : homes().home<IndexMode::hash>(key);
    }

    size_t capacity() const { return capacity_; }
    IndexMode mode() const { return mode_; }
    uint64_t max_keys() const { return max_keys_; }
    unsigned probe_limit() const { return probe_; }

  protected:
    AggGeometry(AggSlot* slots, size_t capacity, const AggConfig& cfg);

    AggSlot* slots_;
    size_t capacity_;
    size_t mask_;
    uint64_t max_keys_;
    unsigned bits_;
    unsigned probe_;
    IndexMode mode_;
};

// add() and add_at() of both tables (AggTable, SharedAggTable): one mode dispatch, the work in
// Derived's add_direct() (the key's own slot), add_zero() (hash mode's key 0, kept outside the
// slots) and add_hashed() (a non-zero key from its home line on). `writer`: the shared table's
// Writer of the adding thread; a per-worker table takes its own empty one, or none.
template <class Derived>
class AggTableOps : public AggGeometry {
  public:
    // Adds value to key's sum. false: refused (table full), nothing changed.
    template <class... Writer>
    bool add(uint64_t key, uint64_t value, const Writer&... writer) {
        return add_at(home(key), key, value, writer...);
    }

    // add() with the key's home() already computed.
    template <class... Writer>
    bool add_at(AggSlot* home, uint64_t key, uint64_t value, const Writer&... writer) {
        return mode_ == IndexMode::direct ? add_at<IndexMode::direct>(home, key, value, writer...)
                                          : add_at<IndexMode::hash>(home, key, value, writer...);
    }
    // The same for a mode known at compile time (M must be mode()).
    template <IndexMode M, class... Writer>
    bool add_at(AggSlot* home, uint64_t key, uint64_t value, const Writer&... writer) {
        Derived& d = static_cast<Derived&>(*this);
        if constexpr (M == IndexMode::direct) {
            if (!home) return false;
            d.add_direct(*home, value, writer...);
            return true;
        }
        if (key == 0) [[unlikely]]
            return d.add_zero(value, writer...);
        return d.add_hashed(home, key, value, writer...);
    }

  protected:
    using AggGeometry::AggGeometry;
};

// Words of a bit-per-line map of a hash table of `capacity` slots (AggTableCopy::lines).
inline size_t agg_line_words(size_t capacity) {
    return (capacity / kAggLineSlots + 63) / 64;
}

// Calls visit(first slot of line L) for each line L whose bit is set in `bits`, word `word` of
// such a map, lowest first.
template <class Visit>
void for_each_line_in_word(size_t word, uint64_t bits, Visit&& visit) {
    for (; bits; bits &= bits - 1)
        visit((word * 64 + size_t(std::countr_zero(bits))) * kAggLineSlots);
}

// A per-worker table's whole content, as --state saves it (kv_state.hpp).
struct AggTableCopy {
    std::vector<AggSlot> slots;  // the table's slots, in place
    uint64_t size = 0;           // distinct keys (hash: incl. key 0)
    uint64_t zero_value = 0;     // hash mode: key 0's sum, kept outside the slots
    bool zero_used = false;
    // Hash mode, filled by AggTable::copy_to(): bit L set when line L of `slots` (kAggLineSlots
    // slots) may hold a key; lines whose bit is clear are all empty. Empty: not known. Sized
    // (agg_line_words) with every bit clear, it says a zeroed `slots` holds no key.
    std::vector<uint64_t> lines;
};

class AggTable : public AggTableOps<AggTable> {
  public:
    // Its one writer (the kernel's add and prefetch take it as they take the shared table's).
    struct Writer {
        static void prefetch(const AggSlot* home) { __builtin_prefetch(home, 1, 3); }
    };
    static Writer writer(unsigned) { return {}; }
    template <class F>  // as SharedAggTable's: one kind
    static decltype(auto) visit_writer(Writer w, F&& f) {
        return f(w);
    }

    // Clears the slots (the first touch of the memory happens here, in the constructing thread).
    AggTable(std::span<AggSlot> slots, const AggConfig& cfg);

    std::optional<uint64_t> find(uint64_t key) const;
    // Distinct keys held, O(1).
    uint64_t size() const { return size_; }
    AggView view() const;
    void clear();
    // The flush op: appends every held key in [lo, hi] whose sum is not 0, with its sum; with
    // `reset` those sums become 0 (the whole table is cleared when the range is every key, so
    // keys no longer sent free their places). Returns the wrapping sum of what it appended.
    uint64_t drain(uint64_t lo, uint64_t hi, bool reset, std::vector<AggSlot>& out);
    // An unkeyed paged flush's reset (kv_control.hpp): the key's sum, set to 0 (0 when it
    // holds none).
    uint64_t take(uint64_t key);

    // Copies the table into `c`, no allocation once c has the table's size. In hash mode a
    // bit per line, set when a key is placed (off the update path), tells which lines hold
    // keys: while fewer than 1 in kSparseLines does, only those lines are copied (and the ones
    // c held before: after a clear they are zeroed); otherwise, in direct mode, or for a first
    // copy, one memcpy of the slots. Measured on a 2 Mi-slot table (AMD EPYC, minimum of 60):
    // 30 k keys (6 % of the lines) 0.11 against 1.18 ms, 100 k (18 %) 0.64 against 1.21,
    // 150 k (25 %) even, 232 k (36 %) 1.93 against 1.50: scattered lines lose to one stream.
    void copy_to(AggTableCopy& c) const;
    // Takes over a copy of a table of the same geometry (the state loader checked it).
    void restore(const AggTableCopy& c);

  private:
    friend AggTableOps;
    void add_direct(AggSlot& slot, uint64_t value, Writer = {}) {
        size_ += slot.key == 0;  // the line is loaded anyway: keeps size() O(1) here too
        slot.key = 1;
        slot.value += value;
    }
    bool add_hashed(AggSlot* home, uint64_t key, uint64_t value, Writer = {}) {
        // A held key sits in its home line in nearly every case (measured: 96 % of random keys
        // at load 1/2): compare all four slots without branching, so the common update costs
        // no mispredicted probe-loop exit. Correct whatever the probe limit: slots are never
        // freed, so a key in the line was placed there by the probe the slow path repeats.
        if (AggSlot* const s = agg_line_find(home, key); s->key == key) [[likely]] {
            s->value += value;
            return true;
        }
        return add_probe(size_t(home - slots_), key, value);
    }

    static constexpr size_t kSparseLines = 5;
    void mark_line(size_t slot) {
        uint64_t& word = used_lines_[slot / kAggLineSlots / 64];
        const uint64_t bit = uint64_t(1) << (slot / kAggLineSlots % 64);
        used_line_count_ += (word & bit) == 0;
        word |= bit;
    }
    void mark_used_lines();
    // The full bounded probe: a key beyond its home line, or a new key (out of line: rare).
    bool add_probe(size_t hint, uint64_t key, uint64_t value);
    bool add_zero(uint64_t value, Writer = {}) {
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
    // Hash mode: a bit per line of slots, set when a key is placed in it (AggTableCopy::lines).
    std::vector<uint64_t> used_lines_;
    size_t used_line_count_ = 0;  // bits set in used_lines_
};

// Looks a key up in one table view; nullopt if the key received no tuple there.
std::optional<uint64_t> agg_find(const AggView& t, uint64_t key);

}  // namespace linerate::kvagg
