#pragma once
// The kvagg wire format of docs/wire-formats.md (a contract): constants, the receive-side parser
// and the encoder used by tests and the traffic generator.
//
// Receive side is a little more liberal than the canonical frame (untagged Ethernet + IPv4 without
// options + UDP): up to two VLAN/QinQ tags and IPv4 options are accepted, the app header then sits
// at L3 + IHL*4 + 8. The IPv4 header checksum and the UDP checksum (unless 0: none sent) are
// verified, or taken from the port's RX offload verdict (docs/wire-formats.md, Checksums). The
// encoder always writes the canonical untagged frame.
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "pkt/build.hpp"
#include "pkt/bytes.hpp"
#include "pkt/checksum.hpp"
#include "pkt/headers.hpp"
#include "pkt/udp_payload.hpp"
#include "stats/names.hpp"

#include "linerate/kvagg_wire.h"

namespace linerate::kvagg {

// The numbers are include/linerate/kvagg_wire.h's (shared with the clients); these are their
// C++ names.
inline constexpr uint16_t kKvDefaultPort = LINERATE_KV_DEFAULT_PORT;
inline constexpr uint16_t kKvMagic = LINERATE_KV_MAGIC;  // "KV"
inline constexpr uint8_t kKvVersion = LINERATE_KV_VERSION;
inline constexpr uint8_t kKvOpSum = LINERATE_KV_OP_SUM;
// Service requests (docs/kvagg.md "Service ops"); a response carries the request's op | 0x80.
inline constexpr uint8_t kKvOpRead = LINERATE_KV_OP_READ;      // N keys -> their current sums
inline constexpr uint8_t kKvOpStatus = LINERATE_KV_OP_STATUS;  // the stream's duplicate window
inline constexpr uint8_t kKvOpFlush = LINERATE_KV_OP_FLUSH;    // every sum or a range, reset?
inline constexpr uint8_t kKvOpResponse = LINERATE_KV_OP_RESPONSE;
// Request flags (in the reserved field).
inline constexpr uint32_t kKvFlushReset = LINERATE_KV_FLUSH_RESET;
// Response frames: the reserved field holds the frame's index in the response, bit 31 = last.
inline constexpr uint32_t kKvLastFrame = LINERATE_KV_LAST_FRAME;
// Error replies (reserved: last frame | this bit; count: the code; no body, no trailer).
inline constexpr uint32_t kKvError = LINERATE_KV_ERROR;
inline constexpr uint16_t kKvErrAuth = LINERATE_KV_ERR_AUTH;
inline constexpr uint16_t kKvErrNotAllowed = LINERATE_KV_ERR_NOT_ALLOWED;
inline constexpr uint16_t kKvErrTooSmall = LINERATE_KV_ERR_TOO_SMALL;

// Offsets inside the app header (which starts at the UDP payload).
inline constexpr size_t kKvMagicOff = LINERATE_KV_MAGIC_OFF;
inline constexpr size_t kKvVersionOff = LINERATE_KV_VERSION_OFF;
inline constexpr size_t kKvOpOff = LINERATE_KV_OP_OFF;
inline constexpr size_t kKvCountOff = LINERATE_KV_COUNT_OFF;
inline constexpr size_t kKvStreamOff = LINERATE_KV_STREAM_OFF;
inline constexpr size_t kKvSeqOff = LINERATE_KV_SEQ_OFF;
inline constexpr size_t kKvReservedOff = LINERATE_KV_RESERVED_OFF;
inline constexpr size_t kKvHeaderLen = LINERATE_KV_HEADER_LEN;
inline constexpr size_t kKvTupleLen = LINERATE_KV_TUPLE_LEN;  // key u64, value u64
// In a canonical frame the header starts at 42 and the first tuple at 64 (docs/wire-formats.md).
inline constexpr size_t kKvHeaderOffset = pkt::kUdpPayloadOffset;
inline constexpr size_t kKvTuplesOffset = kKvHeaderOffset + kKvHeaderLen;
static_assert(kKvTuplesOffset == 64);

// Every reason a packet is not aggregated by the parser and duplicate filter, X(name, text,
// unit, help).
#define LINERATE_KV_PACKET_DROPS(X)                                                                \
    X(not_kvagg, "not kvagg", packets,                                                             \
      "not IPv4/UDP to the kvagg port (or a non-first fragment, or cut before the UDP header)")    \
    X(malformed, "malformed", packets,                                                             \
      "to the kvagg port, but IPv4/UDP lengths inconsistent, or too short for N tuples")           \
    X(bad_ip_checksum, "bad IP checksum", packets, "the IPv4 header checksum is wrong")            \
    X(bad_udp_checksum, "bad UDP checksum", packets, "the UDP checksum is not 0 (none) and wrong") \
    X(bad_magic, "bad magic", packets, "kvagg port but magic is not 0x4B56")                       \
    X(bad_version, "bad version", packets, "unknown version")                                      \
    X(bad_op, "bad op", packets, "unknown op")                                                     \
    X(bad_request, "bad request", packets,                                                         \
      "read/status/flush request with a bad count, length or flags")                               \
    X(duplicate, "duplicate", packets, "(stream, seq) already seen inside the window")             \
    X(stale, "stale", packets, "seq older than the duplicate window")                              \
    X(too_many_streams, "too many streams", packets,                                               \
      "new stream id beyond the per-worker stream bound")                                          \
    X(other_address, "other address", packets,                                                     \
      "to the kvagg port at an IPv4 address kvagg does not listen on (--listen-ip)")               \
    X(bad_auth, "bad auth", packets,                                                               \
      "kvagg has a --key: no trailer, or one whose MAC does not verify (data or request)")         \
    X(not_allowed, "not allowed", packets,                                                         \
      "from a source outside --allow (data without --key; a request without a valid MAC, or "      \
      "any request when neither --key nor --allow is given)")
// kvagg's drop list, the stats board's slots: the runtime's, the packet reasons, then a request
// the control path could not queue. Every reason counts packets, so rx == aggregated_packets +
// requests + dropped (tuples the table refuses are the counter overflow_tuples).
#define LINERATE_KVAGG_DROPS(X) \
    LINERATE_KV_PACKET_DROPS(X) \
    X(control_busy, "control busy", packets, "a request refused: the control inbox was full")
LINERATE_DROPS(Drop, kDrops, LINERATE_KVAGG_DROPS);

// A frame's verdict: a packet reason (its value is its board slot), table_full (tuples the table
// refused; their packets are ok), ok, or request (a read/status/flush request for the control
// path). Values index counter arrays.
enum class KvVerdict : uint8_t {
    LINERATE_RUNTIME_DROP_IDS LINERATE_NAMES_IDS(LINERATE_KV_PACKET_DROPS) table_full,
    ok,
    request
};
LINERATE_SAME_SLOTS(KvVerdict, Drop, LINERATE_KV_PACKET_DROPS)
inline constexpr size_t kKvVerdictCount = size_t(KvVerdict::request) + 1;

// The board slot of a packet reason.
constexpr Drop kv_drop(KvVerdict v) {
    return Drop(stats::drop_slot(v));
}

// The snake_case name ("ok", "request", "table_full", "not_kvagg", ...).
constexpr std::string_view kv_verdict_name(KvVerdict v) {
    if (v == KvVerdict::ok) return "ok";
    if (v == KvVerdict::request) return "request";
    if (v == KvVerdict::table_full) return "table_full";
    return kDrops[stats::drop_slot(v)].key;
}

// What the parser found. stream/seq/tuple_count/tuples are meaningful only when verdict == ok.
struct KvPacket {
    KvVerdict verdict = KvVerdict::not_kvagg;
    uint16_t tuple_count = 0;
    uint32_t stream = 0;
    uint64_t seq = 0;
    const uint8_t* tuples = nullptr;  // tuple_count * 16 bytes inside the frame, big-endian
    // Accepted with its UDP checksum left to the sender's TX offload (pkt::ChecksumVerdict).
    bool udp_checksum_offloaded = false;
};

// The same verdicts by walking the headers (VLAN tags, IPv4 options): what parse_kv_packet does
// for any frame its fixed-offset fast path for the canonical layout does not take.
KvPacket parse_kv_packet_general(const uint8_t* frame, size_t len, uint16_t udp_port,
                                 pkt::ChecksumCheck checksums = {});

// kvagg's names for the UDP locator's verdicts (pkt/udp_payload.hpp), on both parse paths.
inline constexpr pkt::UdpReasons<KvVerdict> kKvUdpReasons{
    KvVerdict::not_kvagg, KvVerdict::malformed, KvVerdict::bad_ip_checksum,
    KvVerdict::bad_udp_checksum};

// A valid packet's fields, from its app header (`app`) and tuple count.
inline KvPacket kv_accepted(const uint8_t* app, uint16_t n) {
    return {.verdict = KvVerdict::ok,
            .tuple_count = n,
            .stream = pkt::load_be32(app + kKvStreamOff),
            .seq = pkt::load_be64(app + kKvSeqOff),
            .tuples = app + kKvHeaderLen};
}

// The canonical frame (untagged Ethernet, IPv4 without options, not a fragment,
// docs/wire-formats.md) with every check of parse_kv_packet_general(), at fixed offsets without
// walking headers: nearly every frame kvagg sees. nullopt: anything else, which the general path
// sorts out (and names).
inline std::optional<KvPacket> parse_kv_canonical(const uint8_t* frame, size_t len,
                                                  uint16_t udp_port,
                                                  pkt::ChecksumCheck checksums = {}) {
    // A valid canonical frame has at least the 64 header bytes: every read below is inside.
    if (len < kKvTuplesOffset) return std::nullopt;
    // Three 8-byte words hold every fixed field, compared under masks (big-endian, byte 0 of
    // the word in the top bits): about a third of the instructions of field-by-field tests.
    //   w12: ethertype 0x0800, version/IHL 0x45, (TOS, total length, id)
    //   w20: flags/fragment offset & 0x3FFF == 0 (DF allowed), (TTL), protocol 17, (checksum...)
    //   w36: UDP destination port, (UDP length, checksum), magic 0x4B56
    const uint64_t w12 = pkt::load_be64(frame + 12);
    const uint64_t w20 = pkt::load_be64(frame + 20);
    const uint64_t w36 = pkt::load_be64(frame + 36);
    const uint8_t* app = frame + kKvHeaderOffset;
    if ((w12 & 0xFFFFFF0000000000ull) != 0x0800450000000000ull ||
        (w20 & 0x3FFF00FF00000000ull) != (uint64_t(pkt::kIpProtoUdp) << 32) ||
        (w36 & 0xFFFF00000000FFFFull) != (uint64_t(udp_port) << 48 | kKvMagic) ||
        pkt::load_be16(app + kKvVersionOff) != (kKvVersion << 8 | kKvOpSum))
        return std::nullopt;
    const size_t total = (w12 >> 16) & 0xFFFF;
    const size_t udp_len = (w36 >> 32) & 0xFFFF;
    const uint16_t n = pkt::load_be16(app + kKvCountOff);
    // udp_len >= 30 and udp_len <= total - 20 also give total >= the IPv4 + UDP headers.
    if (total > len - pkt::kEthHdrLen || udp_len < pkt::kUdpHdrLen + kKvHeaderLen ||
        udp_len + pkt::kIpv4MinHdrLen > total ||
        udp_len - pkt::kUdpHdrLen - kKvHeaderLen < size_t(n) * kKvTupleLen)
        return std::nullopt;
    // Every other check passed, so a checksum's verdict is the frame's (they come first).
    const uint8_t* ip = frame + pkt::kEthHdrLen;
    const pkt::ChecksumVerdict c =
        pkt::check_ipv4_udp(ip, pkt::kIpv4MinHdrLen, ip + pkt::kIpv4MinHdrLen, udp_len, checksums);
    if (c != pkt::ChecksumVerdict::ok) [[unlikely]] {
        if (!pkt::checksum_accepted(c))
            return KvPacket{.verdict = kKvUdpReasons.of(pkt::udp_verdict(c))};
        KvPacket p = kv_accepted(app, n);
        p.udp_checksum_offloaded = true;
        return p;
    }
    return kv_accepted(app, n);
}

// The shape of nearly every frame at one tuple a datagram: the canonical frame with one tuple,
// IPv4 total length 66 and UDP length 46 exactly, no UDP checksum sent (0), to `udp_port`. Its
// lengths are then constants, so every test of parse_kv_canonical() but the IPv4 header sum is a
// compare of four words under masks, as they lie in memory (no byte swap), and one of the
// frame's length. matches(): parse_kv_canonical() accepts the frame as one tuple at offset 64
// iff its IPv4 header sum verifies (with the port's word for the UDP checksum unknown or good).
// Anything else (other counts, bytes after the tuple, a UDP checksum) is not matched, and takes
// the canonical parse.
class KvOneTupleShape {
  public:
    explicit KvOneTupleShape(uint16_t udp_port)
        : w36_(pkt::in_memory_order(uint64_t(udp_port) << 48 | uint64_t(kUdpLen) << 32 |
                                    kKvMagic)) {}

