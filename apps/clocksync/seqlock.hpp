#pragma once
// A single-writer seqlock: the writer publishes a trivially copyable value without locks or
// waiting; readers (any thread) retry while a write is under way. The value is kept in words
// accessed only as relaxed atomics (std::atomic_ref), so no read is a data race in the C++ model
// (the Boehm fence recipe). seqlock_store/seqlock_try_load work on any storage, so the same
// protocol serves the in-process Seqlock<T> and the shared-memory time page (time_export.hpp;
// its C reader, linerate/truetime.h, mirrors seqlock_try_load).
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace linerate::clocksync {

// One writer only. `seq` is odd while the words are being written.
inline void seqlock_store(uint64_t& seq, uint64_t* words, const uint64_t* value, size_t n) {
    std::atomic_ref<uint64_t> s(seq);
    const uint64_t before = s.load(std::memory_order_relaxed);
    s.store(before + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (size_t i = 0; i < n; ++i)
        std::atomic_ref<uint64_t>(words[i]).store(value[i], std::memory_order_relaxed);
    s.store(before + 2, std::memory_order_release);
}

// One attempt: true when `out` holds a value no write overlapped.
inline bool seqlock_try_load(const uint64_t& seq, const uint64_t* words, uint64_t* out, size_t n) {
    std::atomic_ref<uint64_t> s(const_cast<uint64_t&>(seq));
    const uint64_t before = s.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i)
        out[i] = std::atomic_ref<uint64_t>(const_cast<uint64_t&>(words[i]))
                     .load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    return (before & 1) == 0 && s.load(std::memory_order_relaxed) == before;
}

template <class T>
class Seqlock {
    static_assert(std::is_trivially_copyable_v<T>);
    static constexpr size_t kWords = (sizeof(T) + 7) / 8;

  public:
    Seqlock() { store(T{}); }

    // One writer only (the thread that owns the value).
    void store(const T& value) {
        std::array<uint64_t, kWords> buf{};
        std::memcpy(buf.data(), &value, sizeof(T));
        seqlock_store(seq_, words_.data(), buf.data(), kWords);
    }

    T load() const {
        std::array<uint64_t, kWords> buf{};
        while (!seqlock_try_load(seq_, words_.data(), buf.data(), kWords)) {
        }
        T value;
        std::memcpy(static_cast<void*>(&value), buf.data(), sizeof(T));
        return value;
    }

    // How many values were stored (changes on every store).
    uint64_t version() const {
        return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(seq_))
                   .load(std::memory_order_acquire) /
               2;
    }

  private:
    alignas(64) uint64_t seq_ = 0;
    std::array<uint64_t, kWords> words_{};
};

}  // namespace linerate::clocksync
