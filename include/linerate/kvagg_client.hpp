#pragma once
// Client for kvagg's service ops (docs/kvagg.md "Service ops"), header-only, C++17 or later,
// plain POSIX UDP sockets (no DPDK). The same operations as python/linerate_kvagg.py:
//
//   linerate::kvclient::Options o;
//   o.host = "10.0.0.1";
//   linerate::kvclient::Client c(o);
//   c.add(key, value);          // batched into full datagrams (path MTU)
//   c.status();                 // retransmits what kvagg lacks until it has every datagram
//   auto sums = c.read(keys);   // key -> current sum
//   auto all = c.flush(true);   // key -> sum of every key, those amounts taken out of kvagg
//   c.wait_durable();           // kvagg --state: everything sent so far survives a restart
//
// One stream id per client, sequence numbers from 1; kvagg refuses duplicates inside its window,
// so retransmitting is always safe. A kvagg with --state says in each status answer through which
// sequence number the stream is in its state file: the client keeps every datagram above it and
// sends again what a restarted kvagg (a new instance id) lacks. Errors throw kvclient::Error; no
// answer in time throws kvclient::Timeout (an Error). "No answer" is one thing whatever its form:
// silence, an ICMP refusal the kernel reports as ECONNREFUSED (kvagg down or restarting), a host
// or network unreachable; each request attempt waits its whole timeout through them. A data
// datagram whose send is refused stays held and goes again with the next status(). Nothing else
// is thrown but std::bad_alloc (docs/kvagg.md "Errors and restarts").
//
// Keys (Options::key_file, kvagg --key): every datagram sent ends with the 28-byte trailer of
// docs/wire-formats.md (AES-256-GMAC through OpenSSL's libcrypto: link it), every response
// must carry a valid one (others are ignored, as a late answer is). Without a key, requests are
// padded so that kvagg's answer (never larger than the request) fits, and a flush is asked
// page by page; the results are the same. A refusal by kvagg (error reply: no or wrong key, a
// source outside --allow) throws kvclient::Refused (an Error) that says so.
//
// ShardedClient (below) spreads the keys over several kvagg instances, a Client each, and reads
// and flushes every instance (docs/scale-out.md "Sharded clients").
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#if __cplusplus >= 202002L
#include <span>  // read() took a std::span before C++17 was supported: code may rely on it
#endif

#include "kvagg_wire.h"  // beside this header, whatever the include path

namespace linerate::kvclient {

// The wire numbers of linerate/kvagg_wire.h under C++ names.
inline constexpr uint16_t kMagic = LINERATE_KV_MAGIC;
inline constexpr uint8_t kVersion = LINERATE_KV_VERSION;
inline constexpr uint8_t kOpSum = LINERATE_KV_OP_SUM, kOpRead = LINERATE_KV_OP_READ,
                         kOpStatus = LINERATE_KV_OP_STATUS, kOpFlush = LINERATE_KV_OP_FLUSH;
inline constexpr uint8_t kOpResponse = LINERATE_KV_OP_RESPONSE;
inline constexpr uint32_t kFlushReset = LINERATE_KV_FLUSH_RESET;
inline constexpr uint32_t kLastFrame = LINERATE_KV_LAST_FRAME;
inline constexpr uint64_t kStatusKnown = LINERATE_KV_STATUS_KNOWN,
                          kStatusSplit = LINERATE_KV_STATUS_SPLIT,
                          kStatusNoWindow = LINERATE_KV_STATUS_NO_WINDOW,
                          kStatusDurable = LINERATE_KV_STATUS_DURABLE;
inline constexpr size_t kHeaderLen = LINERATE_KV_HEADER_LEN;
inline constexpr size_t kTupleLen = LINERATE_KV_TUPLE_LEN, kKeyLen = LINERATE_KV_KEY_LEN;
inline constexpr size_t kStatusBodyLen = LINERATE_KV_STATUS_BODY_LEN;
inline constexpr size_t kStatusTailLen = LINERATE_KV_STATUS_TAIL_LEN;
inline constexpr size_t kIpUdpLen = 28;
inline constexpr size_t kTrailerLen = 28;  // --key: nonce (12), tag (16)
inline constexpr uint32_t kErrorFrame = LINERATE_KV_ERROR;

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct Timeout : Error {
    using Error::Error;
};
// kvagg answered with an error reply (LINERATE_KV_ERR_*): code() says which.
struct Refused : Error {
    Refused(uint16_t code, const std::string& what) : Error(what), code_(code) {}
    uint16_t code() const { return code_; }