    static constexpr size_t kFrameLen = kKvTuplesOffset + kKvTupleLen;

    // Always inlined: out of line (GCC's choice after unrelated changes) it cost 15 a frame.
    [[gnu::always_inline]] bool matches(const uint8_t* frame, size_t len) const {
        if (len < kFrameLen) return false;  // every read below is inside
        // w12: ethertype 0x0800, version/IHL 0x45, (TOS), total length 66, (id)
        // w20: flags/fragment offset & 0x3FFF == 0, (TTL), protocol 17, (checksum, source)
        // w36: UDP destination port, UDP length 46, checksum 0, magic 0x4B56
        // w44: version, op sum, count 1 (32 bits)
        const uint64_t d12 = (lr_load64(frame + 12) & kMask12) ^ kWant12;
        const uint64_t d20 = (lr_load64(frame + 20) & kMask20) ^ kWant20;
        const uint64_t d36 = lr_load64(frame + 36) ^ w36_;
        const uint32_t d44 = lr_load32(frame + 44) ^ kWant44;
        return (d12 | d20 | d36 | d44) == 0;
    }

  private:
    static constexpr uint16_t kTotalLen = uint16_t(kFrameLen - pkt::kEthHdrLen);
    static constexpr uint16_t kUdpLen = uint16_t(kTotalLen - pkt::kIpv4MinHdrLen);
    static constexpr uint64_t kMask12 = pkt::in_memory_order(uint64_t(0xFFFFFF00FFFF0000));
    static constexpr uint64_t kWant12 =
        pkt::in_memory_order(uint64_t(0x0800450000000000) | uint64_t(kTotalLen) << 16);
    static constexpr uint64_t kMask20 = pkt::in_memory_order(uint64_t(0x3FFF00FF00000000));
    static constexpr uint64_t kWant20 = pkt::in_memory_order(uint64_t(pkt::kIpProtoUdp) << 32);
    static constexpr uint32_t kWant44 =
        pkt::in_memory_order(uint32_t(kKvVersion) << 24 | uint32_t(kKvOpSum) << 16 | 1);
    uint64_t w36_;
};

// Parser verdicts: ok, request, not_kvagg, malformed, bad_ip_checksum, bad_udp_checksum,
// bad_magic, bad_version, bad_op, bad_request. Reads only inside
// [frame, frame + len). The reserved field is ignored; bytes after the N tuples are allowed.
// Inline, with the canonical fast path: the per-frame work at few tuples per packet.
inline KvPacket parse_kv_packet(const uint8_t* frame, size_t len, uint16_t udp_port,
                                pkt::ChecksumCheck checksums = {}) {
    if (std::optional<KvPacket> p = parse_kv_canonical(frame, len, udp_port, checksums)) [[likely]]
        return *p;
    return parse_kv_packet_general(frame, len, udp_port, checksums);
}

// The IPv4 destinations kvagg serves (--listen-ip); none listed: every address. A port sees
// datagrams to any address on its link (an af_packet socket even other interfaces' frames until
// it is bound), so two instances in one namespace would otherwise count each other's traffic.
struct ListenAddrs {
    static constexpr size_t kMax = 8;
    std::array<uint32_t, kMax> addrs{};  // host byte order, the first `count`
    size_t count = 0;

