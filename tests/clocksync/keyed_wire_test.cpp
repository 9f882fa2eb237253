// clocksync with --key: the keyed frame (the 42-byte message and lib/auth's 28-byte trailer), the
// master's parse and answer, the client session's verification. A request or answer without the
// key's MAC (none, tampered, another key's) is bad_auth and nothing of it is used.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "clocksync/client_session.hpp"
#include "clocksync/master.hpp"
#include "pkt/build.hpp"
#include "pkt/bytes.hpp"

using namespace linerate;
using namespace linerate::clocksync;

namespace {

using Frame = std::vector<uint8_t>;

auth::Key key_of(uint8_t first) {
    auth::Key k;
    for (size_t i = 0; i < k.bytes.size(); ++i) k.bytes[i] = uint8_t(first + i);
    return k;
}

const auth::Key kKey = key_of(1), kOtherKey = key_of(101);

pkt::UdpFrameSpec client_spec() {
    pkt::UdpFrameSpec s;
    s.src_mac = {0x02, 0, 0, 0, 0, 0xC1};
    s.dst_mac = {0x02, 0, 0, 0, 0, 0x4D};
    s.src_ip = pkt::ipv4_addr(10, 0, 0, 1);
    s.dst_ip = pkt::ipv4_addr(10, 0, 0, 2);
    s.src_port = s.dst_port = kCsUdpPort;
    return s;
}

// A request (or, with `warmup`, an echo-asking warm-up) signed by `key`'s MAC: 112 bytes.
Frame keyed_request(const auth::Key& key, uint64_t seq = 42, bool warmup = false) {
    Frame f(kCsKeyedFrameLen);
    const size_t len =
        warmup ? build_warmup(f.data(), f.size(), client_spec(), 7, true, auth::kTrailerLen)
               : build_request(f.data(), f.size(), client_spec(), 7, seq, 1000, auth::kTrailerLen);
    EXPECT_EQ(len, kCsKeyedFrameLen);
    auth::MessageMac mac(key);
    sign_request(mac, f.data());
    return f;
}

// `f` cut or padded to a UDP payload of `payload` bytes, its lengths and IPv4 checksum set.
void resize_datagram(Frame& f, size_t payload, uint8_t fill = 0) {
    f.resize(pkt::kUdpPayloadOffset + payload, fill);
    pkt::store_be16(&f[38], uint16_t(8 + payload));
    pkt::store_be16(&f[16], uint16_t(f.size() - 14));
    pkt::fix_ipv4_checksum(&f[14]);
}

Frame unkeyed_request(uint64_t seq = 42) {
    Frame f(kCsFrameLen);
    build_request(f.data(), f.size(), client_spec(), 7, seq, 1000);
    return f;
}

// The master's answer to `f` under kKey, t3 then the trailer written as the master's loop does.
CsPacket master_answer(Frame& f, uint64_t t2 = 5000, uint64_t t3 = 6000) {
    auth::MessageMac mac(kKey);
    CsPacket p = answer_request(f.data(), f.size(), t2, t2, kCsUdpPort, {}, &mac);
    if (!p.ok) return p;
    if (p.type == CsType::response) set_t3(f.data(), p, t3);
    sign_answer(mac, f.data(), p);
    return p;
}

}  // namespace

TEST(CsKeyedWire, KeyedFrameIs112BytesAndItsUdpLengthCoversTheTrailer) {
    const Frame f = keyed_request(kKey);
    ASSERT_EQ(f.size(), 112u);
    EXPECT_EQ(pkt::load_be16(&f[16]), 112u - 14);     // IPv4 total length
    EXPECT_EQ(pkt::load_be16(&f[38]), 8u + 42 + 28);  // UDP length
    // Unkeyed parsers take it as before: the header at its offsets, the trailer after it.
    const CsPacket p = parse_cs_packet(f.data(), f.size());
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.seq, 42u);
    EXPECT_EQ(p.payload_len, 70u);
}

TEST(CsKeyedWire, MasterAnswersAKeyedRequestWithASignedResponseCoveringT3) {
    Frame f = keyed_request(kKey);
    const CsPacket p = master_answer(f);
    ASSERT_TRUE(p.ok) << drop_name(p.drop);
    EXPECT_EQ(p.type, CsType::response);
    ASSERT_EQ(f.size(), kCsKeyedFrameLen);  // an answer is never larger than its request

    auth::MessageMac client(kKey);
    const CsPacket r = parse_cs_packet(f.data(), f.size(), kCsUdpPort, {}, &client);
    ASSERT_TRUE(r.ok) << drop_name(r.drop);
    EXPECT_EQ(r.type, CsType::response);
    EXPECT_EQ(r.t2, 5000u);
    EXPECT_EQ(r.t3, 6000u);
    // Every byte of the message is covered: t3 moved by one is no longer the master's answer.
    for (size_t at : {size_t(42 + kCsOffT3 + 7), size_t(42 + kCsOffT2), size_t(42 + kCsOffSeq),
                      size_t(42 + kCsOffType), f.size() - 1, f.size() - 20}) {
        Frame g = f;
        g[at] ^= 1;
        EXPECT_EQ(parse_cs_packet(g.data(), g.size(), kCsUdpPort, {}, &client).drop, Drop::bad_auth)
            << at;
    }
}