  private:
    uint16_t code_;
};

// What an error reply's code means, for the user.
inline std::string refusal_text(uint16_t code) {
    switch (code) {
        case LINERATE_KV_ERR_AUTH:
            return "authentication required (wrong or missing --key?)";
        case LINERATE_KV_ERR_NOT_ALLOWED:
            return "not allowed (this source is not in kvagg's --allow, and no --key)";
        case LINERATE_KV_ERR_TOO_SMALL:
            return "request too small for its answer (an unkeyed request must be padded)";
    }
    return "error " + std::to_string(code);
}

struct Options {
    std::string host;
    uint16_t port = LINERATE_KV_DEFAULT_PORT;
    std::optional<uint32_t> stream;  // default: random
    std::chrono::milliseconds timeout{500};
    unsigned retries = 6;
    size_t mtu = 0;              // 0: the socket's path MTU
    size_t max_tuples = 0;       // per datagram, 0: as many as the MTU allows (1: no batching)
    double drop_share = 0;       // simulated loss: this share of data datagrams is never sent
    uint64_t seed = 0;           // for the stream id and the simulated loss
    size_t status_every = 8192;  // unconfirmed datagrams before add() runs status() itself
    // kvagg's --key file (64 hex digits, mode 0600): every datagram MAC'd, responses checked.
    std::string key_file;
};

struct StreamStatus {
    uint64_t flags = 0, top = 0, gaps = 0, duplicates = 0, stale = 0, window_low = 0;
    std::vector<uint64_t> missing;
    uint64_t durable_through = 0;  // with kStatusDurable: every seq up to it is in kvagg's state
    uint64_t instance = 0;         // changes when kvagg restarts (0: a kvagg before --state)
    unsigned rounds = 0;           // status(): requests it took
    uint64_t retransmitted = 0;    // status(): datagrams sent again so far, in all
};

using Sums = std::map<uint64_t, uint64_t>;

namespace detail {
inline void put16(uint8_t* p, uint16_t v) {
    p[0] = uint8_t(v >> 8);
    p[1] = uint8_t(v);
}
inline void put32(uint8_t* p, uint32_t v) {
    put16(p, uint16_t(v >> 16));
    put16(p + 2, uint16_t(v));
}
inline void put64(uint8_t* p, uint64_t v) {
    put32(p, uint32_t(v >> 32));
    put32(p + 4, uint32_t(v));
}
// What a connected UDP socket reports from an ICMP error about an earlier datagram: no kvagg
// listening (port unreachable), or no route or host for now. Each means no answer, nothing else.
inline bool no_answer_errno(int e) {
    return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH || e == EHOSTDOWN ||
           e == ENETDOWN;
}
inline uint16_t get16(const uint8_t* p) {
    return uint16_t(p[0] << 8 | p[1]);
}
inline uint32_t get32(const uint8_t* p) {
    return uint32_t(get16(p)) << 16 | get16(p + 2);
}
inline uint64_t get64(const uint8_t* p) {
    return uint64_t(get32(p)) << 32 | get32(p + 4);
}
inline void header(uint8_t* p, uint8_t op, uint16_t count, uint32_t stream, uint64_t seq,
                   uint32_t reserved) {
    put16(p + LINERATE_KV_MAGIC_OFF, kMagic);
    p[LINERATE_KV_VERSION_OFF] = kVersion;
    p[LINERATE_KV_OP_OFF] = op;
    put16(p + LINERATE_KV_COUNT_OFF, count);
    put32(p + LINERATE_KV_STREAM_OFF, stream);
    put64(p + LINERATE_KV_SEQ_OFF, seq);
    put32(p + LINERATE_KV_RESERVED_OFF, reserved);
}
// A key file as kvagg reads it: a regular file nobody but its owner may read or write, 64 hex
// digits (white space around them ignored). Error otherwise.
inline std::array<uint8_t, 32> load_key_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        throw Error("kvagg client: cannot open key file " + path + ": " + std::strerror(errno));
    struct stat st {};
    char text[160] = {};
    const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    const ssize_t got = regular && !(st.st_mode & 077) ? ::read(fd, text, sizeof text - 1) : -1;
    ::close(fd);
    if (!regular) throw Error("kvagg client: key file " + path + " is not a regular file");
    if (st.st_mode & 077)
        throw Error("kvagg client: key file " + path +
                    " is accessible by group or others: chmod 600 " + path);
    std::string hex(text, size_t(std::max<ssize_t>(got, 0)));
    OPENSSL_cleanse(text, sizeof text);
    hex.erase(0, hex.find_first_not_of(" \t\r\n"));
    hex.erase(hex.find_last_not_of(" \t\r\n") + 1);
    std::array<uint8_t, 32> key{};
    auto nibble = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
    };
    bool ok = hex.size() == 64;
    for (size_t i = 0; ok && i < 32; ++i) {
        const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        ok = hi >= 0 && lo >= 0;
        key[i] = uint8_t(hi << 4 | lo);
    }
    OPENSSL_cleanse(&hex[0], hex.size());
    if (!ok)
        throw Error("kvagg client: key file " + path +
                    " does not hold 64 hex digits (openssl rand -hex 32 > FILE)");
    return key;
}

// The trailer of a keyed datagram (docs/wire-formats.md "Keyed datagrams"): AES-256-GMAC of the
// UDP payload before it under a nonce of 8 random bytes per client and a 4-byte big-endian
// counter. The same rule as kvagg's (lib/auth), held to it by tests/kvagg/kvagg_client_test.
class PayloadMac {
  public:
    explicit PayloadMac(const std::array<uint8_t, 32>& key) : ctx_(EVP_CIPHER_CTX_new()) {
        if (!ctx_ || EVP_EncryptInit_ex(ctx_, EVP_aes_256_gcm(), nullptr, key.data(), nullptr) != 1)
            throw Error("kvagg client: OpenSSL cannot set up AES-256-GCM");
        std::random_device rd;
        for (uint8_t& b : sender_) b = uint8_t(rd());
    }
    ~PayloadMac() { EVP_CIPHER_CTX_free(ctx_); }
    PayloadMac(const PayloadMac&) = delete;
    PayloadMac& operator=(const PayloadMac&) = delete;

