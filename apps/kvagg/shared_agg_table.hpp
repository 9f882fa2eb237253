#pragma once
// The --agg shared variant of the aggregation table: one key index for all workers on the same
// slot layout and geometry as AggTable (CAS to claim a key slot), and a column of sums per
// writer. For comparison with per-worker tables (which need no atomics at all).
//
// No locked instruction per tuple: each sum word has one writer, so an add is a relaxed load
// and store of it (a locked add, 18-20 cycles and a full barrier, cost 0.38-0.46x the
// per-worker table's rate, issue 47). With one writer its column is the slots' own value words
// (one line a tuple, as a per-worker table); with W writers each has a u64 array of its own, a
// word per slot, cache-line aligned (writers never share a line; the slots' lines are only read
// once their keys are in, and their value words stay 0). Every other change of a sum (a reset:
// drain_live or take_live of a writer's column, clear) is made on that writer's thread (KvControl
// posts it to the worker between two bursts, as it does for a per-worker table), so each sum
// stays exact; reads (find_live, drain_live without reset) add the columns with atomic loads
// from any thread. Memory: 16 bytes a slot, and 8 x W more with W > 1 writers.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kvagg/agg_table.hpp"

namespace linerate::kvagg {

// Each writer adds through its own Writer (writer(w)): near the key limit, which of two racing
// new keys gets the last place is up to the race; the conservation invariant holds regardless. A
// key is refused only when the table holds max_keys other keys, never while a racer is putting
// that same key in.
class SharedAggTable : public AggTableOps<SharedAggTable> {
  public:
    static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);
    static constexpr unsigned kAllWriters = ~0u;

    // Where a writer's sums lie, as far as its type says: any (the Writer's base and shift),
    // slot (one writer: the slots' own value words) or column (several: an array each). The
    // kernel adds through the kind visit_writer() names, so its addressing is constant-folded.
    enum class SumsAt { any, slot, column };
    // One writer's column: where its sum of a slot is. The word of slot s is at base + (address
    // of s >> shift): shift 0 and base 8 is the slot's own value word (one writer: a per-worker
    // table's add), shift 1 a word of the writer's array (the array's address less half the
    // slots' address: a shift an add more). A kind other than any knows its shift (and the
    // slot's its base) at compile time: with the shift in a register (cl, which the hash's shift
    // holds too) GCC moved and spilled around it, 6.5 instructions a tuple at one writer.
    template <SumsAt kAt>
    class WriterAt {
      public:
        WriterAt() = default;
        // To any kind; to another: only the kind visit_writer() names for w.
        template <SumsAt k>
        explicit(kAt != SumsAt::any) WriterAt(const WriterAt<k>& w)
            : base_(w.base_), shift_(w.shift_), index_(w.index_) {}

        uint64_t* sum_of(const AggSlot* s) const {
            return reinterpret_cast<uint64_t*>(base() +
                                               (reinterpret_cast<uintptr_t>(s) >> shift()));
        }
        // The lines an add to `home` reads (the key's, for reading, when its sum is elsewhere)
        // and writes (its sum's).
        void prefetch(const AggSlot* home) const {
            if (shift() != 0) __builtin_prefetch(home, 0, 3);
            __builtin_prefetch(sum_of(home), 1, 3);
        }
        unsigned index() const { return index_; }

      private:
        template <SumsAt>
        friend class WriterAt;
        friend SharedAggTable;
        uintptr_t base() const { return kAt == SumsAt::slot ? kSlotSumBase : base_; }
        unsigned shift() const { return kAt == SumsAt::any ? shift_ : kAt == SumsAt::column; }
        uintptr_t base_ = 0;
        unsigned shift_ = 0;
        unsigned index_ = 0;
    };
    using Writer = WriterAt<SumsAt::any>;
    // f(w as the kind that says where its sums lie): the kernel's adds chosen once, not per tuple.
    template <class F>
    static decltype(auto) visit_writer(const Writer& w, F&& f) {
        if (w.shift_ == 0) return f(WriterAt<SumsAt::slot>(w));
        return f(WriterAt<SumsAt::column>(w));
    }

    // The u64 words of the writers' columns for `capacity` slots (0 with one writer: its sums
    // are the slots' value words), with room to align them to cache lines.
    static size_t column_words(size_t capacity, unsigned writers);
    // Clears the slots and columns; construct before sharing it with workers. writers: the
    // threads that add (each through its writer(w)), at least 1. columns: column_words() words
    // for them (the --aggbuf region's); empty: the table allocates them.
    SharedAggTable(std::span<AggSlot> slots, const AggConfig& cfg, unsigned writers = 1,
                   std::span<uint64_t> columns = {});
    unsigned writers() const { return unsigned(writers_.size()); }
    const Writer& writer(unsigned w) const { return writers_[w]; }
    // Writer w's add (on w's thread only).
    bool add(uint64_t key, uint64_t value, unsigned w = 0) {
        return add_at(home(key), key, value, writers_[w]);
    }

    // find_live(): the sum over every writer's column.
    std::optional<uint64_t> find(uint64_t key) const { return find_live(key); }
    // find() while workers add (telemetry): relaxed atomic loads, so a concurrent read is no
    // data race; each column's part is one that it held at some point during the call.
    std::optional<uint64_t> find_live(uint64_t key) const;
    // An unkeyed paged flush's reset (kv_control.hpp): writer w's sum of the key exchanged for
    // 0 (0 when it holds none), on w's thread (kAllWriters: every column's, none adding).
    uint64_t take_live(uint64_t key, unsigned w);
    // AggTable::drain() while workers add, over writer w's column (kAllWriters: the sum of
    // every column): each sum is read atomically, so an add lands either in what is returned or
    // in what stays. With reset (each sum exchanged for 0): on w's thread (kAllWriters: none
    // adding). Keys keep their places (a slot cannot be freed under concurrent adds).
    uint64_t drain_live(uint64_t lo, uint64_t hi, bool reset, std::vector<AggSlot>& out,
                        unsigned w = kAllWriters);
    // Distinct keys held, O(1) (may lag concurrent adds).
    uint64_t size() const { return size_.load(std::memory_order_relaxed); }
    // Read after the workers stopped (their join orders their writes before this). With
    // several writers the columns' sums are written into the slots' value words first (so not
    // const: it changes what the slots hold).
    AggView view();
    void clear();

