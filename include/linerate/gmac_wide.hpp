// linerate/gmac_wide.hpp: AES-256-GMAC of one message in one pass, for x86-64 CPUs with AES-NI,
// AVX-512 (F, BW) and VPCLMULQDQ; message_auth.hpp's MessageMac uses it where the CPU has them
// and OpenSSL's GCM otherwise (the same tag: tests/unit/message_mac_test.cpp holds the two to
// each other at every length).
//
// Why: GHASH is a polynomial in H, Y = B1·H^m + B2·H^(m-1) + ... + Bm·H (Bm the lengths block).
// OpenSSL evaluates it by Horner's rule, a chain of multiplications each waiting on the one
// before (~0.1 ns a byte), and sets up a context per message (~40 ns). With H's powers kept per
// key, every product is independent: four blocks per 512-bit carry-less multiply, the 256-bit
// products summed unreduced, one reduction per message (GF(2) shift and reduction are linear).
// A kvagg datagram of 32 tuples costs ~30 ns instead of ~100 (bench/mac_cost).
//
// Blocks are byte-reversed on load (GCM's bit order, as Intel's "Carry-Less Multiplication and
// its Usage for Computing the GCM Mode" does); the powers are kept so reversed.
#ifndef LINERATE_GMAC_WIDE_HPP
#define LINERATE_GMAC_WIDE_HPP

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LINERATE_GMAC_WIDE 1
#include <immintrin.h>
#include <openssl/crypto.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace linerate::auth::gmac_wide {

// Messages of up to this many bytes take the one-pass path (H's powers per key: 16 bytes each);
// longer ones are the caller's to hash otherwise. 2 KiB: any datagram the apps send on a
// standard MTU.
inline constexpr size_t kMaxBytes = 2048;
inline constexpr size_t kMaxBlocks = kMaxBytes / 16 + 1;  // and the lengths block

#define LINERATE_GMAC_TARGET \
    __attribute__((target("aes,pclmul,sse4.1,avx2,avx512f,avx512bw,avx512vl,vpclmulqdq")))

inline bool cpu_has_it() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul") &&
           __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq");
}

// The key's schedule and H's powers. desc[t] = H^(kMaxBlocks - t), reversed, then four zero
// blocks: four consecutive entries from index kMaxBlocks - p are H^p, H^(p-1) ... (zero below
// H^1, for the lanes past a message's end).
struct Key {
    alignas(64) std::array<uint8_t, 16 * (kMaxBlocks + 4)> desc{};
    alignas(16) std::array<uint8_t, 16 * 15> round_keys{};
};

namespace detail {

LINERATE_GMAC_TARGET inline __m128i reverse(__m128i x) {
    return _mm_shuffle_epi8(x, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

LINERATE_GMAC_TARGET inline __m128i expand_step(__m128i key, __m128i assist) {
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    return _mm_xor_si128(key, assist);
}

// FIPS 197's AES-256 key expansion with AESKEYGENASSIST: 15 round keys.
LINERATE_GMAC_TARGET inline void expand_key(const uint8_t key[32], __m128i rk[15]) {
    rk[0] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(key));
    rk[1] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(key + 16));
#define LINERATE_AES256_PAIR(i, rcon)                                                         \
    rk[i] = expand_step(rk[i - 2],                                                            \
                        _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[i - 1], rcon), 0xff)); \
    if (i + 1 < 15)                                                                           \
        rk[i + 1] =                                                                           \
            expand_step(rk[i - 1], _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[i], 0), 0xaa));
    LINERATE_AES256_PAIR(2, 0x01)
    LINERATE_AES256_PAIR(4, 0x02)
    LINERATE_AES256_PAIR(6, 0x04)
    LINERATE_AES256_PAIR(8, 0x08)
    LINERATE_AES256_PAIR(10, 0x10)
    LINERATE_AES256_PAIR(12, 0x20)
    LINERATE_AES256_PAIR(14, 0x40)
#undef LINERATE_AES256_PAIR
}

LINERATE_GMAC_TARGET inline __m128i encrypt(const __m128i* rk, __m128i block) {
    block = _mm_xor_si128(block, rk[0]);
    for (int r = 1; r < 14; ++r) block = _mm_aesenc_si128(block, rk[r]);
    return _mm_aesenclast_si128(block, rk[14]);
}

// The 256-bit carry-less product's halves shifted left one bit (GCM's reflected order) and
// reduced modulo x^128 + x^7 + x^2 + x + 1 (Intel's white paper, algorithm 5).
LINERATE_GMAC_TARGET inline __m128i shift_reduce(__m128i lo, __m128i hi) {
    __m128i carry_lo = _mm_srli_epi32(lo, 31), carry_hi = _mm_srli_epi32(hi, 31);
    lo = _mm_slli_epi32(lo, 1);
    hi = _mm_slli_epi32(hi, 1);
    const __m128i across = _mm_srli_si128(carry_lo, 12);
    carry_hi = _mm_slli_si128(carry_hi, 4);
    carry_lo = _mm_slli_si128(carry_lo, 4);
    lo = _mm_or_si128(lo, carry_lo);
    hi = _mm_or_si128(_mm_or_si128(hi, carry_hi), across);
    __m128i a = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi32(lo, 31), _mm_slli_epi32(lo, 30)),
                              _mm_slli_epi32(lo, 25));
    const __m128i b = _mm_srli_si128(a, 4);
    a = _mm_slli_si128(a, 12);
    lo = _mm_xor_si128(lo, a);
    __m128i c = _mm_xor_si128(_mm_xor_si128(_mm_srli_epi32(lo, 1), _mm_srli_epi32(lo, 2)),
                              _mm_srli_epi32(lo, 7));
    c = _mm_xor_si128(c, b);
    lo = _mm_xor_si128(lo, c);
    return _mm_xor_si128(hi, lo);
}