    // Appends the trailer of d's bytes to d.
    void sign(std::vector<uint8_t>& d) {
        if (counter_ == UINT32_MAX)
            throw Error("kvagg client: 2^32 datagrams under one nonce prefix: make a new client");
        uint8_t nonce[12];
        std::memcpy(nonce, sender_, 8);
        put32(nonce + 8, counter_++);
        const std::array<uint8_t, 16> t = tag(nonce, d.data(), d.size());
        d.insert(d.end(), nonce, nonce + 12);
        d.insert(d.end(), t.begin(), t.end());
    }
    // Whether p[0, len) ends with a valid trailer.
    bool verify(const uint8_t* p, size_t len) {
        if (len < kTrailerLen) return false;
        const size_t body = len - kTrailerLen;
        const std::array<uint8_t, 16> t = tag(p + body, p, body);
        return CRYPTO_memcmp(t.data(), p + body + 12, 16) == 0;
    }
    std::array<uint8_t, 16> tag(const uint8_t* nonce, const uint8_t* data, size_t len) {
        std::array<uint8_t, 16> t{};
        int n = 0;
        if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce) != 1 ||
            (len && EVP_EncryptUpdate(ctx_, nullptr, &n, data, int(len)) != 1) ||
            EVP_EncryptFinal_ex(ctx_, t.data(), &n) != 1 ||
            EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, 16, t.data()) != 1)
            throw Error("kvagg client: OpenSSL AES-256-GMAC failed");
        return t;
    }

  private:
    EVP_CIPHER_CTX* ctx_;
    uint8_t sender_[8] = {};
    uint32_t counter_ = 0;
};

// read() of any contiguous range of uint64_t (std::vector, std::array, a C array, std::span in
// C++20) or a braced list, for a client whose read(const uint64_t*, size_t) does the work.
template <class Derived>
struct ReadRanges {
    template <class Keys>
    Sums read(const Keys& keys) {
        return static_cast<Derived&>(*this).read(std::data(keys), std::size(keys));
    }
    Sums read(std::initializer_list<uint64_t> keys) {
        return static_cast<Derived&>(*this).read(keys.begin(), keys.size());
    }
};
}  // namespace detail

class Client : public detail::ReadRanges<Client> {
  public:
    using detail::ReadRanges<Client>::read;
    explicit Client(const Options& o) : o_(o), rng_(o.seed) {
        addrinfo hints{};
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_DGRAM;
        addrinfo* res = nullptr;
        const std::string port = std::to_string(o.port);
        if (int e = getaddrinfo(o.host.c_str(), port.c_str(), &hints, &res); e != 0)
            throw Error("kvagg client: " + o.host + ": " + gai_strerror(e));
        fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
        if (fd_ < 0 || ::connect(fd_, res->ai_addr, res->ai_addrlen) != 0) {
            const int e = errno;
            freeaddrinfo(res);
            if (fd_ >= 0) ::close(fd_);
            throw Error("kvagg client: socket/connect " + o.host + ": " + std::strerror(e));
        }
        freeaddrinfo(res);
        int buf = 8 << 20;
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
        size_t mtu = o.mtu;
        if (mtu == 0) {
            int m = 0;
            socklen_t len = sizeof m;
            mtu = ::getsockopt(fd_, IPPROTO_IP, IP_MTU, &m, &len) == 0 ? size_t(m) : 1500;
        }
        if (!o.key_file.empty())
            mac_ = std::make_unique<detail::PayloadMac>(detail::load_key_file(o.key_file));
        const size_t trailer = mac_ ? kTrailerLen : 0;
        const size_t fixed = kIpUdpLen + kHeaderLen + trailer;
        const size_t room = mtu > fixed ? mtu - fixed : 0;
        max_tuples_ = std::min<size_t>(room / kTupleLen, 0xFFFF);
        if (o.max_tuples) max_tuples_ = std::min(max_tuples_, o.max_tuples);
        // Unkeyed, a read's answer (16 bytes a key) must fit in the request, padded.
        max_keys_ = std::min<size_t>(room / (mac_ ? kKeyLen : kTupleLen), 0xFFFF);
        // Unkeyed status and flush requests are padded to a full frame's payload (at most
        // 1500 bytes: kvagg's port may not take jumbo frames), its answer's room.
        padded_ = std::min<size_t>(mtu, 1500) - kIpUdpLen;
        // Request ids from the wall clock: a restarted client's reset flushes are above its
        // predecessor's, which kvagg would refuse as replays (docs/kvagg.md "Replays").
        request_id_ = uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
        if (max_tuples_ == 0)
            throw Error("kvagg client: MTU " + std::to_string(mtu) + " cannot carry one tuple");
        stream_ = o.stream ? *o.stream : uint32_t(rng_());
        batch_.reserve(kHeaderLen + kTupleLen * max_tuples_);
        batch_.resize(kHeaderLen);
    }
    ~Client() {
        if (fd_ >= 0) ::close(fd_);
    }
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    uint32_t stream() const { return stream_; }
    size_t max_tuples() const { return max_tuples_; }
    uint64_t sent_datagrams() const { return sent_; }
    uint64_t dropped_datagrams() const { return dropped_; }
    uint64_t retransmitted() const { return retransmitted_; }
    uint64_t unconfirmed() const { return unacked_.size(); }
    // Datagrams kept for a resend: unconfirmed, or received but not yet durable.
    uint64_t held() const { return unacked_.size() + undurable_.size(); }
    uint64_t restarts_seen() const { return restarts_; }
    // Sends and receives that reported an ICMP error (kvagg down: no answer).
    uint64_t refused() const { return refused_; }

