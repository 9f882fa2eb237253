// The C++ kvagg client (include/linerate/kvagg_client.hpp) when nothing answers: a UDP port on
// 127.0.0.1 with no socket on it, where the kernel refuses every datagram at once (ICMP port
// unreachable, ECONNREFUSED on the client's next send or receive), as for a kvagg that is down.
// The refusal is no answer: datagrams stay held, each request waits its whole timeout per
// attempt, wait_durable() its whole patience, and only Timeout leaves the client. Built twice,
// as C++17 and as C++20 (tests/kvagg/CMakeLists.txt): the header supports both.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "closed_port.hpp"
#include "linerate/kvagg_client.hpp"

namespace kv = linerate::kvclient;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

kv::Options refused_options(unsigned retries, milliseconds timeout) {
    kv::Options o;
    o.host = "127.0.0.1";
    o.port = linerate::test::closed_port();
    o.timeout = timeout;
    o.retries = retries;
    o.max_tuples = 1;           // a datagram per add()
    o.status_every = 1u << 20;  // no automatic status: add() only sends
    return o;
}

long elapsed_ms(Clock::time_point since) {
    return long(std::chrono::duration_cast<milliseconds>(Clock::now() - since).count());
}

}  // namespace

TEST(KvaggClientRefused, AddKeepsEveryRefusedDatagramHeld) {
    kv::Client c(refused_options(3, milliseconds(100)));
    for (uint64_t k = 0; k < 200; ++k) c.add(k, k + 1);  // throws nothing
    EXPECT_EQ(c.unconfirmed(), 200u);
    EXPECT_EQ(c.held(), 200u);
    EXPECT_GT(c.refused(), 0u);  // the kernel did refuse: the path ran
    EXPECT_LE(c.sent_datagrams(), 200u);
}

TEST(KvaggClientRefused, StatusWaitsEveryAttemptsTimeoutThenTimeout) {
    kv::Client c(refused_options(3, milliseconds(100)));
    c.add(1, 2);
    const auto t0 = Clock::now();
    EXPECT_THROW(c.status(), kv::Timeout);
    EXPECT_GE(elapsed_ms(t0), 300);  // 3 attempts of 100 ms, not the first refusal's 0 ms
    EXPECT_GT(c.refused(), 0u);
    EXPECT_EQ(c.held(), 1u);
}

TEST(KvaggClientRefused, WaitDurableWaitsItsWholePatience) {
    kv::Client c(refused_options(2, milliseconds(100)));
    c.add(1, 2);
    const auto t0 = Clock::now();
    EXPECT_THROW(c.wait_durable(milliseconds(700)), kv::Timeout);
    const long took = elapsed_ms(t0);
    EXPECT_GE(took, 700);   // many status() rounds of 2 attempts: the patience, not theirs
    EXPECT_LT(took, 1500);  // and not much beyond it: no attempt outlasts the patience
    EXPECT_EQ(c.held(), 1u);
}

TEST(KvaggClientRefused, ReadAndFlushTimeOut) {
    kv::Client c(refused_options(2, milliseconds(50)));
    EXPECT_THROW(c.read({1, 2, 3}), kv::Timeout);
    const std::vector<uint64_t> keys{4, 5};
    EXPECT_THROW(c.read(keys), kv::Timeout);
    try {
        c.flush(true);
        ADD_FAILURE() << "flush(reset) answered by a closed port";
    } catch (const kv::Timeout& e) {
        EXPECT_NE(std::string(e.what()).find("the flushed sums may be lost"), std::string::npos);
    }
}

#if __cplusplus >= 202002L
TEST(KvaggClientRefused, ReadTakesASpanAsBefore) {
    kv::Client c(refused_options(1, milliseconds(20)));
    const uint64_t key = 7;
    EXPECT_THROW(c.read(std::span(&key, 1)), kv::Timeout);
}
#endif

// A failure that is not an ICMP answer stays an Error (not a Timeout): a datagram longer than
// UDP allows (EMSGSIZE).
TEST(KvaggClientRefused, OtherSocketErrorsAreErrors) {
    kv::Options o = refused_options(1, milliseconds(20));
    o.mtu = 100000;
    o.max_tuples = 0;
    kv::Client c(o);
    try {
        for (size_t i = 0; i < c.max_tuples(); ++i) c.add(i, i);
        ADD_FAILURE() << "a " << c.max_tuples() << "-tuple datagram was sent";
    } catch (const kv::Timeout& e) {
        ADD_FAILURE() << "Timeout for a local error: " << e.what();
    } catch (const kv::Error& e) {
        EXPECT_NE(std::string(e.what()).find("send: Message too long"), std::string::npos)
            << e.what();
    }
}
