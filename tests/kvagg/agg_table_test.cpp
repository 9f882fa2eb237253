#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "kvagg/agg_merge.hpp"
#include "kvagg/agg_table.hpp"
#include "kvagg/shared_agg_table.hpp"

using namespace linerate::kvagg;

namespace {

// Slot memory as the app would allocate it (here on the heap) plus the table on it.
template <class Table = AggTable>
struct Owned {
    std::vector<AggSlot> mem;
    Table table;
    // more: the shared table's writers.
    template <class... More>
    explicit Owned(const AggConfig& cfg, size_t slots = 0, More... more)
        : mem(slots ? slots : AggTable::slots_for(cfg)), table(mem, cfg, more...) {}
};

AggConfig hash_cfg(uint64_t max_keys, unsigned probe = AggConfig::kDefaultProbeLimit) {
    return {.mode = IndexMode::hash, .max_keys = max_keys, .probe_limit = probe};
}
AggConfig direct_cfg(uint64_t max_keys) {
    return {.mode = IndexMode::direct, .max_keys = max_keys};
}

uint64_t sum_of(const AggResult& r) {
    uint64_t s = 0;
    for (const KeySum& ks : r.sums) s += ks.sum;
    return s;
}

std::vector<KeySum> to_vector(const std::map<uint64_t, uint64_t>& m) {
    std::vector<KeySum> v;
    for (auto [k, s] : m) v.push_back({k, s});
    return v;
}

}  // namespace

TEST(AggTable, Sizing) {
    EXPECT_EQ(AggTable::slots_for(hash_cfg(1000)), 2048u);
    EXPECT_EQ(AggTable::slots_for(hash_cfg(1025)), 4096u);
    EXPECT_EQ(AggTable::slots_for(hash_cfg(1 << 20)), size_t(1) << 21);
    EXPECT_EQ(AggTable::slots_for(hash_cfg(3)), 16u);
    EXPECT_EQ(AggTable::slots_for(hash_cfg(8)), 16u);
    EXPECT_EQ(AggTable::slots_for(direct_cfg(1000)), 1000u);
    EXPECT_EQ(AggTable::bytes_for(1024), 16384u);
    std::vector<AggSlot> mem(100);
    EXPECT_THROW(AggTable(mem, hash_cfg(10)), std::invalid_argument);  // not a power of two
    EXPECT_THROW(AggTable(mem, direct_cfg(101)), std::invalid_argument);
    EXPECT_NO_THROW(AggTable(mem, direct_cfg(100)));
}

TEST(AggTable, WrappingSum) {
    Owned o(hash_cfg(16));
    EXPECT_TRUE(o.table.add(42, ~0ull - 1));
    EXPECT_TRUE(o.table.add(42, 5));
    EXPECT_EQ(o.table.find(42), 3u);
    EXPECT_EQ(o.table.find(43), std::nullopt);
}

TEST(AggTable, KeyZeroAndAllOnesAreOrdinaryKeys) {
    for (IndexMode mode : {IndexMode::hash, IndexMode::direct}) {
        Owned o(mode == IndexMode::hash ? hash_cfg(16) : direct_cfg(16));
        EXPECT_EQ(o.table.find(0), std::nullopt);
        EXPECT_TRUE(o.table.add(0, 7));
        EXPECT_TRUE(o.table.add(0, 0));
        EXPECT_EQ(o.table.find(0), 7u);
        if (mode == IndexMode::hash) {
            EXPECT_TRUE(o.table.add(~0ull, 9));
            EXPECT_EQ(o.table.find(~0ull), 9u);
        } else {
            EXPECT_FALSE(o.table.add(~0ull, 9));
        }
        // A zero value still makes the key appear.
        EXPECT_TRUE(o.table.add(3, 0));
        const AggView v = o.table.view();
        const AggResult r = merge_tables({&v, 1}, false);
        std::vector<KeySum> want = {{0, 7}, {3, 0}};
        if (mode == IndexMode::hash) want.push_back({~0ull, 9});
        EXPECT_EQ(r.sums, want);
        EXPECT_EQ(o.table.size(), want.size());
    }
}

