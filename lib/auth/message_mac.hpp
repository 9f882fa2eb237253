#pragma once
// A shared-secret MAC on every datagram of a keyed service (kvagg's and clocksync's --key): the
// sender appends a 28-byte trailer, nonce (12) then tag (16), to its UDP payload; the receiver
// recomputes the tag over the payload before the trailer and drops what does not match.
//
// The tag is AES-256-GMAC (AES-256-GCM with no plaintext, the payload as additional data)
// through OpenSSL: on x86-64 (AES-NI, PCLMULQDQ) and on the BlueField-3's Arm cores (the ARMv8
// crypto extensions) it is the cheapest MAC Debian's libraries offer for datagrams of hundreds
// of bytes (AMD EPYC, cycles for 576 bytes: GMAC 212, SipHash-2-4 (128-bit) 870, ChaCha20 +
// Poly1305 1200, BLAKE2b 5000, HMAC-SHA256 8100; docs/security.md). GMAC
// needs a nonce never used twice under one key: each MessageMac draws a random 64-bit sender id
// when made (and again every 2^32 messages) and counts its messages, so the nonce is
// (sender id, counter); two senders sharing a key collide with probability n^2 / 2^65 for n
// MessageMacs made in the key's lifetime (docs/security.md: rotate keys).
//
// One MessageMac per thread (it keeps an OpenSSL context); the key stays in that context only.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace linerate::auth {

inline constexpr size_t kKeyLen = 32;    // AES-256
inline constexpr size_t kNonceLen = 12;  // sender id (8), counter (4, big-endian)
inline constexpr size_t kTagLen = 16;
inline constexpr size_t kTrailerLen = kNonceLen + kTagLen;

struct Key {
    std::array<uint8_t, kKeyLen> bytes{};
};

// A key file that cannot be used; what() is one line naming the file and what to do.
struct KeyFileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// 64 hex digits (either case), surrounding white space ignored. nullopt-free: throws
// KeyFileError("...") with `what` naming where the text came from.
Key parse_key_hex(std::string_view text, std::string_view what);

// Reads a key file made as docs/security.md says (`openssl rand -hex 32 > FILE`, mode 0600):
// refuses one that is not a regular file, that group or others may read or write (as ssh does
// for private keys), or whose content is not 64 hex digits.
Key load_key_file(const std::string& path);

class MessageMac {
  public:
    explicit MessageMac(const Key& key);
    ~MessageMac();
    MessageMac(MessageMac&&) noexcept;
    MessageMac& operator=(MessageMac&&) noexcept;

    // Appends the trailer for payload[0, len) at payload + len (the caller has the room);
    // returns len + kTrailerLen.
    size_t sign(uint8_t* payload, size_t len);
    // Whether payload[0, len) ends with a trailer whose tag is this key's over what precedes it
    // (false for len < kTrailerLen). Constant time in the tag comparison.
    bool verify(const uint8_t* payload, size_t len);

    // The tag of `data` under `nonce` (tests hold other implementations to it).
    std::array<uint8_t, kTagLen> tag(const uint8_t* nonce, const uint8_t* data, size_t len);

  private:
    void next_nonce(uint8_t* out);
    void draw_sender_id();

    struct Ctx;
    std::unique_ptr<Ctx> ctx_;
    uint64_t sender_id_ = 0;
    uint32_t counter_ = 0;
};

}  // namespace linerate::auth