    // Adds a tuple to the datagram being filled; a full one is sent and held until kvagg confirms
    // it. Every status_every unconfirmed datagrams add() runs status() itself, so it may throw
    // what status() throws (Timeout while kvagg is down): the tuple is held all the same and
    // goes with a later status().
    void add(uint64_t key, uint64_t value) {
        const size_t at = batch_.size();
        batch_.resize(at + kTupleLen);
        detail::put64(&batch_[at], key);
        detail::put64(&batch_[at + 8], value);
        if (++batch_n_ == max_tuples_) send_batch();
    }

    // Sends the partly filled datagram, if any.
    void flush_sends() {
        if (batch_n_) send_batch();
    }

    // Sends the partial datagram, then asks kvagg which sequence numbers it lacks and sends them
    // again until it has every datagram of this stream; kvagg's last view.
    StreamStatus status(unsigned max_rounds = 1000) {
        flush_sends();
        uint64_t prev_top = 0;
        bool seen_top = false;  // prev_top is from this instance's last round
        for (unsigned round = 1; round <= max_rounds; ++round) {
            StreamStatus st = stream_status();
            if (note_instance(st)) seen_top = false;
            if (st.flags & kStatusNoWindow)
                throw Error("kvagg runs with --dup-window 0: no loss detection");
            if (st.flags & kStatusSplit)
                throw Error("stream seen by several kvagg workers: its status is not exact");
            const bool listed_all = st.gaps == st.missing.size();
            const uint64_t bound = listed_all || st.missing.empty() ? st.top : st.missing.back();
            const std::vector<uint64_t>& miss = st.missing;  // ascending
            for (auto it = unacked_.begin(); it != unacked_.end() && it->first <= bound;) {
                if (std::binary_search(miss.begin(), miss.end(), it->first)) {
                    ++it;
                    continue;
                }
                // Received: kept until durable when kvagg keeps state (a restart may lose it).
                if (st.flags & kStatusDurable) undurable_.insert(std::move(*it));
                it = unacked_.erase(it);
            }
            forget_durable(st);
            if (!unacked_.empty() && unacked_.begin()->first < st.window_low)
                throw Error("kvagg client: datagram seq " +
                            std::to_string(unacked_.begin()->first) +
                            " fell out of kvagg's window before it was confirmed: lost");
            if (unacked_.empty()) {
                st.rounds = round;
                st.retransmitted = retransmitted_;
                return st;
            }
            // Datagrams above kvagg's highest may still be on their way while that highest
            // advances: resend them only once it stopped advancing (gaps below it at once).
            const bool tail = seen_top && st.top == prev_top;
            prev_top = st.top;
            seen_top = true;
            for (const auto& [seq, d] : unacked_)
                if ((tail && seq > st.top) || std::binary_search(miss.begin(), miss.end(), seq)) {
                    ++retransmitted_;
                    send_data(d);
                }
            if (!tail) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        throw Error("kvagg client: " + std::to_string(unacked_.size()) +
                    " datagrams unconfirmed after " + std::to_string(max_rounds) + " rounds");
    }

    // Returns once everything sent so far (the partial datagram included) is in kvagg's --state
    // file, riding out restarts: while kvagg does not answer (down, restarting: silence or
    // refusals) status is asked again until `patience` has passed, then Timeout. Error when
    // kvagg keeps no state.
    StreamStatus wait_durable(std::chrono::milliseconds patience = std::chrono::seconds(60)) {
        const auto end = std::chrono::steady_clock::now() + patience;
        const Within within(deadline_, end);
        for (;;) {
            try {
                StreamStatus st = status();
                if (!(st.flags & kStatusDurable))
                    throw Error("kvagg runs without --state: nothing is durable");
                if (undurable_.empty() && unacked_.empty()) return st;
            } catch (const Timeout&) {
                // No answer within the attempts: asked again while the patience lasts.
            }
            if (std::chrono::steady_clock::now() >= end)
                throw Timeout("kvagg client: not durable after the patience given (" +
                              std::to_string(patience.count()) + " ms): " + std::to_string(held()) +
                              " datagrams held");
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

    // status() whose request attempts end within `patience` (Timeout then): a quick look at
    // whether kvagg answers again, as the sharded client probes an instance that was down.
    StreamStatus status_within(std::chrono::milliseconds patience) {
        const Within within(deadline_, std::chrono::steady_clock::now() + patience);
        return status();
    }

    // One status request about a stream (default: this client's), no retransmission.
    StreamStatus stream_status(std::optional<uint32_t> stream = {}) {
        const auto frames = request(kOpStatus, 0, {}, 0, stream.value_or(stream_), false, padded_);
        const auto& [n, body] = frames.front();
        if (body.size() < kStatusBodyLen + 8 * size_t(n))
            throw Error("kvagg client: short status response");
        StreamStatus st;
        uint64_t* f[] = {&st.flags, &st.top, &st.gaps, &st.duplicates, &st.stale, &st.window_low};
        for (size_t i = 0; i < 6; ++i) *f[i] = detail::get64(&body[8 * i]);
        for (size_t i = 0; i < n; ++i)
            st.missing.push_back(detail::get64(&body[kStatusBodyLen + 8 * i]));
        const size_t tail = kStatusBodyLen + 8 * size_t(n);
        if (body.size() >= tail + kStatusTailLen) {  // a kvagg before --state sends no tail
            st.durable_through = detail::get64(&body[tail]);
            st.instance = detail::get64(&body[tail + 8]);
        }
        return st;
    }

    // key -> current sum for every key asked (0 for a key kvagg never received).
    Sums read(const uint64_t* keys, size_t count) {
        Sums out;
        for (size_t i = 0; i < count; i += max_keys_) {
            const size_t n = std::min(max_keys_, count - i);
            std::vector<uint8_t> body(8 * n);
            for (size_t k = 0; k < n; ++k) detail::put64(&body[8 * k], keys[i + k]);
            tuples(
                request(kOpRead, uint16_t(n), body, 0, stream_, false, kHeaderLen + kTupleLen * n),
                out);
        }
        return out;
    }

    // key -> sum of every key with a non-zero sum (or keys lo..hi). With reset the amounts are
    // taken out of kvagg atomically per key; a lost answer is asked again under the same
    // request id, which kvagg answers from memory without flushing again. If no complete answer
    // comes, the Timeout says the flushed sums may be lost.
    // Without a key kvagg answers one frame no larger than the request: the flush goes page by
    // page (each request padded to a full frame, from the key after the last one listed).
    Sums flush(bool reset = false, std::optional<std::pair<uint64_t, uint64_t>> range = {}) {
        Sums out;
        std::optional<std::pair<uint64_t, uint64_t>> page = range;
        try {
            for (;;) {
                std::vector<uint8_t> body;
                if (page) {
                    body.resize(16);
                    detail::put64(&body[0], page->first);
                    detail::put64(&body[8], page->second);
                }
                const Frames frames = request(kOpFlush, page ? 1 : 0, body, reset ? kFlushReset : 0,
                                              stream_, reset, padded_);
                tuples(frames, out);
                const auto& [n, last_body] = frames.back();
                if (last_complete_ || n == 0) break;
                const uint64_t last_key = detail::get64(&last_body[kTupleLen * (n - 1)]);
                const uint64_t hi = page ? page->second : ~uint64_t(0);
                if (last_key >= hi) break;
                page = std::make_pair(last_key + 1, hi);
            }
        } catch (const Timeout& e) {
            if (reset)
                throw Timeout(std::string("flush(reset): ") + e.what() +
                              ": the flushed sums may be lost");
            throw;
        }
        return out;
    }

  private:
    using Frames = std::vector<std::pair<uint16_t, std::vector<uint8_t>>>;
    using Deadline = std::optional<std::chrono::steady_clock::time_point>;

    // Sets the deadline no request attempt outlasts, for one call (wait_durable, status_within).
    struct Within {
        Deadline& d;
        Within(Deadline& deadline, std::chrono::steady_clock::time_point end) : d(deadline) {
            d = end;
        }
        ~Within() { d.reset(); }
        Within(const Within&) = delete;
        Within& operator=(const Within&) = delete;
    };

    // A new kvagg instance has only what its state file had: every datagram it got from the one
    // before but not yet durable is unconfirmed again. True when the instance changed.
    bool note_instance(const StreamStatus& st) {
        const bool changed = instance_ && st.instance != instance_;
        instance_ = st.instance;
        if (!changed) return false;
        ++restarts_;
        unacked_.merge(undurable_);
        return true;
    }
    // Datagrams the state file holds need no resend any more.
    void forget_durable(const StreamStatus& st) {
        if (!(st.flags & kStatusDurable)) return;
        undurable_.erase(undurable_.begin(), undurable_.upper_bound(st.durable_through));
    }

    void send_batch() {
        ++seq_;
        detail::header(batch_.data(), kOpSum, uint16_t(batch_n_), stream_, seq_, 0);
        if (mac_) mac_->sign(batch_);  // held signed: a resend is the same datagram
        std::vector<uint8_t>& d = unacked_[seq_];
        d.swap(batch_);
        batch_.reserve(kHeaderLen + kTupleLen * max_tuples_);
        batch_.resize(kHeaderLen);
        batch_n_ = 0;
        send_data(d);
        if (unacked_.size() >= o_.status_every) status();
    }

    void send_data(const std::vector<uint8_t>& d) {
        if (o_.drop_share > 0 && std::uniform_real_distribution<double>()(rng_) < o_.drop_share) {
            ++dropped_;
            return;
        }
        if (send_one(d)) ++sent_;
    }

    // Sends one datagram; false when it did not leave (refused twice over). A send that fails
    // with an ICMP error reports an earlier datagram's and consumes it: this one did not go, so
    // it is tried once more. One that does not go is no answer to its caller (a data datagram
    // stays held for status()).
    bool send_one(const std::vector<uint8_t>& d) {
        for (int tries = 0; tries < 2;) {
            if (::send(fd_, d.data(), d.size(), 0) == ssize_t(d.size())) return true;
            if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) continue;  // local: again
            no_answer_or_throw(errno, "send");
            ++tries;
        }
        return false;
    }

    // Counts an ICMP error reported by the socket as no answer; any other errno is an Error.
    void no_answer_or_throw(int e, const char* what) {
        if (!detail::no_answer_errno(e))
            throw Error(std::string("kvagg client: ") + what + ": " + std::strerror(e));
        ++refused_;
    }

    // Sends a request and collects its response frames (index 0 .. the one marked last).
    // Resent when an attempt's timeout passes without a complete answer (silence or ICMP
    // refusals alike), under a new request id unless same_id (a reset flush, which kvagg
    // answers at most once per id). Within wait_durable no attempt outlasts its patience.
    // Unkeyed, the request is padded with zeros to pad_to bytes (kvagg's answer is no larger);
    // keyed, it carries the trailer instead.
    Frames request(uint8_t op, uint16_t count, const std::vector<uint8_t>& body, uint32_t flags,
                   uint32_t stream, bool same_id, size_t pad_to) {
        ++request_id_;
        unsigned attempts = 0;
        for (unsigned a = 0; a < o_.retries; ++a) {
            if (a && !same_id) ++request_id_;
            if (deadline_ && std::chrono::steady_clock::now() >= *deadline_) break;
            ++attempts;
            std::vector<uint8_t> d(kHeaderLen + body.size());
            detail::header(d.data(), op, count, stream, request_id_, flags);
            std::copy(body.begin(), body.end(), d.begin() + kHeaderLen);
            if (mac_)
                mac_->sign(d);
            else if (d.size() < pad_to)
                d.resize(pad_to);
            send_one(d);
            if (std::optional<Frames> out = collect(op, request_id_)) return std::move(*out);
        }
        throw Timeout("kvagg client: op " + std::to_string(op) + ": no complete response after " +
                      std::to_string(attempts) + " attempts of " +
                      std::to_string(o_.timeout.count()) + " ms");
    }

    // The response frames to request `rid`, or none when the attempt's timeout passes first. An
    // ICMP error meanwhile is no answer yet: the attempt goes on waiting.
    std::optional<Frames> collect(uint8_t op, uint64_t rid) {
        auto end = std::chrono::steady_clock::now() + o_.timeout;
        if (deadline_) end = std::min(end, *deadline_);
        std::map<uint32_t, std::pair<uint16_t, std::vector<uint8_t>>> frames;
        std::optional<uint32_t> last;
        std::vector<uint8_t> buf(65536);
        while (!last || frames.size() < *last + 1) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                end - std::chrono::steady_clock::now());
            pollfd p{fd_, POLLIN, 0};
            if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) == 0) return std::nullopt;
            const ssize_t n = ::recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
            if (n < 0) {
                if (errno != EINTR && errno != EAGAIN) no_answer_or_throw(errno, "recv");
                continue;
            }
            if (size_t(n) < kHeaderLen || detail::get16(&buf[LINERATE_KV_MAGIC_OFF]) != kMagic ||
                buf[LINERATE_KV_OP_OFF] != (op | kOpResponse) ||
                detail::get64(&buf[LINERATE_KV_SEQ_OFF]) != rid)
                continue;  // a late answer to an earlier attempt
            const uint32_t idx = detail::get32(&buf[LINERATE_KV_RESERVED_OFF]);
            const uint16_t count = detail::get16(&buf[LINERATE_KV_COUNT_OFF]);
            if (idx & kErrorFrame)  // never MAC'd: a forged one can only make the call fail
                throw Refused(count, "kvagg refused the request: " + refusal_text(count));
            size_t len = size_t(n);
            if (mac_) {
                if (!mac_->verify(buf.data(), len)) continue;  // not kvagg's: ignored
                len -= kTrailerLen;
            }
            frames[idx & ~kLastFrame & ~kErrorFrame] = {
                count, {buf.begin() + kHeaderLen, buf.begin() + ptrdiff_t(len)}};
            if (idx & kLastFrame) last = idx & ~kLastFrame;
            // Unkeyed, a flush's one frame is a page: the last frame flag says whether the
            // listing reached the range's end.
            if (!mac_ && op == kOpFlush) {
                last_complete_ = (idx & kLastFrame) != 0;
                break;
            }
        }
        Frames out;
        for (auto& [i, f] : frames) out.push_back(std::move(f));
        return out;
    }

    static void tuples(const Frames& frames, Sums& out) {
        for (const auto& [n, body] : frames) {
            if (body.size() < kTupleLen * size_t(n)) throw Error("kvagg client: short response");
            for (size_t i = 0; i < n; ++i)
                out[detail::get64(&body[kTupleLen * i])] = detail::get64(&body[kTupleLen * i + 8]);
        }
    }

    Options o_;
    std::mt19937_64 rng_;
    std::unique_ptr<detail::PayloadMac> mac_;  // with Options::key_file
    size_t padded_ = 0;           // unkeyed status and flush requests: their UDP payload
    bool last_complete_ = false;  // unkeyed flush: its page reached the range's end
    int fd_ = -1;
    uint32_t stream_ = 0;
    size_t max_tuples_ = 0, max_keys_ = 0;
    std::vector<uint8_t> batch_;
    size_t batch_n_ = 0;
    uint64_t seq_ = 0, request_id_ = 0;
    uint64_t sent_ = 0, dropped_ = 0, retransmitted_ = 0;
    std::map<uint64_t, std::vector<uint8_t>> unacked_;
    std::map<uint64_t, std::vector<uint8_t>> undurable_;  // received, not yet in kvagg's state
    uint64_t instance_ = 0, restarts_ = 0, refused_ = 0;
    // Set by wait_durable and status_within: no request attempt waits beyond it.
    Deadline deadline_;
};