TEST(AggTable, KeyLimitSendsTuplesToOverflowAndConserves) {
    Owned o(hash_cfg(10));
    std::mt19937_64 rng(1);
    uint64_t sent = 0, overflow = 0, refused_tuples = 0;
    std::map<uint64_t, bool> stored;
    for (int i = 0; i < 5000; ++i) {
        const uint64_t key = rng() % 40;  // key 0 included
        const uint64_t value = rng();
        sent += value;
        const bool ok = o.table.add(key, value);
        if (!ok) {
            overflow += value;
            ++refused_tuples;
        }
        // A key is never split: it is either always stored or always refused.
        auto [it, fresh] = stored.emplace(key, ok);
        EXPECT_EQ(it->second, ok) << key;
        (void)fresh;
    }
    EXPECT_EQ(o.table.size(), 10u);
    EXPECT_GT(refused_tuples, 0u);
    const AggView v = o.table.view();
    const AggResult r = merge_tables({&v, 1});
    EXPECT_EQ(r.sums.size(), 10u);
    EXPECT_EQ(r.total + overflow, sent);
    EXPECT_EQ(sum_of(r), r.total);
}

TEST(AggTable, ProbeBound) {
    // 64 slots, probe bound 6: keys sharing the last line as home fill it (slots 60..63), wrap to
    // slots 0 and 1, and a seventh finds no place although the table is nearly empty.
    const AggConfig cfg = hash_cfg(64, 6);
    Owned o(cfg, 64);
    std::vector<uint64_t> same;
    for (uint64_t k = 1; same.size() < 8; ++k)
        if (agg_hash_index(k, 6) == 64 - kAggLineSlots) same.push_back(k);
    for (int i = 0; i < 6; ++i) EXPECT_TRUE(o.table.add(same[i], 1)) << i;
    EXPECT_FALSE(o.table.add(same[6], 1));
    EXPECT_FALSE(o.table.add(same[7], 1));
    EXPECT_EQ(o.table.size(), 6u);
    // Updates: one in the home line (the branch-free match), one beyond it (the full probe).
    EXPECT_TRUE(o.table.add(same[2], 2));
    EXPECT_TRUE(o.table.add(same[5], 2));
    for (int i = 0; i < 6; ++i) EXPECT_EQ(o.table.find(same[i]), i == 2 || i == 5 ? 3u : 1u);
    EXPECT_EQ(o.table.find(same[6]), std::nullopt);
    const AggView v = o.table.view();
    EXPECT_EQ(v.slots[60].key, same[0]);
    EXPECT_EQ(v.slots[1].key, same[5]);
}

// Both forms (the x86-64 cmovs and the portable one the Arm build uses) on every position.
TEST(AggTable, LineFind) {
    for (auto find : {agg_line_find, agg_line_find_portable}) {
        alignas(64) AggSlot line[kAggLineSlots] = {{7, 1}, {8, 2}, {0, 0}, {9, 3}};
        EXPECT_EQ(find(line, 7), line);
        EXPECT_EQ(find(line, 8), line + 1);
        EXPECT_EQ(find(line, 9), line + 3);
        EXPECT_EQ(find(line, 0), line + 2);
        EXPECT_EQ(find(line, 5), line);  // absent: the first slot, which does not hold it
    }
}

TEST(AggTable, HashPortableAndX86Agree) {
    // The hash the Arm build computes with unsigned __int128.
    for (uint64_t k : {0ull, 1ull, 42ull, 1ull << 40, ~0ull, 0x123456789ABCDEFull}) {
        const unsigned __int128 p =
            static_cast<unsigned __int128>(k ^ 0x2D358DCCAA6C78A5ull) * (k ^ 0x8BB84B93962EACC9ull);
        EXPECT_EQ(agg_hash(k), uint64_t(p) ^ uint64_t(p >> 64)) << k;
    }
}

