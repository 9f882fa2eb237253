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

// The counter once a write has ended: the odd value + 1, skipping 0 (0 means "never written":
// ClockBound's 16-bit generation wraps to 2, and so does any counter here).
template <class Seq>
constexpr Seq seqlock_next_even(Seq odd) {
    const Seq next = Seq(odd + 1);
    return next == 0 ? Seq(2) : next;
}

// One writer only. `seq` is odd while the words are being written (a writer that died in the
// middle left it odd: the next write keeps it so, then ends it even).
template <class Seq>
inline void seqlock_store(Seq& seq, uint64_t* words, const uint64_t* value, size_t n) {
    static_assert(std::is_unsigned_v<Seq>);
    std::atomic_ref<Seq> s(seq);
    const Seq before = s.load(std::memory_order_relaxed);
    const Seq odd = (before & 1) ? before : Seq(before + 1);
    s.store(odd, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (size_t i = 0; i < n; ++i)
        std::atomic_ref<uint64_t>(words[i]).store(value[i], std::memory_order_relaxed);
    s.store(seqlock_next_even(odd), std::memory_order_release);
}

// One attempt: true when `out` holds a value no write overlapped.
template <class Seq>
inline bool seqlock_try_load(const Seq& seq, const uint64_t* words, uint64_t* out, size_t n) {
    std::atomic_ref<Seq> s(const_cast<Seq&>(seq));
    const Seq before = s.load(std::memory_order_acquire);
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
