#pragma once
// The one slot through which other threads ask a kvagg worker for something: telemetry for one
// key's value, the control thread for its part of a service request (control_job.hpp) and to
// transmit response frames. A per-worker table has a single writer and no atomics, so it is read
// by its own worker (between bursts), never by another thread while the worker runs; once the
// worker has stopped, whoever asks reads it directly.
//
// Each kind of request has its own payload and one bit in `pending`: a poster writes its payload,
// then sets its bit (release). The worker's only poll, once per loop round, is one relaxed load
// of `pending`; when it is not zero the worker takes the bits (acquire) and serves each.
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

struct ControlJob;  // control_job.hpp

// A response frame for the worker to transmit on `port` (its own queue of that port).
struct OutgoingFrame {
    uint16_t port = 0;
    std::vector<uint8_t> frame;
};

struct RequestSlot {
    // The bits of `pending`, one per kind of request.
    static constexpr uint32_t kQuery = 1;   // telemetry: one key's value
    static constexpr uint32_t kJob = 2;     // control: the worker's part of a service request
    static constexpr uint32_t kFrames = 4;  // control: response frames to transmit

    // Worker side: the poll (once per loop round) and the take of what was posted.
    bool has_pending() const { return pending.load(std::memory_order_relaxed) != 0; }
    uint32_t take_pending() { return pending.exchange(0, std::memory_order_acquire); }
    // Poster side, once its payload is written: the worker sees the payload when it takes the
    // bit.
    void post(uint32_t bit) { pending.fetch_or(bit, std::memory_order_release); }

    alignas(64) std::atomic<uint32_t> pending{0};
    // Set when the worker's loop has returned (or it never ran): posters do its part themselves.
    std::atomic<bool> stopped{false};
    // telemetry -> worker: the key of query number `posted`.
    std::atomic<uint64_t> posted{0};
    std::atomic<uint64_t> key{0};
    // worker -> telemetry: the answer to query number `answered`.
    alignas(64) std::atomic<uint64_t> answered{0};
    std::atomic<uint64_t> value{0};
    std::atomic<bool> found{false};
    // control -> worker: its part of a service request, cleared when done.
    std::atomic<ControlJob*> job{nullptr};
    // control -> worker: response frames to send.
    std::mutex outbox_mutex;
    std::deque<OutgoingFrame> outbox;
};

// A lookup that is safe while the owner may write: a per-worker table is only looked up by its
// worker or after it stopped; the shared table with relaxed atomic loads.
inline std::optional<uint64_t> lookup(const AggTable& t, uint64_t key) {
    return t.find(key);
}
inline std::optional<uint64_t> lookup(const SharedAggTable& t, uint64_t key) {
    return t.find_live(key);
}

// Worker side: answers the pending query, if any.
template <class Table>
inline void serve_query(RequestSlot& slot, const Table& table) {
    const uint64_t seq = slot.posted.load(std::memory_order_relaxed);
    if (seq == slot.answered.load(std::memory_order_relaxed)) return;
    std::atomic_thread_fence(std::memory_order_acquire);  // pairs with ask()'s release
    const std::optional<uint64_t> v = lookup(table, slot.key.load(std::memory_order_relaxed));
    slot.found.store(v.has_value(), std::memory_order_relaxed);
    slot.value.store(v.value_or(0), std::memory_order_relaxed);
    slot.answered.store(seq, std::memory_order_release);
}

// Telemetry side (one caller at a time): the key's value in the worker's table, asked through
// the slot while the worker runs, read directly once it stopped. nullopt in the outer optional:
// the worker did not answer within `timeout`.
template <class Table>
std::optional<std::optional<uint64_t>> ask(RequestSlot& slot, const Table& table, uint64_t key,
                                           std::chrono::milliseconds timeout) {
    if (slot.stopped.load(std::memory_order_acquire)) return lookup(table, key);
    const uint64_t seq = slot.posted.load(std::memory_order_relaxed) + 1;
    slot.key.store(key, std::memory_order_relaxed);
    slot.posted.store(seq, std::memory_order_release);
    slot.post(RequestSlot::kQuery);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (slot.answered.load(std::memory_order_acquire) == seq) {
            if (!slot.found.load(std::memory_order_relaxed)) return std::optional<uint64_t>();
            return std::optional<uint64_t>(slot.value.load(std::memory_order_relaxed));
        }
        if (slot.stopped.load(std::memory_order_acquire)) return lookup(table, key);
        if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

// Control side: posts the worker's part of a request.
inline void post_job(RequestSlot& slot, ControlJob* job) {
    slot.job.store(job, std::memory_order_release);
    slot.post(RequestSlot::kJob);
}

// Control side: waits until the worker did its posted job. A stopped worker never takes its job
// again: whoever clears the slot does it (here: run_here()).
template <class RunHere>
void wait_job(RequestSlot& slot, RunHere run_here) {
    for (unsigned spins = 0; slot.job.load(std::memory_order_acquire) != nullptr; ++spins) {
        if (slot.stopped.load(std::memory_order_acquire)) {
            if (slot.job.exchange(nullptr, std::memory_order_acq_rel) != nullptr) run_here();
            return;
        }
        if (spins < 64)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
}

// Control side: queues response frames for the worker to transmit on `port`.
inline void post_frames(RequestSlot& slot, uint16_t port,
                        std::vector<std::vector<uint8_t>> frames) {
    if (frames.empty()) return;
    {
        std::lock_guard lock(slot.outbox_mutex);
        for (auto& f : frames) slot.outbox.push_back({port, std::move(f)});
    }
    slot.post(RequestSlot::kFrames);
}

// Worker side: up to `max` queued response frames; what stays queued is posted again, for the
// next round.
inline std::vector<OutgoingFrame> take_frames(RequestSlot& slot, size_t max) {
    std::vector<OutgoingFrame> frames;
    std::lock_guard lock(slot.outbox_mutex);
    while (!slot.outbox.empty() && frames.size() < max) {
        frames.push_back(std::move(slot.outbox.front()));
        slot.outbox.pop_front();
    }
    if (!slot.outbox.empty()) slot.post(RequestSlot::kFrames);
    return frames;
}

}  // namespace linerate::kvagg