TEST(AggTable, HomeIsALine) {
    // Every probe starts at the first slot of a 64-byte line.
    for (uint64_t k = 1; k < 1000; ++k) EXPECT_EQ(agg_hash_index(k, 10) % kAggLineSlots, 0u);
    std::vector<AggSlot> mem(2);
    EXPECT_THROW(AggTable(mem, hash_cfg(1)), std::invalid_argument);  // less than a line
}

TEST(AggTable, ProbeLimitClampedToCapacity) {
    Owned o(hash_cfg(100, 32), 16);  // 16 slots, limit 100 keys: the table itself is the bound
    EXPECT_EQ(o.table.probe_limit(), 16u);
    int stored = 0;
    for (uint64_t k = 1; k <= 40; ++k) stored += o.table.add(k, k);
    EXPECT_LE(stored, 16);
    EXPECT_EQ(o.table.size(), uint64_t(stored));
}

TEST(AggTable, DirectMode) {
    Owned o(direct_cfg(100));
    EXPECT_TRUE(o.table.add(0, 1));
    EXPECT_TRUE(o.table.add(99, 2));
    EXPECT_TRUE(o.table.add(99, 3));
    EXPECT_FALSE(o.table.add(100, 4));
    EXPECT_FALSE(o.table.add(~0ull, 4));
    EXPECT_EQ(o.table.find(99), 5u);
    EXPECT_EQ(o.table.find(50), std::nullopt);
    EXPECT_EQ(o.table.find(100), std::nullopt);
    EXPECT_EQ(o.table.size(), 2u);
}

TEST(AggTable, ClearEmptiesTheTable) {
    Owned o(hash_cfg(4));
    for (uint64_t k = 0; k < 4; ++k) o.table.add(k, 1);
    EXPECT_FALSE(o.table.add(9, 1));
    o.table.clear();
    EXPECT_EQ(o.table.size(), 0u);
    EXPECT_EQ(o.table.find(0), std::nullopt);
    EXPECT_TRUE(o.table.add(9, 1));
}

// A copy into the same AggTableCopy again and again (as --state's checkpoints do) is the table,
// slot for slot, whatever happened in between: new keys in new lines, sums changed, a clear
// (flush with reset) and keys placed again; restore() gives back a table that copies the same.
TEST(AggTable, RepeatedCopiesEqualTheTable) {
    for (const AggConfig& cfg : {hash_cfg(4096), direct_cfg(4096)}) {
        Owned o(cfg);
        AggTableCopy c;
        auto expect_same = [&](const char* when) {
            o.table.copy_to(c);
            ASSERT_EQ(c.slots.size(), o.mem.size()) << when;
            EXPECT_EQ(0, std::memcmp(c.slots.data(), o.mem.data(), o.mem.size() * sizeof(AggSlot)))
                << when;
            EXPECT_EQ(c.size, o.table.size()) << when;
        };
        std::mt19937_64 rng(7);
        auto add_keys = [&](int n, uint64_t value) {
            for (int k = 0; k < n; ++k) o.table.add(rng() % 4096 + 1, value);
        };
        add_keys(100, 1);
        expect_same("first copy (all slots)");
        add_keys(100, 2);  // new lines; in hash mode fewer than a fifth: only lines are copied
        expect_same("new keys in new lines");
        std::vector<AggSlot> out;
        o.table.drain(0, ~uint64_t(0), true, out);
        expect_same("cleared (the lines the copy held are zeroed)");
        add_keys(50, 3);
        expect_same("keys after the clear");
        {  // restored, then copied as a checkpoint's first copy: into zeroed slots
            Owned sparse(cfg);
            sparse.table.restore(c);
            const size_t words = cfg.mode == IndexMode::hash ? agg_line_words(o.mem.size()) : 0;
            AggTableCopy e{.slots = std::vector<AggSlot>(o.mem.size()),
                           .lines = std::vector<uint64_t>(words)};
            sparse.table.copy_to(e);
            EXPECT_EQ(0, std::memcmp(e.slots.data(), o.mem.data(), o.mem.size() * sizeof(AggSlot)));
        }
        add_keys(1500, 4);  // most lines: one memcpy again
        expect_same("a dense table");
        Owned back(cfg);
        back.table.restore(c);
        for (int k = 0; k < 200; ++k) {
            const uint64_t key = rng() % 4096;
            o.table.add(key, 2);
            back.table.add(key, 2);
        }
        AggTableCopy d;
        back.table.copy_to(d);
        back.table.copy_to(d);
        expect_same("restored, then the same adds");
        EXPECT_EQ(0, std::memcmp(c.slots.data(), d.slots.data(), c.slots.size() * sizeof(AggSlot)));
    }
}