// ---- Sharded clients (docs/scale-out.md "Sharded clients") ----
//
//   linerate::kvclient::ShardedClient c({"10.0.0.1:9000", "10.0.1.1:9000"}, options);
//   c.add(key, value);          // to the key's owner among the endpoints
//   auto sums = c.read(keys);   // every instance asked, its sums added: exact for any mapping
//   c.add_endpoint("10.0.2.1"); c.remove_endpoint("10.0.1.1:9000");  // its sums move over
//
// A key's owner is the endpoint with the highest rendezvous score
//   score(name, key) = mix64(fnv1a64(name) ^ mix64(key))
// over the endpoints' canonical names "host:port" (host as given, port in decimal): FNV-1a
// 64-bit of the name's bytes, mix64 the splitmix64 finalizer; a tie goes to the smaller name.
// python/linerate_kvagg.py computes the same (tests/kvagg/fixtures/shard_owners.txt holds both).

struct Endpoint {
    std::string host;
    uint16_t port = LINERATE_KV_DEFAULT_PORT;
    std::string name() const { return host + ":" + std::to_string(port); }
};

// "host:port" or "host" (port 9000); anything else is an Error.
inline Endpoint parse_endpoint(const std::string& text) {
    Endpoint e;
    const size_t colon = text.rfind(':');
    e.host = text.substr(0, colon);
    if (colon != std::string::npos) {
        const std::string p = text.substr(colon + 1);
        const bool digits =
            !p.empty() && p.size() <= 5 &&
            std::all_of(p.begin(), p.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        const unsigned long port = digits ? std::stoul(p) : 0;
        if (port == 0 || port > 0xFFFF)
            throw Error("kvagg endpoint '" + text + "': the port must be 1-65535");
        e.port = uint16_t(port);
    }
    if (e.host.empty()) throw Error("kvagg endpoint '" + text + "': no host");
    return e;
}

// FNV-1a, 64 bits, of the name's bytes.
inline uint64_t shard_name_hash(const std::string& name) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (unsigned char ch : name) h = (h ^ ch) * 0x100000001B3ull;
    return h;
}
// The splitmix64 finalizer: every bit of x moves about half of the result's.
inline uint64_t shard_mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
inline uint64_t shard_score(uint64_t name_hash, uint64_t key) {
    return shard_mix(name_hash ^ shard_mix(key));
}
// Index of the key's owner among `names` (their shard_name_hash in `hashes`); names not empty.
inline size_t shard_owner(const std::vector<std::string>& names,
                          const std::vector<uint64_t>& hashes, uint64_t key) {
    const uint64_t mixed = shard_mix(key);
    size_t best = 0;
    uint64_t top = shard_mix(hashes[0] ^ mixed);
    for (size_t i = 1; i < names.size(); ++i) {
        const uint64_t sc = shard_mix(hashes[i] ^ mixed);
        if (sc > top || (sc == top && names[i] < names[best])) best = i, top = sc;
    }
    return best;
}