    // Whether `frame`, which the parser found to be to kvagg's port (any verdict but not_kvagg:
    // its IPv4 header is inside), is to one of them. The canonical frame to the first address
    // costs one compare of its destination (and one of its EtherType).
    bool admits(const uint8_t* frame, size_t len) const {
        if (count == 0) return true;
        constexpr size_t kCanonicalDstOff = pkt::kEthHdrLen + 16;
        if (pkt::load_be32(frame + kCanonicalDstOff) == addrs[0] &&
            pkt::load_be16(frame + 12) == pkt::kEtherTypeIpv4) [[likely]]
            return true;
        return admits_any(frame, len);
    }
    // VLAN tags, and the addresses after the first.
    bool admits_any(const uint8_t* frame, size_t len) const;
};

// The IPv4 source address (host order) of a frame the parser accepted (its IPv4 header is
// inside): --allow's check of a sum datagram. The canonical frame costs one compare.
uint32_t kv_frame_source_any(const uint8_t* frame, size_t len);  // VLAN tags
inline uint32_t kv_frame_source(const uint8_t* frame, size_t len) {
    if (pkt::load_be16(frame + 12) == pkt::kEtherTypeIpv4) [[likely]]
        return pkt::load_be32(frame + pkt::kEthHdrLen + 12);
    return kv_frame_source_any(frame, len);
}

// parse_kv_packet, then the destination: a datagram to kvagg's port at an address `listen` does
// not hold is other_address, whatever else is wrong with it, and nothing of it is taken.
inline KvPacket parse_kv_packet(const uint8_t* frame, size_t len, uint16_t udp_port,
                                pkt::ChecksumCheck checksums, const ListenAddrs& listen) {
    const KvPacket p = parse_kv_packet(frame, len, udp_port, checksums);
    if (p.verdict != KvVerdict::not_kvagg && !listen.admits(frame, len)) [[unlikely]]
        return {.verdict = KvVerdict::other_address};
    return p;
}

// A read/status/flush request as the control path sees it (verdict request), with where its
// headers are, so a response can be written with the addresses swapped.
struct KvRequest {
    KvVerdict verdict = KvVerdict::not_kvagg;  // request, or why the frame is not one
    uint8_t op = 0;
    uint16_t count = 0;  // read: keys; flush: 0 (all keys) or 1 (a range); status: 0
    uint32_t stream = 0;
    uint64_t seq = 0;
    uint32_t flags = 0;             // the reserved field
    const uint8_t* body = nullptr;  // after the 22-byte header: read keys, flush range
    size_t l3_offset = 0;           // IPv4 header
    size_t app_offset = 0;          // app header (UDP payload)
    size_t app_len = 0;             // UDP payload bytes (a keyed request's trailer included)

