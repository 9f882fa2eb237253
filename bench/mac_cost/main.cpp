// bench/run auth-cost's first part: the cost of the MACs Debian's OpenSSL offers, per message
// of the sizes kvagg and clocksync send, against linerate's (lib/auth: GMAC over the ECB block),
// all in one process so the ratios share a machine state. Prints one JSON object:
//   {"cpu_ghz_tsc": ..., "sizes": [...], "ns": {"name": [ns per message for each size]}}
// The minimum of 30 rounds of 2000 messages (the machine is shared: the minimum is the cost
// without interruptions).
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "auth/message_mac.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMessages = 2000;
constexpr int kRounds = 30;

double min_ns_per_message(const std::function<void()>& one) {
    double best = 1e30;
    for (int r = 0; r < kRounds; ++r) {
        const auto t0 = Clock::now();
        for (int i = 0; i < kMessages; ++i) one();
        const std::chrono::duration<double, std::nano> d = Clock::now() - t0;
        best = std::min(best, d.count() / kMessages);
    }
    return best;
}

// An OpenSSL EVP_MAC (HMAC-SHA256, BLAKE2BMAC, SIPHASH, GMAC) set up once, re-initialised per
// message as a receiver would.
struct EvpMac {
    EVP_MAC* mac = nullptr;
    EVP_MAC_CTX* ctx = nullptr;
    EvpMac(const char* name, std::vector<OSSL_PARAM> params, const uint8_t* key, size_t key_len) {
        mac = EVP_MAC_fetch(nullptr, name, nullptr);
        ctx = mac ? EVP_MAC_CTX_new(mac) : nullptr;
        params.push_back(OSSL_PARAM_construct_end());
        if (!ctx || EVP_MAC_init(ctx, key, key_len, params.data()) != 1) ctx = nullptr;
    }
    ~EvpMac() {
        EVP_MAC_CTX_free(ctx);
        EVP_MAC_free(mac);
    }
    void run(const uint8_t* msg, size_t len, uint8_t* out, const OSSL_PARAM* per_message) {
        size_t n = 0;
        EVP_MAC_init(ctx, nullptr, 0, per_message);
        EVP_MAC_update(ctx, msg, len);
        EVP_MAC_final(ctx, out, &n, 64);
    }
};

}  // namespace

int main() {
    const std::vector<size_t> sizes = {70, 92, 598, 1472};  // clocksync, kvagg 1 and 32 tuples, MTU
    uint8_t key[32], msg[1500] = {}, out[64], iv[12] = {};
    for (int i = 0; i < 32; ++i) key[i] = uint8_t(i * 13 + 1);
    linerate::auth::Key k;
    std::copy(key, key + 32, k.bytes.begin());
    linerate::auth::MessageMac ours(k);
    char sha256[] = "SHA256", cipher[] = "AES-256-GCM";
    EvpMac hmac("HMAC", {OSSL_PARAM_construct_utf8_string("digest", sha256, 0)}, key, 32);
    EvpMac blake("BLAKE2BMAC", {}, key, 32);
    size_t sip_size = 16;
    EvpMac sip("SIPHASH", {OSSL_PARAM_construct_size_t("size", &sip_size)}, key, 16);
    EvpMac gmac("GMAC", {OSSL_PARAM_construct_utf8_string("cipher", cipher, 0)}, key, 32);
    const OSSL_PARAM gmac_iv[] = {OSSL_PARAM_construct_octet_string("iv", iv, sizeof iv),
                                  OSSL_PARAM_construct_end()};
    std::vector<std::pair<std::string, std::function<void(size_t)>>> macs = {
        {"linerate_gmac", [&](size_t n) { ours.verify(msg, n); }},
        {"openssl_evp_gmac", [&](size_t n) { gmac.run(msg, n, out, gmac_iv); }},
        {"siphash_2_4_128", [&](size_t n) { sip.run(msg, n, out, nullptr); }},
        {"blake2b_mac", [&](size_t n) { blake.run(msg, n, out, nullptr); }},
        {"hmac_sha256", [&](size_t n) { hmac.run(msg, n, out, nullptr); }},
    };
    std::printf("{\"sizes\": [");
    for (size_t i = 0; i < sizes.size(); ++i) std::printf("%s%zu", i ? ", " : "", sizes[i]);
    std::printf("], \"ns\": {");
    for (size_t m = 0; m < macs.size(); ++m) {
        std::printf("%s\"%s\": [", m ? ", " : "", macs[m].first.c_str());
        for (size_t i = 0; i < sizes.size(); ++i)
            std::printf("%s%.1f", i ? ", " : "",
                        min_ns_per_message([&] { macs[m].second(sizes[i]); }));
        std::printf("]");
    }
    std::printf("}}\n");
}