struct ShardOptions {
    // Unconfirmed datagrams of one instance before add() runs that instance's status() itself.
    size_t status_every = 8192;
    // add()'s own status() of an instance gives up after this (a request's attempts within it)
    // and the instance counts as down: add() holds its share and goes on with the others, and
    // asks it again (within the same patience) down_retry later. read(), flush(), status(),
    // wait_durable() and remove_endpoint() keep the Options' timeout and retries.
    std::chrono::milliseconds status_patience{1000};
    std::chrono::milliseconds down_retry{1000};
};

// One Client per kvagg endpoint; each key to its owner (above). read() and flush() ask every
// instance and add up what each holds, so they are exact whatever the mapping was when the
// tuples were sent. Throws what Client throws (Error, Timeout), nothing else.
class ShardedClient : public detail::ReadRanges<ShardedClient> {
  public:
    using detail::ReadRanges<ShardedClient>::read;
    ShardedClient(const std::vector<std::string>& endpoints, const Options& base,
                  const ShardOptions& so = {})
        : base_(base), so_(so) {
        for (const std::string& e : endpoints) add_endpoint(e);
        if (shards_.empty()) throw Error("kvagg sharded client: no endpoint");
    }

    // A new instance: the keys it now owns go to it from the next add() on.
    void add_endpoint(const std::string& endpoint) {
        const Endpoint e = parse_endpoint(endpoint);
        const std::string name = e.name();
        if (std::find(names_.begin(), names_.end(), name) != names_.end())
            throw Error("kvagg sharded client: " + name + " named twice");
        Options o = base_;
        o.host = e.host;
        o.port = e.port;
        o.seed = base_.seed ^ shard_name_hash(name);  // a stream id of its own per instance
        o.status_every = SIZE_MAX;                    // confirm() below does it, per instance
        shards_.push_back(Shard{std::make_unique<Client>(o)});
        names_.push_back(name);
        hashes_.push_back(shard_name_hash(name));
    }