    uint64_t key(size_t i) const { return pkt::load_be64(body + 8 * i); }
    bool reset() const { return flags & kKvFlushReset; }
    // Flush key range, inclusive (all keys when count == 0).
    uint64_t range_lo() const { return count ? pkt::load_be64(body) : 0; }
    uint64_t range_hi() const { return count ? pkt::load_be64(body + 8) : ~uint64_t(0); }
};

// The IPv4 source of a request (`frame` the one r was parsed from), host order.
inline uint32_t kv_request_source(const uint8_t* frame, const KvRequest& r) {
    return pkt::load_be32(frame + r.l3_offset + 12);
}

// Any frame; verdict request only for a well-formed request (checks in docs/kvagg.md), else the
// verdict parse_kv_packet would give (ok for a sum packet).
KvRequest parse_kv_request(const uint8_t* frame, size_t len, uint16_t udp_port);

// Writes the Ethernet/IPv4/UDP headers of a response to `request` into `out`: the request's own
// header bytes (VLAN tags and IPv4 options kept) with MACs, IPv4 addresses and UDP ports swapped,
// TTL 64, no fragmentation. The caller writes the app header and body at out + app_offset, then
// calls finish_kv_response().
void start_kv_response(uint8_t* out, const uint8_t* request, const KvRequest& r);
// Sets the IPv4 total length, UDP length and both checksums for a frame of frame_len bytes.
void finish_kv_response(uint8_t* frame, const KvRequest& r, size_t frame_len);

inline uint64_t kv_tuple_key(const uint8_t* tuples, size_t i) {
    return pkt::load_be64(tuples + i * kKvTupleLen);
}
inline uint64_t kv_tuple_value(const uint8_t* tuples, size_t i) {
    return pkt::load_be64(tuples + i * kKvTupleLen + 8);
}

struct KvTuple {
    uint64_t key = 0;
    uint64_t value = 0;
    friend bool operator==(const KvTuple&, const KvTuple&) = default;
};

// The app header fields; magic/version/op default to the valid values (tests change them).
struct KvHeader {
    uint16_t tuple_count = 0;
    uint32_t stream = 0;
    uint64_t seq = 0;
    uint16_t magic = kKvMagic;
    uint8_t version = kKvVersion;
    uint8_t op = kKvOpSum;
};

// Canonical frame length for n tuples: 64 + 16n.
constexpr size_t kv_frame_len(size_t tuples) {
    return kKvTuplesOffset + tuples * kKvTupleLen;
}
// Most tuples a canonical frame of at most frame_len bytes can carry (0 if it cannot hold the
// header).
constexpr size_t kv_max_tuples(size_t frame_len) {
    return frame_len < kKvTuplesOffset ? 0 : (frame_len - kKvTuplesOffset) / kKvTupleLen;
}

// Writes the 22-byte app header at `app` (the UDP payload), reserved = 0.
void write_kv_header(uint8_t* app, const KvHeader& h);
// Writes tuples big-endian starting at `dst` (16 bytes each).
void write_kv_tuples(uint8_t* dst, std::span<const KvTuple> tuples);

// Writes a whole canonical frame into `frame` (at least kv_frame_len(tuples.size()) bytes, e.g.
// an mbuf's data): Ethernet/IPv4/UDP via pkt::write_udp_headers with `spec` as given (set
// spec.dst_port to the kvagg port), header with tuple_count = tuples.size(), tuples. Returns
// the frame length. Throws std::invalid_argument if tuples.size() > 0xFFFF or the frame would
// exceed the IPv4 total-length limit.
size_t write_kv_frame(uint8_t* frame, const pkt::UdpFrameSpec& spec, uint32_t stream, uint64_t seq,
                      std::span<const KvTuple> tuples);

// The same as a vector.
std::vector<uint8_t> make_kv_frame(const pkt::UdpFrameSpec& spec, uint32_t stream, uint64_t seq,
                                   std::span<const KvTuple> tuples);

}  // namespace linerate::kvagg
