// Who kvagg serves (issue 45, docs/kvagg.md "Who is served"): kvagg on net_af_packet in a
// namespace the test creates; in the peer namespace an owner (10.91.0.2, the C++ client) and a
// stranger on another address (10.91.0.66, a plain UDP socket that captures every answer).
// With --key the stranger, without a MAC or with a wrong key, can neither read, flush, reset nor
// add; with --allow only, a source outside the list cannot either. Each refusal is counted
// exactly, the owner's sums stay exact, no answer to a request without a MAC is larger than
// that request (bytes counted at the socket), a replayed reset flush resets nothing twice, and
// the client turns an error reply into an error that says what is wrong. Root; skips otherwise.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>

#include "auth/message_mac.hpp"
#include "linerate/kvagg_client.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;

namespace {

constexpr const char* kKvIp = "10.91.0.1";
constexpr const char* kOwnerIp = "10.91.0.2";
constexpr const char* kStrangerIp = "10.91.0.66";
constexpr uint16_t kPort = LINERATE_KV_DEFAULT_PORT;

// This thread in `ns` until destroyed: sockets made meanwhile stay in it.
class InNamespace {
  public:
    explicit InNamespace(const NetNs& ns) : home_(::open("/proc/thread-self/ns/net", O_RDONLY)) {
        const int fd = ns.open_fd();
        if (home_ < 0 || fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ADD_FAILURE() << "setns";
        if (fd >= 0) ::close(fd);
    }
    ~InNamespace() {
        if (::setns(home_, CLONE_NEWNET) != 0) ADD_FAILURE() << "setns back";
        ::close(home_);
    }
    InNamespace(const InNamespace&) = delete;
    InNamespace& operator=(const InNamespace&) = delete;

  private:
    int home_;
};

std::string key_file(const std::string& name, char digit) {
    const std::string path = scratch(name);
    std::ofstream(path) << std::string(64, digit) << "\n";
    ::chmod(path.c_str(), 0600);
    return path;
}

auth::Key key_of(char digit) {
    return auth::parse_key_hex(std::string(64, digit), "test");
}

// A UDP socket in the peer namespace bound to `ip`, connected to kvagg: sends raw datagrams
// and captures every answer.
class Prober {
  public:
    Prober(const NetNs& peer, const char* ip) {
        InNamespace in(peer);
        fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
        sockaddr_in a{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {}, .sin_zero = {}};
        ::inet_pton(AF_INET, ip, &a.sin_addr);
        sockaddr_in kv = a;
        kv.sin_port = htons(kPort);
        ::inet_pton(AF_INET, kKvIp, &kv.sin_addr);
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::connect(fd_, reinterpret_cast<sockaddr*>(&kv), sizeof kv) != 0)
            ADD_FAILURE() << "prober socket " << ip;
    }
    ~Prober() { ::close(fd_); }

    // Sends `d`; every datagram that comes back within `wait_ms` (their sizes).
    std::vector<std::vector<uint8_t>> ask(const std::vector<uint8_t>& d, int wait_ms = 400) {
        sent_bytes += d.size();
        ::send(fd_, d.data(), d.size(), 0);
        std::vector<std::vector<uint8_t>> got;
        pollfd p{fd_, POLLIN, 0};
        while (::poll(&p, 1, wait_ms) > 0) {
            std::vector<uint8_t> buf(65536);
            const ssize_t n = ::recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
            if (n < 0) continue;
            buf.resize(size_t(n));
            received_bytes += buf.size();
            got.push_back(std::move(buf));
        }
        return got;
    }
    uint64_t sent_bytes = 0, received_bytes = 0;