  private:
    // Slot i's sum over the columns [first, first + n) (atomic loads).
    uint64_t sum_at(size_t i, unsigned first, unsigned n) const;
    // Hash mode's key 0: its sum over every writer (atomic loads).
    uint64_t zero_sum() const;
    // The columns a reader names: {first, count}.
    std::pair<unsigned, unsigned> columns_of(unsigned w) const {
        return w == kAllWriters ? std::pair(0u, writers()) : std::pair(w, 1u);
    }
    // One writer's sum of a slot: its own value word.
    static constexpr uintptr_t kSlotSumBase = offsetof(AggSlot, value);
    // The slot of a held key (not the hash mode's key 0); nullptr: none.
    const AggSlot* live_slot(uint64_t key) const;
    friend AggTableOps;
    template <class W>  // a WriterAt
    void add_direct(AggSlot& slot, uint64_t value, const W& w) {
        std::atomic_ref<uint64_t> used(slot.key);
        // Exactly one writer turns the flag on and counts the key: size() stays O(1).
        if (used.load(std::memory_order_relaxed) == 0 &&
            used.exchange(1, std::memory_order_relaxed) == 0)
            size_.fetch_add(1, std::memory_order_relaxed);
        add_to(w.sum_of(&slot), value);
    }
    // A sum += value by its one writer: a load and a store, no locked instruction.
    static void add_to(uint64_t* word, uint64_t value) {
        std::atomic_ref<uint64_t> sum(*word);
        sum.store(sum.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
    }
    template <class W>
    bool add_hashed(AggSlot* home, uint64_t key, uint64_t value, const W& w) {
        // As AggTable: a held key is in its home line 96 % of the time, so its four slots are
        // compared without branching (a probe loop's exit mispredicts); x86-64's compares read
        // each key in one aligned 8-byte load, as a relaxed atomic load does. Keys never move
        // while workers add, so a key not in the line takes the probe below, as before.
        AggSlot* const s = line_find(home, key);
        if (std::atomic_ref<uint64_t>(s->key).load(std::memory_order_relaxed) == key) [[likely]] {
            add_to(w.sum_of(s), value);
            return true;
        }
        return add_probe(home, key, value, w);
    }
    static AggSlot* line_find(AggSlot* line, uint64_t key) {
#if defined(__x86_64__)
        return agg_line_find(line, key);
#else
        return agg_line_find_by(line, key, [](AggSlot& s) {
            return std::atomic_ref<uint64_t>(s.key).load(std::memory_order_relaxed);
        });
#endif
    }
    // The bounded probe from the home line's first slot: a key beyond its line, or a new key.
    template <class W>
    bool add_probe(AggSlot* home, uint64_t key, uint64_t value, const W& w) {
        size_t i = size_t(home - slots_);
        for (unsigned n = 0; n < probe_; ++n, i = (i + 1) & mask_) {
            AggSlot& s = slots_[i];
            std::atomic_ref<uint64_t> k(s.key);
            uint64_t cur = k.load(std::memory_order_relaxed);
            if (cur == 0 && (cur = claim(k, key)) == 0) return false;  // full
            if (cur == key) {
                add_to(w.sum_of(&s), value);
                return true;
            }
        }
        return false;
    }

    // Puts `key` into the empty slot `k`, counted, or finds what another worker put there first:
    // the key now in the slot, 0 when the table is full. Only new keys come here.
    uint64_t claim(std::atomic_ref<uint64_t> k, uint64_t key);
    // A new key's place, for a spot (a slot, or key 0's flag) that was empty: put() fills it
    // under a reserved place (true: this worker's key went in, false: a racer's did), filled()
    // says whether it is filled now. True once the spot is filled, false when the table is
    // full. A racer's reservation can hold the last place for a moment, for the very key this
    // worker is adding: then this waits until every racer settled and looks at the spot again.
    template <class Put, class Filled>
    bool take_place(Put put, Filled filled) {
        for (;;) {
            if (reserve()) {
                settle(put());
                return true;
            }
            wait_for_racers();
            if (filled()) return true;
            if (size_.load() >= max_keys_) return false;
        }
    }
    // Takes one of the max_keys places (counted in pending_ until settle() gives it back or
    // keeps it); never overshoots.
    bool reserve();
    void settle(bool keep);
    void wait_for_racers();
    bool add_zero(uint64_t value, const Writer& w);

    // The key count and the reservations not yet settled change together, in one order that
    // every worker sees (seq_cst; only on a new key's path, never on an add to a known key).
    alignas(64) std::atomic<uint64_t> size_{0};
    std::atomic<uint64_t> pending_{0};
    std::atomic<uint8_t> zero_used_{0};
    // Hash mode's key 0: a sum per writer, each in a line of its own.
    struct alignas(64) ZeroSum {
        uint64_t value = 0;
    };
    std::unique_ptr<ZeroSum[]> zero_sums_;
    std::vector<Writer> writers_;
    std::vector<uint64_t> own_columns_;  // when the constructor was given none
};

}  // namespace linerate::kvagg
