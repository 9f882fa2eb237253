#pragma once
// The nfv packet kernel: Click/FastClick's CheckIPHeader on one Ethernet frame, no EAL.
// Checks and reason texts follow elements/ip/checkipheader.cc, in Click's order.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string_view>
#include <vector>

#include "nfv/xdp/check_ipv4.h"
#include "pkt/bytes.hpp"
#include "pkt/headers.hpp"
#include "stats/names.hpp"

namespace linerate::nfv {

// The drop reasons, X(id, text): the ids are the JSON/telemetry keys, the texts Click's
// reason_texts, verbatim (summary, --verbose log).
#define LINERATE_NFV_DROPS(X)                    \
    X(not_ipv4, "not IPv4")                      \
    X(tiny_packet, "tiny packet")                \
    X(bad_version, "bad IP version")             \
    X(bad_header_length, "bad IP header length") \
    X(bad_length, "bad IP length")               \
    X(bad_checksum, "bad IP checksum")           \
    X(bad_source, "bad source address")
// The board's drop reasons: the check's, then split_header, a chain whose first segment ends
// inside the headers the check reads (no PMD splits there, but nothing forbids it), dropped
// rather than copied (apps/nfv/mbuf_kernel.hpp).
#define LINERATE_NFV_BOARD_DROPS(X) \
    LINERATE_NFV_DROPS(X)           \
    X(split_header, "split header")
LINERATE_DROPS(Drop, kDrops, LINERATE_NFV_BOARD_DROPS);
// Verdict: the runtime's slots, the check's drop reasons (each with its board slot), then ok.
LINERATE_VERDICTS(Verdict, LINERATE_NFV_DROPS);
LINERATE_SAME_SLOTS(Verdict, Drop, LINERATE_NFV_DROPS)
inline constexpr size_t kVerdictCount = size_t(Verdict::ok) + 1;

// apps/nfv/xdp/check_ipv4.h's verdicts (the check both datapaths compile) are these, in the same
// order, without the runtime's slots in front.
constexpr Verdict verdict_of(lr_ipv4_verdict v) {
    return Verdict(unsigned(v) + unsigned(Verdict::not_ipv4));
}
inline constexpr const char* kCheckKeys[] = {LR_IPV4_DROPS(LR_DROP_KEY_ITEM)};
static_assert(stats::same_keys(kDrops, unsigned(Verdict::not_ipv4), kCheckKeys, "split_header"),
              "apps/nfv/xdp/check_ipv4.h's LR_IPV4_DROPS and LINERATE_NFV_DROPS differ");
static_assert(verdict_of(LR_IPV4_OK) == Verdict::ok);

// Click's text ("ok" for ok); the texts are string literals.
constexpr const char* verdict_name(Verdict v) {
    return v == Verdict::ok ? "ok" : kDrops[stats::drop_slot(v)].text.data();
}

struct Result {
    Verdict verdict;
    // Valid IPv4: L2 header (with tags) + IP total length, i.e. Ethernet padding trimmed.
    // Passed non-IP frames and drops: the frame length, unchanged.
    uint32_t out_len;
};

struct Config {
    bool verify_checksum = true;  // off = Click's CHECKSUM false (CheckIPHeader2)
    bool pass_non_ip = false;
    // RFC 1812 5.3.7: never valid as a source. Click's BADSRC; order and duplicates don't matter.
    std::vector<uint32_t> bad_src{0x00000000u, 0xFFFFFFFFu};
    // Click's GOODDST: destinations exempt from the bad-source check.
    std::vector<uint32_t> good_dst;
};

// What an INTERFACES value stands for (Click's InterfacesArg): bad sources are each subnet's
// broadcast address plus 0.0.0.0 and 255.255.255.255; good destinations are the addresses.
struct Interfaces {
    std::vector<uint32_t> bad_src;
    std::vector<uint32_t> good_dst;
};

// Option value parsers; they throw std::invalid_argument naming the bad token (addresses are
// lib/pkt's parse_ipv4: "a.b.c.d", host order).
// "a.b.c.d,e.f.g.h" (spaces around entries allowed); "" is the empty list.
std::vector<uint32_t> parse_ipv4_list(std::string_view text);
// "a.b.c.d/len,..." with len 0..32; a bare address means /32, as in Click.
Interfaces parse_interfaces(std::string_view text);

// How check_fast() proves that a frame's source address is not a bad one.
enum class SourceTest : uint8_t {
    rfc1812,  // the bad sources are exactly 0.0.0.0 and 255.255.255.255 (the default)
    filter,   // any other list: a hashed bit per bad source, the exact lookup on a set bit
};

// What check_fast()'s tests say about a frame: valid and as long as its datagram; passed all
// but the length test (Ethernet padding, or a bad length); not passed (the whole check decides).
enum class FastTests : uint8_t { valid_unpadded, other_length, not_passed };

class CheckIpHeader {
  public:
    explicit CheckIpHeader(Config config = {});

    // Verdict for one frame of `len` bytes starting at its Ethernet header.
    Result check(const uint8_t* frame, size_t len) const {
        if (len > UINT32_MAX) [[unlikely]]
            return check_full(frame, len);
        const bool rfc1812 = source_test_ == SourceTest::rfc1812;
        if (verify_checksum_)
            return rfc1812 ? check_fast<true, SourceTest::rfc1812>(frame, len)
                           : check_fast<true, SourceTest::filter>(frame, len);
        return rfc1812 ? check_fast<false, SourceTest::rfc1812>(frame, len)
                       : check_fast<false, SourceTest::filter>(frame, len);
    }

