// linerate/message_auth.hpp: the MAC of keyed datagrams and the secret files it is read from, the
// one implementation kvagg, clocksync, their C++ clients and the tools share (header-only, C++17,
// POSIX and OpenSSL's libcrypto: link -lcrypto). docs/security.md says what it protects.
//
// A keyed service (kvagg's and clocksync's --key) appends a 28-byte trailer, nonce (12) then tag
// (16), to every UDP payload it sends; a receiver recomputes the tag over the payload before the
// trailer and drops what does not match. The tag is AES-256-GMAC (AES-256-GCM with no plaintext,
// the payload as additional data): on x86-64 (AES-NI, PCLMULQDQ) and on the BlueField-3's Arm
// cores (the ARMv8 crypto extensions) the cheapest MAC Debian's OpenSSL offers for datagrams of
// hundreds of bytes (bench/run auth-cost: bench/results/auth-cost.json). GMAC needs a nonce never
// used twice under one key: each MessageMac draws a random 64-bit sender id when made (and again
// every 2^32 messages) and counts its messages, so the nonce is (sender id, counter); two
// senders sharing a key collide with probability n^2 / 2^65 for n MessageMacs made in the key's
// lifetime (docs/security.md: rotate keys).
#ifndef LINERATE_MESSAGE_AUTH_HPP
#define LINERATE_MESSAGE_AUTH_HPP

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/modes.h>