TEST(CsKeyedWire, MasterDropsUnkeyedTamperedAndWrongKeyRequestsUntouched) {
    auth::MessageMac mac(kKey);
    Frame tampered = keyed_request(kKey);
    tampered[42 + kCsOffSeq + 7] ^= 1;  // after signing: the UDP checksum is 0, only the tag says
    Frame cut = keyed_request(kKey);
    cut.resize(kCsFrameLen + 27);  // the trailer's last byte missing: the IPv4 length then lies
    for (Frame f : {unkeyed_request(), tampered, keyed_request(kOtherKey),
                    keyed_request(kOtherKey, 0, true)}) {
        const Frame before = f;
        const CsPacket p = answer_request(f.data(), f.size(), 1, 2, kCsUdpPort, {}, &mac);
        EXPECT_FALSE(p.ok);
        EXPECT_EQ(p.drop, Drop::bad_auth);
        EXPECT_EQ(f, before);
    }
    EXPECT_EQ(answer_request(cut.data(), cut.size(), 1, 2, kCsUdpPort, {}, &mac).drop,
              Drop::malformed);
    // A UDP payload with fewer bytes than a trailer after the message: unkeyed, taken; keyed,
    // bad_auth.
    Frame short_payload = unkeyed_request();
    resize_datagram(short_payload, kCsHeaderLen + 10, 0xAB);
    EXPECT_EQ(
        parse_cs_packet(short_payload.data(), short_payload.size(), kCsUdpPort, {}, &mac).drop,
        Drop::bad_auth);
    EXPECT_EQ(answer_request(short_payload.data(), short_payload.size(), 1, 2).type,
              CsType::response);
}

TEST(CsKeyedWire, WarmupEchoIsSignedAndAnUnaskedWarmupStaysUnanswered) {
    Frame w = keyed_request(kKey, 0, true);
    const CsPacket p = master_answer(w);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.type, CsType::warmup_echo);
    auth::MessageMac client(kKey);
    const CsPacket e = parse_cs_packet(w.data(), w.size(), kCsUdpPort, {}, &client);
    ASSERT_TRUE(e.ok) << drop_name(e.drop);
    EXPECT_EQ(e.type, CsType::warmup_echo);

    Frame quiet(kCsKeyedFrameLen);
    build_warmup(quiet.data(), quiet.size(), client_spec(), 7, false, auth::kTrailerLen);
    sign_request(client, quiet.data());
    EXPECT_EQ(master_answer(quiet).drop, Drop::warmup);
}

namespace {

ClientConfig keyed_client() {
    ClientConfig c;
    c.client_id = 7;
    c.probes = 1;
    c.key = kKey;
    return c;
}

// The session's next request, built and signed as the client's worker does.
Frame session_request(ClientSession& s, uint64_t now) {
    const std::optional<ProbeToSend> p = s.next_probe(now);
    EXPECT_TRUE(p && !p->warmup);
    Frame f(s.frame_len());
    build_request(f.data(), f.size(), client_spec(), p->client_id, p->seq, now, s.trailer_len());
    s.sign(f.data());
    s.sent(now);
    return f;
}

// `f` answered by someone without the key: t2 = t3 shifted 200 µs, its trailer kept (the
// request's: no longer valid), re-signed with another key, or cut off.
enum class Forgery { stale_trailer, other_key, no_trailer };
Frame forged_answer(Frame f, Forgery how) {
    const CsPacket p = parse_cs_packet(f.data(), f.size());
    make_response(f.data(), p, 200'000 + 1000, 200'000 + 1000);
    if (how == Forgery::other_key) {
        auth::MessageMac other(kOtherKey);
        sign_answer(other, f.data(), p);
    }
    if (how == Forgery::no_trailer) resize_datagram(f, kCsHeaderLen);
    return f;
}

}  // namespace

TEST(CsKeyedSession, RequestsAreSignedAndOnlyTheMastersAnswersAreTaken) {
    ClientSession s(keyed_client());
    EXPECT_TRUE(s.keyed());
    EXPECT_EQ(s.frame_len(), kCsKeyedFrameLen);
    uint64_t now = 1'000'000;
    for (Forgery how : {Forgery::stale_trailer, Forgery::other_key, Forgery::no_trailer}) {
        Frame q = session_request(s, now);
        // The forged answer comes first, with the right seq and client id: dropped, the probe
        // still waits for the master's.
        const Frame forged = forged_answer(q, how);
        EXPECT_FALSE(s.on_frame(forged.data(), forged.size(), now + 20));
        EXPECT_TRUE(s.awaiting_answer());
        master_answer(q, now + 10, now + 11);
        EXPECT_TRUE(s.on_frame(q.data(), q.size(), now + 30));
        now += 100'000'000;
        s.tick(now);
    }
    EXPECT_EQ(s.drops()[Drop::bad_auth], 3u);
    EXPECT_EQ(s.drops().total(), 3u);
    const ClientSummary sum = s.summary();
    EXPECT_EQ(sum.responses, 3u);
    // The master's times (θ = ((t2 - t1) + (t3 - t4)) / 2 = -4), none of the forger's (~200 µs).
    EXPECT_EQ(s.sync().theta_ns, -4);
}

TEST(CsKeyedSession, WithoutAKeyFramesAndParsingAreAsBefore) {
    ClientConfig c = keyed_client();
    c.key.reset();
    ClientSession s(c);
    EXPECT_FALSE(s.keyed());
    EXPECT_EQ(s.frame_len(), kCsFrameLen);
    EXPECT_EQ(s.trailer_len(), 0u);
    // An unkeyed client takes the forged answer: what the key is for.
    std::optional<ProbeToSend> p = s.next_probe(1000);
    ASSERT_TRUE(p);
    Frame q(kCsFrameLen);
    build_request(q.data(), q.size(), client_spec(), p->client_id, p->seq, 1000);
    s.sent(1000);
    const Frame forged = forged_answer(q, Forgery::stale_trailer);
    EXPECT_TRUE(s.on_frame(forged.data(), forged.size(), 1020));
}
