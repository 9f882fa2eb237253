#pragma once
// The --agg shared variant of the aggregation table: one table for all workers on the same slot
// layout and geometry as AggTable, CAS to claim a key slot, relaxed fetch_add on values. For
// comparison with per-worker tables (which need no atomics at all).
//
// With one writer (kvagg with one worker) an add is a relaxed load and store of the sum, no
// locked instruction: a locked add cost 0.38-0.46x the per-worker table's rate at one worker
// (issue 47), and with no second writer it orders nothing. Every other change of a sum (a
// reset: drain_live with reset, take_live, clear) is then made on that writer's thread too
// (KvControl posts it to the worker between two bursts, as it does for a per-worker table), so
// each sum has one writer at any time and stays exact; reads (find_live, drain_live without
// reset) stay atomic loads from any thread.
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kvagg/agg_table.hpp"

namespace linerate::kvagg {

// Thread-safe add(): near the key limit, which of two racing new keys gets the last place is up
// to the race; the conservation invariant holds regardless. A key is refused only when the
// table holds max_keys other keys, never while a racer is putting that same key in.
class SharedAggTable : public AggTableOps<SharedAggTable> {
  public:
    static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);

    static constexpr unsigned kManyWriters = 0;
    // Clears the slots; construct before sharing it with workers. writers: the threads that add
    // (1: the one-writer adds above; kManyWriters: not known, locked adds).
    SharedAggTable(std::span<AggSlot> slots, const AggConfig& cfg, unsigned writers = kManyWriters);
    // One writer: the resets must be made on its thread.
    bool single_writer() const { return single_writer_; }

    std::optional<uint64_t> find(uint64_t key) const;
    // find() while workers add (telemetry): relaxed atomic loads, so a concurrent read is no
    // data race; the value is one that the slot held at some point during the call.
    std::optional<uint64_t> find_live(uint64_t key) const;
    // An unkeyed paged flush's reset (kv_control.hpp): the key's sum exchanged for 0 while
    // workers add (0 when it holds none). With one writer: on its thread only.
    uint64_t take_live(uint64_t key);
    // AggTable::drain() while workers add: each sum is read (or, with reset, exchanged for 0)
    // atomically, so an add lands either in what is returned or in what stays. Keys keep their
    // places (a slot cannot be freed under concurrent adds). With one writer and reset: on its
    // thread only.
    uint64_t drain_live(uint64_t lo, uint64_t hi, bool reset, std::vector<AggSlot>& out);
    // Distinct keys held, O(1) (may lag concurrent adds).
    uint64_t size() const { return size_.load(std::memory_order_relaxed); }
    // Read after the workers stopped (their join orders their writes before this).
    AggView view() const;
    void clear();

  private:
    // The value word of a held key (not the hash mode's key 0), atomic loads; nullptr: none.
    uint64_t* live_value(uint64_t key) const;
    friend AggTableOps;
    void add_direct(AggSlot& slot, uint64_t value) {
        std::atomic_ref<uint64_t> used(slot.key);
        // Exactly one writer turns the flag on and counts the key: size() stays O(1).
        if (used.load(std::memory_order_relaxed) == 0 &&
            used.exchange(1, std::memory_order_relaxed) == 0)
            size_.fetch_add(1, std::memory_order_relaxed);
        std::atomic_ref<uint64_t> sum(slot.value);
        add_to(sum, value);
    }
    // A sum += value: a locked add with several writers, a load and a store with one.
    template <class Word>  // std::atomic or std::atomic_ref
    void add_to(Word& sum, uint64_t value) {
        if (single_writer_)
            sum.store(sum.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
        else
            sum.fetch_add(value, std::memory_order_relaxed);
    }
    bool add_hashed(AggSlot* home, uint64_t key, uint64_t value) {
        // As AggTable: a held key is in its home line 96 % of the time, so its four slots are
        // compared without branching (a probe loop's exit mispredicts); x86-64's compares read
        // each key in one aligned 8-byte load, as a relaxed atomic load does. Keys never move
        // while workers add, so a key not in the line takes the probe below, as before.
        AggSlot* const s = line_find(home, key);
        if (std::atomic_ref<uint64_t>(s->key).load(std::memory_order_relaxed) == key) [[likely]] {
            std::atomic_ref<uint64_t> sum(s->value);
            add_to(sum, value);
            return true;
        }
        return add_probe(home, key, value);
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
    bool add_probe(AggSlot* home, uint64_t key, uint64_t value) {
        size_t i = size_t(home - slots_);
        for (unsigned n = 0; n < probe_; ++n, i = (i + 1) & mask_) {
            AggSlot& s = slots_[i];
            std::atomic_ref<uint64_t> k(s.key);
            uint64_t cur = k.load(std::memory_order_relaxed);
            if (cur == 0 && (cur = claim(k, key)) == 0) return false;  // full
            if (cur == key) {
                std::atomic_ref<uint64_t> sum(s.value);
                add_to(sum, value);
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
    bool add_zero(uint64_t value);

    // The key count and the reservations not yet settled change together, in one order that
    // every worker sees (seq_cst; only on a new key's path, never on an add to a known key).
    alignas(64) std::atomic<uint64_t> size_{0};
    std::atomic<uint64_t> pending_{0};
    alignas(64) std::atomic<uint64_t> zero_value_{0};
    std::atomic<uint8_t> zero_used_{0};
    const bool single_writer_;
};

}  // namespace linerate::kvagg