// Several per-worker tables with overlapping random keys: merge equals a std::map reference,
// sequential and parallel, hash and direct, and mixed.
TEST(AggMerge, EqualsMapReference) {
    std::mt19937_64 rng(7);
    for (IndexMode mode : {IndexMode::hash, IndexMode::direct}) {
        const uint64_t keys = 5000;
        std::vector<Owned<>> tables;
        tables.reserve(4);
        for (int t = 0; t < 4; ++t)
            tables.emplace_back(mode == IndexMode::hash ? hash_cfg(4 * keys) : direct_cfg(keys));
        std::map<uint64_t, uint64_t> ref;
        uint64_t total = 0;
        for (int i = 0; i < 200000; ++i) {
            uint64_t key = rng() % keys;
            if (mode == IndexMode::hash && i % 1000 == 0) key = (i % 2000) ? ~0ull : 0;
            if (mode == IndexMode::hash && i % 7 == 0) key *= 0x10000000001ull;  // spread keys
            const uint64_t value = rng() >> (i % 64);
            ASSERT_TRUE(tables[rng() % 4].table.add(key, value));
            ref[key] += value;
            total += value;
        }
        std::vector<AggView> views;
        for (auto& o : tables) views.push_back(o.table.view());
        for (bool parallel : {false, true}) {
            const AggResult r = merge_tables(views, parallel);
            EXPECT_EQ(r.sums, to_vector(ref)) << int(mode) << parallel;
            EXPECT_EQ(r.total, total);
        }
        for (auto [k, s] : ref) {
            uint64_t found = 0;
            for (const AggView& v : views) found += agg_find(v, k).value_or(0);
            ASSERT_EQ(found, s);
        }
    }
}

TEST(AggMerge, MixedModesAndDifferentSizes) {
    Owned a(hash_cfg(100)), b(direct_cfg(50)), c(direct_cfg(80));
    std::map<uint64_t, uint64_t> ref;
    for (uint64_t k = 0; k < 120; ++k) {
        if (a.table.add(k * 3, k)) ref[k * 3] += k;
        if (b.table.add(k, 2 * k)) ref[k] += 2 * k;
        if (c.table.add(k, 1)) ref[k] += 1;
    }
    const std::vector<AggView> views = {a.table.view(), b.table.view(), c.table.view()};
    EXPECT_EQ(merge_tables(views, false).sums, to_vector(ref));
    EXPECT_EQ(merge_tables(views, true).sums, to_vector(ref));
    EXPECT_TRUE(merge_tables({}, true).sums.empty());
}

TEST(SharedAggTable, SingleThreadMatchesPerWorkerTable) {
    for (AggConfig cfg : {hash_cfg(20), direct_cfg(20)}) {
        Owned<AggTable> plain(cfg);
        Owned<SharedAggTable> shared(cfg);
        std::mt19937_64 rng(3);
        for (int i = 0; i < 3000; ++i) {
            const uint64_t key = rng() % 50, value = rng();
            EXPECT_EQ(plain.table.add(key, value), shared.table.add(key, value));
        }
        const AggView pv = plain.table.view(), sv = shared.table.view();
        EXPECT_EQ(merge_tables({&pv, 1}).sums, merge_tables({&sv, 1}).sums);
        EXPECT_EQ(plain.table.size(), shared.table.size());
        EXPECT_EQ(plain.table.find(0), shared.table.find(0));
    }
}

