#pragma once
// A single-writer seqlock: the writer publishes a trivially copyable value without locks or
// waiting; readers (any thread) retry while a write is under way. The value is kept in relaxed
// atomic words so no read is a data race in the C++ model (the Boehm fence recipe).
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace linerate::clocksync {

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
        const uint64_t s = seq_.load(std::memory_order_relaxed);
        seq_.store(s + 1, std::memory_order_relaxed);  // odd: a write is under way
        std::atomic_thread_fence(std::memory_order_release);
        for (size_t i = 0; i < kWords; ++i) words_[i].store(buf[i], std::memory_order_relaxed);
        seq_.store(s + 2, std::memory_order_release);
    }

    T load() const {
        std::array<uint64_t, kWords> buf{};
        for (;;) {
            const uint64_t before = seq_.load(std::memory_order_acquire);
            for (size_t i = 0; i < kWords; ++i) buf[i] = words_[i].load(std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_acquire);
            if ((before & 1) == 0 && seq_.load(std::memory_order_relaxed) == before) break;
        }
        T value;
        std::memcpy(static_cast<void*>(&value), buf.data(), sizeof(T));
        return value;
    }

    // How many values were stored (changes on every store).
    uint64_t version() const { return seq_.load(std::memory_order_acquire) / 2; }

  private:
    alignas(64) std::atomic<uint64_t> seq_{0};
    std::array<std::atomic<uint64_t>, kWords> words_{};
};

}  // namespace linerate::clocksync
