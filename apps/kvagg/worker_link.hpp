#pragma once
// What a kvagg worker shares with the telemetry thread: totals it publishes once per burst, and
// a request/response slot through which telemetry asks it for one key's value. A per-worker
// table has a single writer and no atomics, so it is read by its own worker (between bursts),
// never by another thread while the worker runs; once the worker has stopped, it is read
// directly.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "kvagg/agg_table.hpp"
#include "kvagg/shared_agg_table.hpp"

namespace linerate::kvagg {

struct ControlJob;  // kv_control.hpp

// A response frame for the worker to transmit on `port` (its own queue of that port).
struct OutgoingFrame {
    uint16_t port = 0;
    std::vector<uint8_t> frame;
};

struct WorkerLink {
    // telemetry -> worker: the key of request number `posted`.
    alignas(64) std::atomic<uint64_t> posted{0};
    std::atomic<uint64_t> key{0};
    // worker -> telemetry: the answer to request number `answered`.
    alignas(64) std::atomic<uint64_t> answered{0};
    std::atomic<uint64_t> value{0};
    std::atomic<bool> found{false};
    // Set when the worker's loop has returned (or it never ran): read its table directly.
    std::atomic<bool> stopped{false};
    // control -> worker: its part of a service request (kv_control.hpp), cleared when done.
    std::atomic<ControlJob*> job{nullptr};
    // control -> worker: response frames to send; outbox_size mirrors outbox.size() so the
    // worker's check is a load, not a lock.
    std::atomic<uint32_t> outbox_size{0};
    std::mutex outbox_mutex;
    std::deque<OutgoingFrame> outbox;
    // Published by the worker once per burst.
    alignas(64) std::atomic<uint64_t> keys{0};  // distinct keys in its table (shared: all)
    std::atomic<uint64_t> value_sum{0};         // wrapping sum of what it aggregated
    std::atomic<uint64_t> overflow_sum{0};      // wrapping sum of what its table refused
    std::atomic<uint64_t> gaps_opened{0};       // its duplicate window's SeqGaps
    std::atomic<uint64_t> gaps_filled{0};
};

// A lookup that is safe while the owner may write: a per-worker table is only looked up by its
// worker or after it stopped; the shared table with relaxed atomic loads.
inline std::optional<uint64_t> lookup(const AggTable& t, uint64_t key) {
    return t.find(key);
}
inline std::optional<uint64_t> lookup(const SharedAggTable& t, uint64_t key) {
    return t.find_live(key);
}

// Worker side, once per loop iteration: answers a pending request. The common case is one
// relaxed load of a line nobody writes.
template <class Table>
inline void serve_query(WorkerLink& link, const Table& table) {
    const uint64_t seq = link.posted.load(std::memory_order_relaxed);
    if (seq == link.answered.load(std::memory_order_relaxed)) [[likely]]
        return;
    std::atomic_thread_fence(std::memory_order_acquire);  // pairs with ask()'s release
    const std::optional<uint64_t> v = lookup(table, link.key.load(std::memory_order_relaxed));
    link.found.store(v.has_value(), std::memory_order_relaxed);
    link.value.store(v.value_or(0), std::memory_order_relaxed);
    link.answered.store(seq, std::memory_order_release);
}

// Telemetry side (one caller at a time): the key's value in the worker's table, asked through
// the slot while the worker runs, read directly once it stopped. nullopt in the outer optional:
// the worker did not answer within `timeout`.
template <class Table>
std::optional<std::optional<uint64_t>> ask(WorkerLink& link, const Table& table, uint64_t key,
                                           std::chrono::milliseconds timeout) {
    if (link.stopped.load(std::memory_order_acquire)) return lookup(table, key);
    const uint64_t seq = link.posted.load(std::memory_order_relaxed) + 1;
    link.key.store(key, std::memory_order_relaxed);
    link.posted.store(seq, std::memory_order_release);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (link.answered.load(std::memory_order_acquire) == seq) {
            if (!link.found.load(std::memory_order_relaxed)) return std::optional<uint64_t>();
            return std::optional<uint64_t>(link.value.load(std::memory_order_relaxed));
        }
        if (link.stopped.load(std::memory_order_acquire)) return lookup(table, key);
        if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

}  // namespace linerate::kvagg