TEST(SharedAggTable, ConcurrentAddsConserveAndRespectTheKeyLimit) {
    for (uint64_t max_keys : {uint64_t(5000), uint64_t(300)}) {
        constexpr int kThreads = 4;
        Owned<SharedAggTable> o(hash_cfg(max_keys), 8192, unsigned(kThreads));
        std::vector<uint64_t> sent(kThreads), overflow(kThreads);
        std::vector<std::map<uint64_t, uint64_t>> refs(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                std::mt19937_64 rng(100 + t);
                for (int i = 0; i < 50000; ++i) {
                    const uint64_t key = rng() % 1000, value = rng();
                    sent[t] += value;
                    refs[t][key] += value;
                    if (!o.table.add(key, value, t)) overflow[t] += value;
                }
            });
        }
        for (auto& th : threads) th.join();
        const AggView v = o.table.view();
        const AggResult r = merge_tables({&v, 1});
        uint64_t all_sent = 0, all_overflow = 0;
        for (int t = 0; t < kThreads; ++t) all_sent += sent[t], all_overflow += overflow[t];
        EXPECT_EQ(r.total + all_overflow, all_sent);
        EXPECT_LE(r.sums.size(), max_keys);
        EXPECT_EQ(o.table.size(), r.sums.size());
        if (max_keys >= 1000) {
            std::map<uint64_t, uint64_t> ref;
            for (auto& m : refs)
                for (auto [k, s] : m) ref[k] += s;
            EXPECT_EQ(all_overflow, 0u);
            EXPECT_EQ(r.sums, to_vector(ref));
        }
    }
}

// Two threads released together, each adding `key_of(i)` (i = 0, 1) once: whether each add
// landed.
template <class KeyOf>
std::array<bool, 2> race_two_adds(SharedAggTable& table, KeyOf key_of) {
    std::atomic<int> ready{0};
    std::array<bool, 2> added{false, false};
    auto add = [&](int i) {
        ready.fetch_add(1);
        while (ready.load() < 2) {
        }
        added[i] = table.add(key_of(i), 1, i);
    };
    std::thread a(add, 0), b(add, 1);
    a.join();
    b.join();
    return added;
}

// Two workers adding the same new key for the table's last place (and key 0, which lives
// apart): both adds land, whichever reserves the place first, as the key is in the table when
// both are done. Before the fix the second refused it while the first held the place for a
// moment (kvagg's two-worker shared-table test lost tuples that way under qemu). Two workers
// adding two different new keys for one place: exactly one is refused.
TEST(SharedAggTable, RacersForTheLastPlaceWithOneKeyBothAdd) {
    Owned<SharedAggTable> o(hash_cfg(1), 64, 2u);
    for (uint64_t key : {uint64_t(7), uint64_t(0)}) {
        for (int round = 0; round < 3000; ++round) {
            o.table.clear();
            const std::array<bool, 2> added = race_two_adds(o.table, [&](int) { return key; });
            ASSERT_TRUE(added[0] && added[1]) << "key " << key << ", round " << round;
            ASSERT_EQ(o.table.find(key), 2u);
            ASSERT_EQ(o.table.size(), 1u);
        }
    }
    for (int round = 0; round < 3000; ++round) {
        o.table.clear();
        const std::array<bool, 2> added =
            race_two_adds(o.table, [](int i) { return uint64_t(100 + i); });
        ASSERT_NE(added[0], added[1]) << "round " << round;
        ASSERT_EQ(o.table.size(), 1u);
    }
}

