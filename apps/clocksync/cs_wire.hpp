#pragma once
// clocksync wire format (docs/wire-formats.md): parse, request encoder, in-place response.
// The app header follows Ethernet (+ up to two VLAN tags) + IPv4 + UDP; on the canonical frame
// (no tags, no IP options) it starts at byte 42 as in the table of docs/wire-formats.md.
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "clocksync/cs_wire.h"
#include "linerate/message_auth.hpp"
#include "pkt/build.hpp"
#include "pkt/checksum.hpp"
#include "pkt/headers.hpp"
#include "stats/names.hpp"

namespace linerate::clocksync {

// The layout is apps/clocksync/cs_wire.h's, the one the XDP programs (apps/clocksync/xdp/)
// compile.
inline constexpr uint16_t kCsUdpPort = LR_CS_UDP_PORT;
inline constexpr uint16_t kCsMagic = LR_CS_MAGIC;
inline constexpr uint8_t kCsVersion = LR_CS_VERSION;
inline constexpr size_t kCsHeaderLen = LR_CS_HEADER_LEN;
inline constexpr size_t kCsFrameLen = pkt::kUdpPayloadOffset + kCsHeaderLen;  // 84
// With --key every clocksync datagram ends with lib/auth's trailer (nonce, tag) after the header:
// the canonical keyed frame.
inline constexpr size_t kCsKeyedFrameLen = kCsFrameLen + auth::kTrailerLen;  // 112

// Offsets inside the clocksync header (add the payload offset for frame offsets).
inline constexpr size_t kCsOffMagic = LR_CS_OFF_MAGIC;
inline constexpr size_t kCsOffVersion = LR_CS_OFF_VERSION;
inline constexpr size_t kCsOffType = LR_CS_OFF_TYPE;
inline constexpr size_t kCsOffReserved = LR_CS_OFF_RESERVED;
inline constexpr size_t kCsOffClientId = LR_CS_OFF_CLIENT_ID;
inline constexpr size_t kCsOffSeq = LR_CS_OFF_SEQ;
inline constexpr size_t kCsOffT1 = LR_CS_OFF_T1;
inline constexpr size_t kCsOffT2 = LR_CS_OFF_T2;
inline constexpr size_t kCsOffT3 = LR_CS_OFF_T3;

// warmup: a client's frame sent ahead of a request to warm the path it takes (caches, TLB,
// rings); the master takes it like a request and drops it, unanswered (reason `warmup`), unless
// it asks for its echo (kCsFlagEcho): then it comes back as warmup_echo, turned around as a
// response is but not stamped, and warms the way down too. The client counts echoes apart; they
// never reach the estimator.
enum class CsType : uint8_t {
    request = LR_CS_REQUEST,
    response = LR_CS_RESPONSE,
    warmup = LR_CS_WARMUP,
    warmup_echo = LR_CS_WARMUP_ECHO
};
// In the reserved field of a warm-up frame: the client asks for the echo.
inline constexpr uint16_t kCsFlagEcho = LR_CS_FLAG_ECHO;
// ... and with it: the client's steering program turns the echo into the request (--xdp-turn).
inline constexpr uint16_t kCsFlagTurn = LR_CS_FLAG_TURN;

// Every reason a clocksync packet is dropped, master and client side, in one list (VPP style),
// X(id, text, description): parse reasons first, then the client's. With the runtime's reasons
// in front it is the stats board's drop list (each value its slot). The client's probes that
// time out are no packets: ClientSession counts them apart (app counter `timeouts`).
#define LINERATE_CS_DROPS(X)                                                                    \
    X(not_clocksync, "not clocksync",                                                           \
      "not an IPv4/UDP frame to the clocksync port (or not enough to tell)")                    \
    X(malformed, "malformed", "truncated, inconsistent lengths, fragment, or t3 < t2")          \
    X(bad_ip_checksum, "bad IP checksum", "the IPv4 header checksum is wrong")                  \
    X(bad_udp_checksum, "bad UDP checksum", "the UDP checksum is not 0 (none) and wrong")       \
    X(bad_magic, "bad magic", "magic is not 0x4353")                                            \
    X(bad_version, "bad version", "version is not 1")                                           \
    X(bad_type, "bad type",                                                                     \
      "type is neither request nor response, or not the one this role accepts")                 \
    X(split_header, "split header",                                                             \
      "a chained frame whose first segment ends inside the message (with --key: the datagram)") \
    X(warmup, "warmup", "a client's warm-up frame that asks for no echo: parsed, not answered") \
    X(unknown_sequence, "unknown sequence",                                                     \
      "response to no outstanding probe (late, duplicate or forged)")                           \
    X(wrong_client, "wrong client", "response carries another client id")                       \
    X(negative_rtt, "negative rtt", "round trip delta < 0")                                     \
    X(bad_auth, "bad auth",                                                                     \
      "with --key (both roles): no trailer, or a tag that is not the key's over the datagram")

LINERATE_DROPS(Drop, kDrops, LINERATE_CS_DROPS);
inline constexpr size_t kDropCount = std::size(kDrops);

// The XDP master counts its drops by apps/clocksync/cs_wire.h's numbers, from not_clocksync on.
constexpr unsigned xdp_drop_number(Drop d) {
    return unsigned(d) - unsigned(Drop::not_clocksync);
}
// The same names in the same order, followed by the client's first reason (no master drops it).
inline constexpr const char* kXdpDropKeys[] = {LR_CS_DROPS(LR_DROP_KEY_ITEM)};
static_assert(stats::same_keys(kDrops, stats::drop_slot(Drop::not_clocksync), kXdpDropKeys,
                               "unknown_sequence"),
              "apps/clocksync/cs_wire.h's LR_CS_DROPS and LINERATE_CS_DROPS differ");

// Snake-case name, usable as a JSON key ("drops": {name: count}).
constexpr std::string_view drop_name(Drop d) {
    return kDrops[stats::drop_slot(d)].key;
}

struct DropCounters {
    std::array<uint64_t, kDropCount> count{};
    void add(Drop d, uint64_t n = 1) { count[size_t(d)] += n; }
    uint64_t operator[](Drop d) const { return count[size_t(d)]; }
    uint64_t total() const;
};

// The outcome of parsing one frame. Fields past `drop` are valid only when ok.
struct CsPacket {
    bool ok = false;
    Drop drop = Drop::not_clocksync;
    CsType type = CsType::request;
    uint16_t l3_offset = 0;       // where IPv4 starts (14 without VLAN tags)
    uint16_t payload_offset = 0;  // where the clocksync header starts (42 on canonical frames)
    uint32_t client_id = 0;
    uint64_t seq = 0;
    uint64_t t1 = 0;
    uint64_t t2 = 0;
    uint64_t t3 = 0;
    uint16_t reserved = 0;     // a warm-up frame's flags (kCsFlagEcho)
    uint16_t payload_len = 0;  // the UDP payload's bytes (the header, with --key the trailer too)
    // Accepted with its UDP checksum left to the sender's TX offload (pkt::ChecksumVerdict).
    bool udp_checksum_offloaded = false;
};

// Classifies a frame: ok (type request, response, warmup or warmup_echo), or the drop reason. The
// frame is ours when it is IPv4/UDP with destination port `udp_port`; anything before that is
// not_clocksync. Then lengths (malformed), the IPv4 header and UDP checksums (unless `checksums`
// says not to, or the port already did); with `mac` (--key) the trailer, before anything of the
// message is read (bad_auth); then magic, version, type.
CsPacket parse_cs_packet(const uint8_t* frame, size_t len, uint16_t udp_port = kCsUdpPort,
                         pkt::ChecksumCheck checksums = {}, auth::MessageMac* mac = nullptr);

// Writes a whole request frame (kCsFrameLen bytes, plus `trailer` zero bytes that the UDP
// length covers: auth::kTrailerLen for sign_request) and returns its length, or 0 when `cap` is
// too small. Set spec.src_port = spec.dst_port = the clocksync port: the response comes back to
// the request's source port, and parse_cs_packet matches on the destination port.
size_t build_request(uint8_t* frame, size_t cap, const pkt::UdpFrameSpec& spec, uint32_t client_id,
                     uint64_t seq, uint64_t t1, size_t trailer = 0);

// The same with type warmup (seq and t1 0): a frame for the master to drop, or with `echo` to
// turn around as warmup_echo (kCsFlagEcho in the reserved field).
size_t build_warmup(uint8_t* frame, size_t cap, const pkt::UdpFrameSpec& spec, uint32_t client_id,
                    bool echo = false, size_t trailer = 0);

// --key: writes the trailer of a request or warm-up frame built with room for it (kCsKeyedFrameLen
// bytes): the tag covers the clocksync header. Once signed the frame must not change.
inline void sign_request(auth::MessageMac& mac, uint8_t* frame) {
    mac.sign(frame + pkt::kUdpPayloadOffset, kCsHeaderLen);
}

// --xdp-turn: the warm-up frame that asks for its echo and for the client's steering program to
// turn that echo into the request of `seq` (kCsFlagEcho | kCsFlagTurn, seq set, t1 0).
size_t build_turn_trigger(uint8_t* frame, size_t cap, const pkt::UdpFrameSpec& spec,
                          uint32_t client_id, uint64_t seq);
// Overwrites t1 of a request made by build_request, for a t1 read once the frame is built.
inline void set_request_t1(uint8_t* frame, uint64_t t1) {
    pkt::store_be64(frame + pkt::kUdpPayloadOffset + kCsOffT1, t1);
}

// Turns the request `p` (parsed from `frame`, ok, type request) into its response in place:
// MACs, IPs and UDP ports swapped, type = response, t2 and t3 written, everything else echoed.
// The IPv4 checksum is left as is: swapping the two address words does not change a
// one's-complement sum, and nothing else in the IP header changes. The UDP checksum is set to
// 0 (none, allowed in IPv4) because t2/t3 change the payload and t3 may be stamped later.
void make_response(uint8_t* frame, const CsPacket& p, uint64_t t2, uint64_t t3);

// Turns the warm-up frame `p` (parsed from `frame`, ok, asking for the echo) into its echo in
// place: swapped as make_response swaps, type warmup_echo, no stamps (t2 and t3 stay as sent).
void make_warmup_echo(uint8_t* frame, const CsPacket& p);

// Overwrites t3 of a response made by make_response, for a t3 read right before TX.
inline void set_t3(uint8_t* frame, const CsPacket& p, uint64_t t3) {
    pkt::store_be64(frame + p.payload_offset + kCsOffT3, t3);
}

// --key: rewrites the trailer of an answer (a response once its t3 is written, or a warm-up's
// echo) made from a request that parse_cs_packet verified under the key: its last
// auth::kTrailerLen bytes, over all that precedes them. `frame` holds the whole datagram.
inline void sign_answer(auth::MessageMac& mac, uint8_t* frame, const CsPacket& p) {
    mac.sign(frame + p.payload_offset, p.payload_len - auth::kTrailerLen);
}

}  // namespace linerate::clocksync