    // Takes an instance out: sends it everything held for it (durable where it keeps --state,
    // within `patience`), then flushes it with reset and adds those sums to the remaining
    // owners, so reads stay exact. Other clients still sending to it do the same when they
    // remove it; what they sent is taken by their flush. Timeout: it did not answer, it stays.
    void remove_endpoint(const std::string& endpoint,
                         std::chrono::milliseconds patience = std::chrono::seconds(60)) {
        const size_t i = index_of(parse_endpoint(endpoint).name());
        if (shards_.size() == 1) throw Error("kvagg sharded client: the last endpoint stays");
        Client& c = *shards_[i].client;
        if (c.status().flags & kStatusDurable) c.wait_durable(patience);
        const Sums moved = c.flush(true);
        shards_.erase(shards_.begin() + ptrdiff_t(i));
        names_.erase(names_.begin() + ptrdiff_t(i));
        hashes_.erase(hashes_.begin() + ptrdiff_t(i));
        for (const auto& [key, sum] : moved) add(key, sum);
    }

    const std::vector<std::string>& endpoints() const { return names_; }
    const std::string& owner(uint64_t key) const { return names_[owner_index(key)]; }
    Client& client(const std::string& endpoint) { return *shards_[index_of(endpoint)].client; }

    // To the key's owner. An owner that does not answer its status keeps its share held (see
    // ShardOptions::status_patience); add() throws no Timeout.
    void add(uint64_t key, uint64_t value) {
        Shard& s = shards_[owner_index(key)];
        s.client->add(key, value);
        if (s.client->unconfirmed() >= so_.status_every) confirm(s);
    }