  private:
    int fd_ = -1;
};

// A request: header, body, padded with zeros to `pad`, then signed by `mac` when given.
std::vector<uint8_t> request(uint8_t op, uint16_t count, uint64_t seq, uint32_t flags,
                             std::vector<uint64_t> body = {}, size_t pad = 0,
                             auth::MessageMac* mac = nullptr) {
    std::vector<uint8_t> d(LINERATE_KV_HEADER_LEN + 8 * body.size());
    kvclient::detail::header(d.data(), op, count, 77, seq, flags);
    for (size_t i = 0; i < body.size(); ++i) kvclient::detail::put64(&d[22 + 8 * i], body[i]);
    if (d.size() < pad) d.resize(pad);
    if (mac) {
        d.resize(d.size() + auth::kTrailerLen);
        mac->sign(d.data(), d.size() - auth::kTrailerLen);
    }
    return d;
}

// One error reply with `code` to a request of op `op`, no larger than the request.
void expect_error_reply(const std::vector<std::vector<uint8_t>>& got, uint8_t op, uint16_t code,
                        size_t request_len) {
    ASSERT_EQ(got.size(), 1u);
    const std::vector<uint8_t>& r = got[0];
    ASSERT_EQ(r.size(), size_t(LINERATE_KV_HEADER_LEN));
    EXPECT_LE(r.size(), request_len);
    EXPECT_EQ(r[LINERATE_KV_OP_OFF], op | LINERATE_KV_OP_RESPONSE);
    EXPECT_EQ(kvclient::detail::get16(&r[LINERATE_KV_COUNT_OFF]), code);
    EXPECT_EQ(kvclient::detail::get32(&r[LINERATE_KV_RESERVED_OFF]),
              LINERATE_KV_LAST_FRAME | LINERATE_KV_ERROR);
}

struct KvaggNet {
    NetNs app{"kvacc"}, peer{"kvaccp"};
    VethPair veth{app, peer};
    std::unique_ptr<BackgroundProcess> hold, kvagg;
    std::string json = scratch("kvagg_access.json");

    explicit KvaggNet(const std::vector<std::string>& args) {
        app.run(std::string("ip addr add ") + kKvIp + "/24 dev " + veth.app_if);
        peer.run(std::string("ip addr add ") + kOwnerIp + "/24 dev " + veth.peer_if);
        peer.run(std::string("ip addr add ") + kStrangerIp + "/24 dev " + veth.peer_if);
        // The kernel shares the interface with net_af_packet: a bound socket keeps it from
        // answering kvagg's port with ICMP port-unreachable.
        hold = std::make_unique<BackgroundProcess>(
            app.wrap({"python3", "-c",
                      "import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                      "s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); "
                      "s.bind(('0.0.0.0', 9000)); time.sleep(600)"}));
        std::vector<std::string> argv = {binary("apps/kvagg/kvagg")};
        for (const std::string& a : no_huge_eal()) argv.push_back(a);
        argv.insert(argv.end(), {"--vdev=net_af_packet0,iface=" + veth.app_if, "--",
                                 "--stats-period", "0", "--keys", "4K", "--json", json});
        argv.insert(argv.end(), args.begin(), args.end());
        kvagg = std::make_unique<BackgroundProcess>(app.wrap(argv));
        EXPECT_TRUE(kvagg->wait_for_output(": running", 30)) << kvagg->output();
    }
    std::unique_ptr<kvclient::Client> client(const std::string& key = {}) {
        InNamespace in(peer);
        kvclient::Options o;
        o.host = kKvIp;
        o.key_file = key;
        o.timeout = std::chrono::milliseconds(300);
        o.retries = 3;
        return std::make_unique<kvclient::Client>(o);
    }
    nlohmann::json stop() {
        kvagg->signal(SIGINT);
        const ProcessResult r = kvagg->finish(30);
        EXPECT_EQ(r.exit_status, 0) << r.out;
        return read_json(json);
    }
};

}  // namespace

