#pragma once
// Small, fast, seedable random numbers for traffic generation (xoshiro256**, seeded through
// splitmix64 as its authors recommend). Same seed, same numbers, on every platform: the pcap a
// test reads and the frames the sender transmits come from the same stream.
#include <cstdint>

namespace linerate::gen {

inline uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

class Rng {
  public:
    explicit Rng(uint64_t seed) {
        for (auto& w : s_) w = splitmix64(seed);
    }

    uint64_t next() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Uniform in [0, n) by multiply-shift (Lemire); the bias is below n / 2^64, negligible here.
    uint64_t below(uint64_t n) { return uint64_t((unsigned __int128)next() * n >> 64); }

    // Uniform in [0, 1).
    double unit() { return double(next() >> 11) * 0x1.0p-53; }

  private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

// The seed of worker `index`: distinct, well-mixed streams from one user seed.
inline uint64_t worker_seed(uint64_t seed, unsigned index) {
    uint64_t s = seed ^ (uint64_t(index) * 0xD1B54A32D192ED03ull);
    return splitmix64(s);
}

}  // namespace linerate::gen