#include "linerate/gmac_wide.hpp"

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace linerate::auth {

inline constexpr size_t kKeyLen = 32;    // AES-256
inline constexpr size_t kNonceLen = 12;  // sender id (8), counter (4, big-endian)
inline constexpr size_t kTagLen = 16;
inline constexpr size_t kTrailerLen = kNonceLen + kTagLen;

// A secret file (a MAC key, a password) that cannot be used; what() is one line naming the file
// and what to do.
struct SecretFileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
using KeyFileError = SecretFileError;

struct Key {
    std::array<uint8_t, kKeyLen> bytes{};
};

// `text` without the white space (spaces, tabs, CR, LF) at either end.
inline std::string_view trim_space(std::string_view s) {
    const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

namespace detail {

inline std::string file_refusal(const std::string& path, std::string_view what, const char* why) {
    return std::string(what) + " " + path + " " + why;
}

inline std::string mode_refusal(const std::string& path, std::string_view what, mode_t mode) {
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", unsigned(mode & 07777));
    return file_refusal(path, what, "is accessible by group or others (mode ") + octal +
           "): chmod 600 " + path;
}

inline int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace detail

// The content of `path` (at most `max_bytes`), read only when it is a regular file (not a
// symbolic link) that neither group nor others may read or write, as ssh requires of private
// keys: every option that takes a secret from a file refuses the same files with the same words.
// `what` names the file in the messages ("key file"). The caller wipes the content when done
// with it (OPENSSL_cleanse).
inline std::string read_secret_file(const std::string& path, std::string_view what,
                                    size_t max_bytes = 4096) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        throw SecretFileError("cannot open " + std::string(what) + " " + path + ": " +
                              std::strerror(errno));
    struct stat st {};
    std::string refusal;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        refusal = detail::file_refusal(path, what, "is not a regular file");
    else if (st.st_mode & 077)
        refusal = detail::mode_refusal(path, what, st.st_mode);
    else if (size_t(st.st_size) > max_bytes)
        refusal = detail::file_refusal(path, what, "is larger than ") + std::to_string(max_bytes) +
                  " bytes";
    std::string text(refusal.empty() ? size_t(st.st_size) : 0, '\0');
    size_t n = 0;
    while (refusal.empty() && n < text.size()) {
        const ssize_t got = ::read(fd, &text[n], text.size() - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            refusal = "cannot read " + std::string(what) + " " + path + ": " + std::strerror(errno);
        if (got <= 0) break;
        n += size_t(got);
    }
    ::close(fd);
    if (!refusal.empty()) throw SecretFileError(refusal);
    text.resize(n);  // a file that shrank while read
    return text;
}

// 64 hex digits (either case), surrounding white space ignored; `what` names where the text came
// from in the error.
inline Key parse_key_hex(std::string_view text, std::string_view what) {
    const std::string_view hex = trim_space(text);
    Key key;
    bool ok = hex.size() == 2 * kKeyLen;
    for (size_t i = 0; ok && i < kKeyLen; ++i) {
        const int hi = detail::hex_digit(hex[2 * i]), lo = detail::hex_digit(hex[2 * i + 1]);
        ok = hi >= 0 && lo >= 0;
        key.bytes[i] = uint8_t(hi << 4 | lo);
    }
    if (!ok)
        throw KeyFileError(std::string(what) +
                           " does not hold a key: it must be 64 hex digits (make one with: "
                           "openssl rand -hex 32 > FILE)");
    return key;
}

// A key file made as docs/security.md says (`openssl rand -hex 32 > FILE`, mode 0600).
inline Key load_key_file(const std::string& path) {
    std::string text = read_secret_file(path, "key file", 256);
    try {
        const Key key = parse_key_hex(text, "key file " + path);
        OPENSSL_cleanse(&text[0], text.size());
        return key;
    } catch (...) {
        OPENSSL_cleanse(&text[0], text.size());
        throw;
    }
}

// Signs and verifies datagrams under one key. One per thread (it keeps OpenSSL contexts).
// GMAC through OpenSSL's GCM mode (CRYPTO_gcm128_*: its PCLMULQDQ / PMULL GHASH) over one AES
// block function, the EVP AES-256-ECB context's (AES-NI / ARMv8 AES): the same tag as
// EVP_aes_256_gcm() (the NIST vector in tests/unit/message_mac_test.cpp) at half its cost, the
// EVP GCM path spending about 300 cycles a message in dispatch and setup (bench/mac_cost). On
// x86-64 CPUs with AVX-512 and VPCLMULQDQ, messages up to 2 KiB take gmac_wide.hpp's one-pass
// GHASH instead (the same tag, a third of the time).
class MessageMac {
  public:
    explicit MessageMac(const Key& key) : ctx_(new Ctx) {
        ctx_->ecb = EVP_CIPHER_CTX_new();
        if (!ctx_->ecb ||
            EVP_EncryptInit_ex(ctx_->ecb, EVP_aes_256_ecb(), nullptr, key.bytes.data(), nullptr) !=
                1 ||
            EVP_CIPHER_CTX_set_padding(ctx_->ecb, 0) != 1 ||
            !(ctx_->gcm = CRYPTO_gcm128_new(ctx_->ecb, &Ctx::block)))
            throw std::runtime_error("OpenSSL: cannot set up AES-256-GMAC");
#ifdef LINERATE_GMAC_WIDE
        if (gmac_wide::cpu_has_it()) {
            ctx_->wide.reset(new gmac_wide::Key);
            gmac_wide::set_key(*ctx_->wide, key.bytes.data());
        }
#endif
        draw_sender_id();
    }

    // Appends the trailer for payload[0, len) at payload + len (the caller has the room);
    // returns len + kTrailerLen.
    size_t sign(uint8_t* payload, size_t len) {
        uint8_t* trailer = payload + len;
        next_nonce(trailer);
        const std::array<uint8_t, kTagLen> t = tag(trailer, payload, len);
        std::memcpy(trailer + kNonceLen, t.data(), kTagLen);
        return len + kTrailerLen;
    }
    // Whether payload[0, len) ends with a trailer whose tag is this key's over what precedes it
    // (false for len < kTrailerLen). Constant time in the tag comparison.
    bool verify(const uint8_t* payload, size_t len) {
        if (len < kTrailerLen) return false;
        const size_t body = len - kTrailerLen;
        const std::array<uint8_t, kTagLen> t = tag(payload + body, payload, body);
        return CRYPTO_memcmp(t.data(), payload + body + kNonceLen, kTagLen) == 0;
    }
    // The tag of `data` under `nonce` (tests hold other implementations to it).
    std::array<uint8_t, kTagLen> tag(const uint8_t* nonce, const uint8_t* data, size_t len) {
        std::array<uint8_t, kTagLen> t{};
#ifdef LINERATE_GMAC_WIDE
        if (ctx_->wide && len <= gmac_wide::kMaxBytes) {
            gmac_wide::tag(*ctx_->wide, nonce, data, len, t.data());
            return t;
        }
#endif
        GCM128_CONTEXT* g = ctx_->gcm;
        CRYPTO_gcm128_setiv(g, nonce, kNonceLen);
        if (len && CRYPTO_gcm128_aad(g, data, len) != 0)
            throw std::runtime_error("OpenSSL: AES-256-GMAC failed");
        CRYPTO_gcm128_tag(g, t.data(), kTagLen);
        return t;
    }

  private:
    struct Ctx {
        EVP_CIPHER_CTX* ecb = nullptr;
        GCM128_CONTEXT* gcm = nullptr;
#ifdef LINERATE_GMAC_WIDE
        // The one-pass GHASH where the CPU has AVX-512 and VPCLMULQDQ (gmac_wide.hpp): H's
        // powers, secret as the key is, cleansed with it.
        std::unique_ptr<gmac_wide::Key> wide;
#endif
        Ctx() = default;
        Ctx(const Ctx&) = delete;
        Ctx& operator=(const Ctx&) = delete;
        ~Ctx() {
#ifdef LINERATE_GMAC_WIDE
            if (wide) OPENSSL_cleanse(wide.get(), sizeof *wide);
#endif
            CRYPTO_gcm128_release(gcm);
            EVP_CIPHER_CTX_free(ecb);
        }
        static void block(const unsigned char in[16], unsigned char out[16], const void* ecb) {
            // EVP_Cipher(): straight to the provider's block function (EVP_EncryptUpdate's
            // buffering and checks cost a third of a short message's MAC, bench/mac_cost).
            EVP_Cipher(static_cast<EVP_CIPHER_CTX*>(const_cast<void*>(ecb)), out, in, 16);
        }
    };

    void draw_sender_id() {
        if (::getrandom(&sender_id_, sizeof sender_id_, 0) != ssize_t(sizeof sender_id_))
            throw std::runtime_error("getrandom failed: no nonce for the MAC");
        counter_ = 0;
    }
    void next_nonce(uint8_t* out) {
        if (counter_ == UINT32_MAX) draw_sender_id();  // never a nonce twice under one sender id
        std::memcpy(out, &sender_id_, 8);
        const uint32_t c = counter_++;
        const uint8_t be[4] = {uint8_t(c >> 24), uint8_t(c >> 16), uint8_t(c >> 8), uint8_t(c)};
        std::memcpy(out + 8, be, 4);
    }

    std::unique_ptr<Ctx> ctx_;  // on the heap: the GCM context points at the ECB one
    uint64_t sender_id_ = 0;
    uint32_t counter_ = 0;
};

}  // namespace linerate::auth

#endif  // LINERATE_MESSAGE_AUTH_HPP