// Direct mode counts its keys as it goes (size() is O(1)): each key once, even when several
// threads set a key's flag at the same time; find_live reads what find reads.
TEST(SharedAggTable, DirectSizeCountsEachKeyOnceAndFindLiveMatches) {
    for (AggConfig cfg : {direct_cfg(4096), hash_cfg(4096)}) {
        Owned<SharedAggTable> o(cfg, 0, 4u);
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                std::mt19937_64 rng(7 + t);
                for (int i = 0; i < 20000; ++i) o.table.add(rng() % 3000, 1, t);
            });
        for (auto& th : threads) th.join();
        const AggView v = o.table.view();
        const AggResult r = merge_tables({&v, 1});
        EXPECT_EQ(o.table.size(), r.sums.size());
        EXPECT_EQ(r.total, 80000u);
        for (uint64_t k = 0; k < 3100; ++k) ASSERT_EQ(o.table.find_live(k), o.table.find(k)) << k;
    }
}

// add_at(home(k)) is add(k); a direct key out of range has no home, a hash key 0 one never
// used (it is kept aside).
TEST(AggTable, Homes) {
    Owned h(hash_cfg(16)), d(direct_cfg(16));
    const AggSlot* const hs = h.table.view().slots.data();
    EXPECT_EQ(h.table.home(5), hs + agg_hash_index(5, 5));  // 16 keys: 32 slots
    EXPECT_EQ(h.table.homes().home<IndexMode::hash>(5), h.table.home(5));
    EXPECT_EQ(d.table.home(5), d.table.view().slots.data() + 5);
    EXPECT_EQ(d.table.home(16), nullptr);
    EXPECT_TRUE(h.table.add_at(h.table.home(0), 0, 4));
    EXPECT_TRUE(h.table.add_at(h.table.home(9), 9, 5));
    EXPECT_FALSE(d.table.add_at(d.table.home(16), 16, 1));
    EXPECT_TRUE(d.table.add_at(d.table.home(15), 15, 1));
    EXPECT_EQ(h.table.find(0), 4u);
    EXPECT_EQ(h.table.find(9), 5u);
    EXPECT_EQ(d.table.find(15), 1u);
    EXPECT_EQ(d.table.size(), 1u);
}

// A reset while workers add takes each amount exactly once: each writer adds with a load and a
// store (no locked instruction) to its own column and resets it between its adds (as KvControl
// posts it), with a key 0 and keys near the limit among them, while another thread reads every
// column live (find_live, drain_live without reset). Every amount is taken once or left in the
// table, per writer and in all; the live reads never exceed what was sent.
TEST(SharedAggTable, ResetWhileAddingTakesEachAmountOnce) {
    for (unsigned writers : {1u, 2u, 3u, 4u}) {
        std::vector<AggSlot> mem(1024);
        SharedAggTable table(mem, hash_cfg(400), writers);
        ASSERT_EQ(table.writers(), writers);
        std::atomic<unsigned> running{writers};
        std::vector<uint64_t> sent(writers, 0), taken(writers, 0), refused(writers, 0);
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < writers; ++t)
            threads.emplace_back([&, t] {
                std::mt19937_64 rng(40 + t);
                std::vector<AggSlot> out;
                for (int i = 0; i < 40000; ++i) {
                    const uint64_t value = rng() % 1000000;
                    sent[t] += value;
                    if (!table.add(rng() % 420, value, t)) refused[t] += value;  // 20 beyond
                    if (i % 1000 == 999) taken[t] += table.drain_live(0, ~0ull, true, out, t);
                    if (i % 1000 == 499 && (t & 1))
                        for (uint64_t k = 0; k < 420; k += 3) taken[t] += table.take_live(k, t);
                }
                running.fetch_sub(1);
            });
        std::vector<AggSlot> out;
        uint64_t reads = 0;
        while (running.load() != 0) {
            out.clear();
            for (uint64_t k = 0; k < 420; k += 7) table.find_live(k);
            EXPECT_LE(table.drain_live(0, ~0ull, false, out), uint64_t(writers) * 40000 * 1000000);
            ++reads;
        }
        for (auto& th : threads) th.join();
        uint64_t all_sent = 0, all_taken = 0, all_refused = 0;
        for (unsigned t = 0; t < writers; ++t) {
            out.clear();
            EXPECT_EQ(table.drain_live(0, ~0ull, false, out, t) + taken[t] + refused[t], sent[t])
                << "writer " << t << " of " << writers;
            EXPECT_GT(taken[t], 0u);
            all_sent += sent[t], all_taken += taken[t], all_refused += refused[t];
        }
        EXPECT_LE(table.size(), 400u);
        EXPECT_GT(all_refused, 0u);  // the key limit was reached
        const AggView v = table.view();
        EXPECT_EQ(merge_tables({&v, 1}).total + all_taken + all_refused, all_sent)
            << writers << " writers, " << reads << " live reads";
    }
}