    void flush_sends() {
        for (Shard& s : shards_) s.client->flush_sends();
    }

    // status() of every instance, in endpoints() order; the instances that answer are confirmed
    // even when one does not, which then throws Timeout naming it.
    std::vector<StreamStatus> status() {
        std::vector<StreamStatus> out(shards_.size());
        std::string silent;
        for (size_t i = 0; i < shards_.size(); ++i) {
            try {
                out[i] = shards_[i].client->status();
                shards_[i].down = false;
            } catch (const Timeout&) {
                silent += " " + names_[i];
            }
        }
        if (!silent.empty()) throw Timeout("kvagg sharded client: no answer from" + silent);
        return out;
    }

    // Every instance's wait_durable(), in turns of at most a second each, so an instance that is
    // down does not keep the others waiting; Timeout once `patience` has passed.
    void wait_durable(std::chrono::milliseconds patience = std::chrono::seconds(60)) {
        using namespace std::chrono;
        const auto end = steady_clock::now() + patience;
        std::vector<bool> done(shards_.size());
        for (;;) {
            for (size_t i = 0; i < shards_.size(); ++i) {
                const auto left = ceil<milliseconds>(end - steady_clock::now());
                if (done[i] || left.count() <= 0) continue;
                try {
                    shards_[i].client->wait_durable(std::min<milliseconds>(left, seconds(1)));
                    done[i] = true;
                } catch (const Timeout&) {
                }
            }
            if (std::find(done.begin(), done.end(), false) == done.end()) return;
            if (steady_clock::now() >= end)
                throw Timeout("kvagg sharded client: not durable after the patience given (" +
                              std::to_string(patience.count()) + " ms): " + std::to_string(held()) +
                              " datagrams held");
        }
    }

    // key -> the sum over every instance (0 for a key none holds).
    Sums read(const uint64_t* keys, size_t count) {
        Sums out;
        for (Shard& s : shards_)
            for (const auto& [key, sum] : s.client->read(keys, count)) out[key] += sum;
        return out;
    }

    // The sums over every instance. With reset, what the instances that answered flushed is kept
    // when another times out (Timeout), and returned by the next flush(reset): it is not lost.
    Sums flush(bool reset = false, std::optional<std::pair<uint64_t, uint64_t>> range = {}) {
        Sums out;
        Sums& into = reset ? carried_ : out;
        std::string silent;
        for (size_t i = 0; i < shards_.size(); ++i) {
            try {
                for (const auto& [key, sum] : shards_[i].client->flush(reset, range))
                    into[key] += sum;
            } catch (const Timeout& e) {
                if (!reset) throw;
                silent += std::string("; ") + e.what();
            }
        }
        if (!silent.empty())
            throw Timeout("kvagg sharded client: flush(reset) incomplete" + silent +
                          " (what the others flushed comes with the next flush(reset))");
        if (reset) out.swap(carried_);
        return out;
    }

    // Summed over the instances.
    uint64_t held() const { return total(&Client::held); }
    uint64_t unconfirmed() const { return total(&Client::unconfirmed); }
    uint64_t sent_datagrams() const { return total(&Client::sent_datagrams); }
    uint64_t retransmitted() const { return total(&Client::retransmitted); }
    uint64_t restarts_seen() const { return total(&Client::restarts_seen); }
    uint64_t refused() const { return total(&Client::refused); }
    // Times an instance was found not answering by add()'s own status.
    uint64_t outages() const { return outages_; }

  private:
    struct Shard {
        std::unique_ptr<Client> client;
        bool down = false;
        std::chrono::steady_clock::time_point retry_at{};
    };

    size_t owner_index(uint64_t key) const { return shard_owner(names_, hashes_, key); }
    size_t index_of(const std::string& name) const {
        const auto it = std::find(names_.begin(), names_.end(), name);
        if (it == names_.end()) throw Error("kvagg sharded client: " + name + " is no endpoint");
        return size_t(it - names_.begin());
    }
    uint64_t total(uint64_t (Client::*f)() const) const {
        uint64_t n = 0;
        for (const Shard& s : shards_) n += ((*s.client).*f)();
        return n;
    }

    // The instance's status() within status_patience; one found down is asked again only after
    // down_retry, so the others go on meanwhile.
    void confirm(Shard& s) {
        const auto now = std::chrono::steady_clock::now();
        if (s.down && now < s.retry_at) return;
        try {
            s.client->status_within(so_.status_patience);
            s.down = false;
        } catch (const Timeout&) {
            if (!s.down) ++outages_;
            s.down = true;
            s.retry_at = std::chrono::steady_clock::now() + so_.down_retry;
        }
    }

    Options base_;
    ShardOptions so_;
    std::vector<Shard> shards_;
    std::vector<std::string> names_;
    std::vector<uint64_t> hashes_;
    Sums carried_;  // flush(reset): taken from instances while another did not answer
    uint64_t outages_ = 0;
};

}  // namespace linerate::kvclient