TEST(KvaggAccess, WithAKeyAStrangerCanNeitherReadFlushResetNorAdd) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const std::string key = key_file("kvagg_access.key", '3');
    const std::string wrong = key_file("kvagg_access_wrong.key", '4');
    KvaggNet s({"--key", key});
    auto owner = s.client(key);
    kvclient::Sums sent;
    for (uint64_t i = 0; i < 2000; ++i) {
        owner->add(i % 300, i);
        sent[i % 300] += i;
    }
    owner->status();

    Prober stranger(s.peer, kStrangerIp);
    auth::MessageMac wrong_mac(key_of('4'));
    const std::vector<std::vector<uint8_t>> refused = {
        request(LINERATE_KV_OP_READ, 2, 1, 0, {1, 2}),
        request(LINERATE_KV_OP_FLUSH, 0, 2, LINERATE_KV_FLUSH_RESET),
        request(LINERATE_KV_OP_STATUS, 0, 3, 0),
        request(LINERATE_KV_OP_READ, 2, 4, 0, {1, 2}, 0, &wrong_mac),
        request(LINERATE_KV_OP_FLUSH, 0, 5, LINERATE_KV_FLUSH_RESET, {}, 0, &wrong_mac),
        request(LINERATE_KV_OP_FLUSH, 1, 6, LINERATE_KV_FLUSH_RESET, {0, 1000}, 1472, &wrong_mac),
    };
    for (const std::vector<uint8_t>& r : refused)
        expect_error_reply(stranger.ask(r), r[LINERATE_KV_OP_OFF], LINERATE_KV_ERR_AUTH, r.size());
    // Sums without a MAC and with a wrong one: dropped, never answered.
    std::vector<uint8_t> sum(22 + 16);
    kvclient::detail::header(sum.data(), LINERATE_KV_OP_SUM, 1, 5, 1, 0);
    kvclient::detail::put64(&sum[22], 1);
    kvclient::detail::put64(&sum[30], 1000000);
    EXPECT_TRUE(stranger.ask(sum, 100).empty());
    sum.resize(sum.size() + auth::kTrailerLen);
    wrong_mac.sign(sum.data(), 22 + 16);
    EXPECT_TRUE(stranger.ask(sum, 100).empty());
    EXPECT_LE(stranger.received_bytes, stranger.sent_bytes);

    // A client with the wrong key is told so.
    auto impostor = s.client(wrong);
    try {
        impostor->read({1});
        ADD_FAILURE() << "read with a wrong key succeeded";
    } catch (const kvclient::Refused& e) {
        EXPECT_EQ(e.code(), LINERATE_KV_ERR_AUTH);
        EXPECT_EQ(std::string(e.what()),
                  "kvagg refused the request: authentication required (wrong or missing --key?)");
    }

    // The owner's sums are exact, and its flush(reset) takes them once.
    std::vector<uint64_t> keys;
    for (uint64_t k = 0; k < 300; ++k) keys.push_back(k);
    EXPECT_EQ(owner->read(keys), sent);
    EXPECT_EQ(owner->flush(true), sent);
    EXPECT_TRUE(owner->flush(false).empty());

    const nlohmann::json j = s.stop();
    const nlohmann::json& d = j["drops"];
    // 6 requests, 2 sums from the stranger, the impostor's 1 read (refused at its first try).
    EXPECT_EQ(d["bad_auth"], 6u + 2u + 1u) << j.dump(2);
    EXPECT_EQ(d["not_allowed"], 0u);
    EXPECT_EQ(j["service"]["error_replies"], 7u);
    EXPECT_EQ(j["service"]["error_replies_limited"], 0u);
    EXPECT_EQ(j["kvagg"]["key"], true);
}