// Several writers: the columns are cache-line aligned and apart (no two writers share a line),
// within the memory column_words() names; one writer's sums are the slots' own value words.
TEST(SharedAggTable, WritersColumnsAreApartAndAligned) {
    std::vector<AggSlot> mem(1024);
    EXPECT_EQ(SharedAggTable::column_words(1024, 1), 0u);
    SharedAggTable one(mem, hash_cfg(400), 1);
    EXPECT_EQ(one.writer(0).sum_of(&mem[5]), &mem[5].value);
    std::vector<uint64_t> columns(SharedAggTable::column_words(1024, 3));
    EXPECT_EQ(columns.size(), 3 * 1024u + 8);
    SharedAggTable three(mem, hash_cfg(400), 3, columns);
    for (unsigned w = 0; w < 3; ++w) {
        const uint64_t* first = three.writer(w).sum_of(&mem[0]);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
        EXPECT_EQ(three.writer(w).sum_of(&mem[1023]), first + 1023);
        EXPECT_GE(first, columns.data());
        EXPECT_LE(first + 1024, columns.data() + columns.size());
        if (w) {
            EXPECT_GE(first, three.writer(w - 1).sum_of(&mem[1023]) + 1);
        }
    }
    EXPECT_TRUE(three.add(9, 5, 2) && three.add(9, 6, 0) && three.add(0, 7, 1));
    EXPECT_EQ(three.find_live(9), 11u);
    EXPECT_EQ(three.find_live(0), 7u);
    EXPECT_EQ(mem[three.home(9) - mem.data()].value, 0u);  // the slots' value words unused
    std::vector<uint64_t> small(10);
    EXPECT_THROW(SharedAggTable(mem, hash_cfg(400), 3, small), std::invalid_argument);
}

// The kind visit_writer() names (the kernel's adds: one writer's `slot`, several writers'
// `column`, their addressing known at compile time) finds the same words as the general form,
// and an add through it lands in that writer's column.
TEST(SharedAggTable, WriterKindsAddressTheGeneralFormsWords) {
    using SumsAt = SharedAggTable::SumsAt;
    std::vector<AggSlot> mem(1024);
    for (unsigned writers : {1u, 3u}) {
        SharedAggTable table(mem, hash_cfg(400), writers);
        for (unsigned w = 0; w < writers; ++w) {
            const SharedAggTable::Writer& general = table.writer(w);
            SharedAggTable::visit_writer(general, [&](auto kind) {
                const bool slot =
                    std::is_same_v<decltype(kind), SharedAggTable::WriterAt<SumsAt::slot>>;
                EXPECT_EQ(slot, writers == 1) << writers << " writers";
                for (size_t i : {size_t(0), size_t(5), size_t(1023)})
                    EXPECT_EQ(kind.sum_of(&mem[i]), general.sum_of(&mem[i]));
                EXPECT_EQ(kind.index(), w);
                EXPECT_TRUE(table.add_at(table.home(77), 77, w + 1, kind));
            });
        }
        EXPECT_EQ(table.find_live(77), uint64_t(writers * (writers + 1) / 2)) << writers;
        for (unsigned w = 0; w < writers; ++w) {
            std::vector<AggSlot> out;
            EXPECT_EQ(table.drain_live(77, 77, false, out, w), w + 1u);
        }
    }
}