LINERATE_GMAC_TARGET inline __m128i multiply(__m128i a, __m128i b) {
    __m128i lo = _mm_clmulepi64_si128(a, b, 0x00), hi = _mm_clmulepi64_si128(a, b, 0x11);
    const __m128i mid =
        _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x10), _mm_clmulepi64_si128(a, b, 0x01));
    lo = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
    hi = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));
    return shift_reduce(lo, hi);
}

LINERATE_GMAC_TARGET inline __m128i fold_lanes(__m512i v) {
    const __m256i half = _mm256_xor_si256(_mm512_maskz_extracti64x4_epi64(0xFF, v, 0),
                                          _mm512_maskz_extracti64x4_epi64(0xFF, v, 1));
    return _mm_xor_si128(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
}

}  // namespace detail

// The round keys and H's powers of `key` (32 bytes). The stack copies (round keys, H, its last
// power) are as secret as the key: cleansed before returning, as the caller cleanses `k`.
LINERATE_GMAC_TARGET inline void set_key(Key& k, const uint8_t key[32]) {
    __m128i rk[15];
    detail::expand_key(key, rk);
    std::memcpy(k.round_keys.data(), rk, sizeof rk);
    __m128i h = detail::reverse(detail::encrypt(rk, _mm_setzero_si128()));
    __m128i power = h;
    for (size_t p = 1; p <= kMaxBlocks; ++p) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(&k.desc[16 * (kMaxBlocks - p)]), power);
        power = detail::multiply(power, h);
    }
    OPENSSL_cleanse(rk, sizeof rk);
    OPENSSL_cleanse(&h, sizeof h);
    OPENSSL_cleanse(&power, sizeof power);
}

// The tag of data[0, len) (len <= kMaxBytes) under the 12-byte nonce.
LINERATE_GMAC_TARGET inline void tag(const Key& k, const uint8_t nonce[12], const uint8_t* data,
                                     size_t len, uint8_t out[16]) {
    const size_t blocks = (len + 15) / 16, m = blocks + 1;  // m: with the lengths block
    const __m512i reverse_lanes = _mm512_set4_epi64(0x0001020304050607, 0x08090A0B0C0D0E0F,
                                                    0x0001020304050607, 0x08090A0B0C0D0E0F);
    __m512i lo = _mm512_setzero_si512(), hi = lo, mid = lo;
    const uint8_t* powers = k.desc.data() + 16 * (kMaxBlocks - m);  // H^m, H^(m-1) ...
    for (size_t at = 0; at < len; at += 64, powers += 64) {
        const size_t left = len - at;
        const __mmask64 mask = left >= 64 ? ~__mmask64(0) : (__mmask64(1) << left) - 1;
        const __m512i x =
            _mm512_shuffle_epi8(_mm512_maskz_loadu_epi8(mask, data + at), reverse_lanes);
        const __m512i h = _mm512_loadu_si512(powers);
        lo = _mm512_xor_si512(lo, _mm512_clmulepi64_epi128(x, h, 0x00));
        hi = _mm512_xor_si512(hi, _mm512_clmulepi64_epi128(x, h, 0x11));
        mid = _mm512_ternarylogic_epi64(mid, _mm512_clmulepi64_epi128(x, h, 0x01),
                                        _mm512_clmulepi64_epi128(x, h, 0x10), 0x96);
    }
    // The lengths block (bits of additional data, none of ciphertext) times H.
    const __m128i lengths = _mm_set_epi64x(int64_t(len) * 8, 0);
    const __m128i h1 =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(&k.desc[16 * (kMaxBlocks - 1)]));
    __m128i l = _mm_xor_si128(detail::fold_lanes(lo), _mm_clmulepi64_si128(lengths, h1, 0x00));
    __m128i u = _mm_xor_si128(detail::fold_lanes(hi), _mm_clmulepi64_si128(lengths, h1, 0x11));
    const __m128i md = _mm_xor_si128(detail::fold_lanes(mid),
                                     _mm_xor_si128(_mm_clmulepi64_si128(lengths, h1, 0x01),
                                                   _mm_clmulepi64_si128(lengths, h1, 0x10)));
    l = _mm_xor_si128(l, _mm_slli_si128(md, 8));
    u = _mm_xor_si128(u, _mm_srli_si128(md, 8));
    const __m128i ghash = detail::reverse(detail::shift_reduce(l, u));
    // J0 = nonce || 0x00000001, encrypted.
    alignas(16) uint8_t j0[16];
    std::memcpy(j0, nonce, 12);
    j0[12] = j0[13] = j0[14] = 0;
    j0[15] = 1;
    const __m128i* rk = reinterpret_cast<const __m128i*>(k.round_keys.data());
    const __m128i t = _mm_xor_si128(
        ghash, detail::encrypt(rk, _mm_load_si128(reinterpret_cast<const __m128i*>(j0))));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), t);
}

#undef LINERATE_GMAC_TARGET

}  // namespace linerate::auth::gmac_wide

#endif  // x86-64
#endif  // LINERATE_GMAC_WIDE_HPP