TEST(KvaggAccess, WithoutAKeyOnlyAllowedSourcesAndNoAnswerLargerThanItsRequest) {
    if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
    KvaggNet s({"--allow", kOwnerIp});
    auto owner = s.client();
    kvclient::Sums sent;
    for (uint64_t i = 0; i < 3000; ++i) {
        owner->add(i % 500, i + 1);
        sent[i % 500] += i + 1;
    }
    owner->status();

    // The stranger: refused, its sums not taken.
    Prober stranger(s.peer, kStrangerIp);
    for (const std::vector<uint8_t>& r :
         {request(LINERATE_KV_OP_READ, 1, 1, 0, {1}, 1472),
          request(LINERATE_KV_OP_FLUSH, 0, 2, LINERATE_KV_FLUSH_RESET, {}, 1472),
          request(LINERATE_KV_OP_STATUS, 0, 3, 0, {}, 1472)})
        expect_error_reply(stranger.ask(r), r[LINERATE_KV_OP_OFF], LINERATE_KV_ERR_NOT_ALLOWED,
                           r.size());
    std::vector<uint8_t> sum(22 + 16);
    kvclient::detail::header(sum.data(), LINERATE_KV_OP_SUM, 1, 5, 1, 0);
    kvclient::detail::put64(&sum[22], 1);
    kvclient::detail::put64(&sum[30], 1000000);
    EXPECT_TRUE(stranger.ask(sum, 100).empty());

    // An allowed source without a MAC: every answer one frame, no larger than its request.
    Prober mine(s.peer, kOwnerIp);
    expect_error_reply(mine.ask(request(LINERATE_KV_OP_READ, 3, 10, 0, {1, 2, 3})),
                       LINERATE_KV_OP_READ, LINERATE_KV_ERR_TOO_SMALL, 22 + 24);
    expect_error_reply(mine.ask(request(LINERATE_KV_OP_STATUS, 0, 11, 0)), LINERATE_KV_OP_STATUS,
                       LINERATE_KV_ERR_TOO_SMALL, 22);
    const std::vector<uint8_t> flush_small = request(LINERATE_KV_OP_FLUSH, 0, 12, 0, {}, 200);
    const auto page = mine.ask(flush_small);
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].size(), 22u + 16 * 11);  // (200 - 22) / 16 tuples
    EXPECT_EQ(kvclient::detail::get32(&page[0][LINERATE_KV_RESERVED_OFF]), 0u) << "not the last";
    const auto read3 = mine.ask(request(LINERATE_KV_OP_READ, 3, 13, 0, {1, 2, 3}, 22 + 48));
    ASSERT_EQ(read3.size(), 1u);
    EXPECT_EQ(read3[0].size(), 22u + 48);
    EXPECT_LE(mine.received_bytes, mine.sent_bytes);

    // The owner's client pads and pages by itself: exact sums, a paged flush(reset) once.
    std::vector<uint64_t> keys;
    for (uint64_t k = 0; k < 500; ++k) keys.push_back(k);
    EXPECT_EQ(owner->read(keys), sent);
    EXPECT_EQ(owner->flush(true), sent);  // 500 keys: 6 pages of at most 90

    // A replayed reset flush: the same seq gets the same frame, an older one nothing.
    for (uint64_t i = 0; i < 10; ++i) owner->add(i, 7);
    owner->status();
    const std::vector<uint8_t> reset = request(LINERATE_KV_OP_FLUSH, 0, 100, 1, {}, 1472);
    const auto first = mine.ask(reset);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].size(), 22u + 16 * 10);
    for (uint64_t i = 0; i < 10; ++i) owner->add(i, 1);
    owner->status();
    EXPECT_EQ(mine.ask(reset), first);
    EXPECT_TRUE(mine.ask(request(LINERATE_KV_OP_FLUSH, 0, 99, 1, {}, 1472)).empty());
    kvclient::Sums ones;
    for (uint64_t i = 0; i < 10; ++i) ones[i] = 1;
    EXPECT_EQ(owner->read({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), ones) << "nothing reset twice";
    EXPECT_LE(mine.received_bytes, mine.sent_bytes);

    const nlohmann::json j = s.stop();
    EXPECT_EQ(j["drops"]["not_allowed"], 4u) << j.dump(2);
    EXPECT_EQ(j["drops"]["bad_auth"], 0u);
    EXPECT_EQ(j["service"]["error_replies"], 5u);
    EXPECT_EQ(j["service"]["flush_repeats"], 1u);
    EXPECT_EQ(j["service"]["flush_replayed"], 1u);
    uint64_t total = 70;
    for (const auto& [k, v] : sent) total += v;
    EXPECT_EQ(j["service"]["flushed_sum"], total);
}