    // check() with the configuration's choices fixed at compile time, so that the per-frame path
    // tests none of them; kChecksum must be verify_checksum() and kSource source_test().
    // Inline fast path for what line-rate traffic is: untagged IPv4 without options, valid, from
    // a source that can't be a bad one. Anything else (drops, tags, options, a possibly bad
    // source, non-IP) goes to check_full(), which gives the same answer for every frame.
    template <bool kChecksum, SourceTest kSource>
    Result check_fast(const uint8_t* frame, uint16_t len) const {
        const FastTests t = fast_tests<kChecksum, kSource>(frame, len);
        if (t == FastTests::valid_unpadded) [[likely]]
            return {Verdict::ok, len};
        return check_rest(frame, len, t);
    }

    // check_fast()'s tests, for a caller that handles the common case itself (apps/nfv/
    // mbuf_kernel.hpp) and passes the rest to check_rest(): where valid_unpadded is returned,
    // len >= 34, and the compiler knows it.
    template <bool kChecksum, SourceTest kSource>
    FastTests fast_tests(const uint8_t* frame, uint16_t len) const {
        constexpr uint32_t kL2 = pkt::kEthHdrLen, kMin = pkt::kIpv4MinHdrLen;
        const uint8_t* ip = frame + kL2;
        // One predictable branch per test: valid traffic never takes them. The ethertype and
        // version/IHL bytes are compared as one word. A frame that ends where its datagram
        // does needs no further length test: its total length field, as it lies in memory,
        // equals len - 14 byte-swapped.
        if (len < kL2 + kMin) [[unlikely]]
            return FastTests::not_passed;
        if ((wire32(frame + 12) & kTypeVersionMask) != kIpv4NoOptions ||
            maybe_bad_src<kSource>(wire32(ip + 12)) || (kChecksum && !header20_checksum_ok(ip)))
            [[unlikely]]
            return FastTests::not_passed;
        return wire16(ip + 2) == pkt::in_memory_order(uint16_t(len - kL2))
                   ? FastTests::valid_unpadded
                   : FastTests::other_length;
    }

    // The verdict on a frame whose fast_tests() were not valid_unpadded. A frame with Ethernet
    // padding passed them all but the length: total - kMin wraps around for total < kMin, so
    // one compare bounds total on both sides. The rest is check_full()'s.
    Result check_rest(const uint8_t* frame, uint16_t len, FastTests t) const {
        constexpr uint32_t kL2 = pkt::kEthHdrLen, kMin = pkt::kIpv4MinHdrLen;
        if (t != FastTests::other_length) return check_full(frame, len);
        const uint32_t total = pkt::load_be16(frame + kL2 + 2);
        if (total - kMin > len - kL2 - kMin) return check_full(frame, len);
        return {Verdict::ok, kL2 + total};
    }

    // The whole check in Click's order: tiny, version, header length, length, checksum, source.
    Result check_full(const uint8_t* frame, size_t len) const;

    // The IPv4 header checksum verifies. ihl_words >= 5 and the header is readable. The shared
    // check's (apps/nfv/xdp/check_ipv4.h).
    static bool header_checksum_ok(const uint8_t* ip, unsigned ihl_words) {
        return lr_ipv4_checksum_ok(ip, ip + 4 * ihl_words, 4 * ihl_words);
    }

    bool verify_checksum() const { return verify_checksum_; }
    SourceTest source_test() const { return source_test_; }
    // header_checksum_ok(ip, 5) in three loads: 64-bit one's-complement addition (end-around
    // carry) keeps the sum mod 2^64 - 1, of which 0xFFFF is a factor.
    static bool header20_checksum_ok(const uint8_t* ip) {
        uint64_t a, b;
        std::memcpy(&a, ip, 8);
        std::memcpy(&b, ip + 8, 8);
        const uint64_t c = wire32(ip + 16);
        uint64_t sum = a + b;
        sum += sum < b;  // the carry out of a + b, added back: can't carry again
        sum += c;
        sum += sum < c;
        return sum % 0xFFFF == 0;
    }

    const std::vector<uint32_t>& bad_src() const { return bad_src_; }
    const std::vector<uint32_t>& good_dst() const { return good_dst_; }

  private:
    // Bytes 12..14 of the frame as wire32() reads them: ethertype 0x0800, then 0x45 (IPv4,
    // 5-word header); byte 15 (TOS) is masked out.
    static constexpr uint32_t kIpv4NoOptions = pkt::in_memory_order(uint32_t(0x08004500));
    static constexpr uint32_t kTypeVersionMask = pkt::in_memory_order(uint32_t(0xFFFFFF00));

    static uint16_t wire16(const uint8_t* p) { return lr_load16(p); }
    // 4 bytes as they lie in memory: hashing and summing them needs no byte swap.
    static uint32_t wire32(const uint8_t* p) { return lr_load32(p); }
    // A bit set per bad source (hashed, so other addresses may share it): a clear bit proves
    // the source good with one load; a set bit sends the frame to the exact lookup.
    static uint32_t filter_bit(uint32_t wire_addr) { return (wire_addr * 0x9E3779B1u) >> 20; }
    template <SourceTest kSource>
    bool maybe_bad_src(uint32_t wire_addr) const {
        // 0 and ~0 read the same in any byte order; adding 1 maps them to 1 and 0.
        if constexpr (kSource == SourceTest::rfc1812) return wire_addr + 1 <= 1;
        const uint32_t bit = filter_bit(wire_addr);
        return (bad_src_filter_[bit / 64] >> (bit % 64)) & 1;
    }

    bool verify_checksum_;
    bool pass_non_ip_;
    SourceTest source_test_;
    std::array<uint64_t, 64> bad_src_filter_{};  // 4096 bits
    std::vector<uint32_t> bad_src_;              // sorted, unique, host order
    std::vector<uint32_t> good_dst_;             // sorted, unique, host order
};

}  // namespace linerate::nfv
