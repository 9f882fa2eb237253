// lib/auth: the key file's checks and the MAC's tags (a NIST vector, sign/verify, tampering).
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "linerate/message_auth.hpp"

namespace {

using linerate::auth::Key;
using linerate::auth::KeyFileError;
using linerate::auth::MessageMac;
namespace auth = linerate::auth;

std::vector<uint8_t> from_hex(const std::string& h) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < h.size(); i += 2)
        out.push_back(uint8_t(std::stoul(h.substr(i, 2), nullptr, 16)));
    return out;
}

std::string write_key_file(const std::string& text, mode_t mode) {
    char path[] = "/tmp/linerate-key-XXXXXX";
    const int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
    close(fd);
    chmod(path, mode);
    return path;
}

const std::string kHex = "78dc4e0aaf52d935c3c01eea57428f00ca1fd475f5da86a49c8dd73d68c8e223";

TEST(MessageMac, TagIsAes256GmacOfTheNistVector) {
    // NIST SP 800-38D test vectors, gcmEncryptExtIV256, PTlen 0, AADlen 128, Count 0.
    const Key key = auth::parse_key_hex(kHex, "test");
    MessageMac mac(key);
    const std::vector<uint8_t> iv = from_hex("d79cf22d504cc793c3fb6c8a");
    const std::vector<uint8_t> aad = from_hex("b96baa8c1c75a671bfb2d08d06be5f36");
    const auto tag = mac.tag(iv.data(), aad.data(), aad.size());
    EXPECT_EQ(std::vector<uint8_t>(tag.begin(), tag.end()),
              from_hex("3e5d486aa2e30b22e040b85723a06e76"));
}

// OpenSSL's own AES-256-GMAC (EVP GCM, the payload as additional data): the reference.
std::array<uint8_t, auth::kTagLen> evp_gmac(const Key& key, const uint8_t* nonce,
                                            const uint8_t* data, size_t len) {
    std::array<uint8_t, auth::kTagLen> tag{};
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    int n = 0;
    EXPECT_EQ(EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key.bytes.data(), nonce), 1);
    if (len) {
        EXPECT_EQ(EVP_EncryptUpdate(ctx, nullptr, &n, data, int(len)), 1);
    }
    EXPECT_EQ(EVP_EncryptFinal_ex(ctx, nullptr, &n), 1);
    EXPECT_EQ(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, int(tag.size()), tag.data()), 1);
    EVP_CIPHER_CTX_free(ctx);
    return tag;
}

TEST(MessageMac, TagIsOpenSslsGmacAtEveryLength) {
    // Every length to past the one-pass path's limit (gmac_wide.hpp, where the CPU has it; the
    // OpenSSL GCM path elsewhere), under keys and nonces drawn at random.
    uint64_t state = 0x9E3779B97F4A7C15ull;
    auto next = [&] { return uint8_t((state = state * 6364136223846793005ull + 1) >> 56); };
    std::vector<uint8_t> data(2100), nonce(auth::kNonceLen);
    for (int round = 0; round < 3; ++round) {
        Key key{};
        for (uint8_t& b : key.bytes) b = next();
        for (uint8_t& b : data) b = next();
        for (uint8_t& b : nonce) b = next();
        MessageMac mac(key);
        for (size_t len = 0; len <= data.size(); ++len) {
            ASSERT_EQ(mac.tag(nonce.data(), data.data(), len),
                      evp_gmac(key, nonce.data(), data.data(), len))
                << "length " << len << ", round " << round;
        }
    }
}

TEST(MessageMac, VerifiesWhatItSignsAndNothingChanged) {
    MessageMac sender(auth::parse_key_hex(kHex, "test"));
    MessageMac receiver(auth::parse_key_hex(kHex, "test"));
    std::vector<uint8_t> msg(100 + auth::kTrailerLen);
    for (size_t i = 0; i < 100; ++i) msg[i] = uint8_t(i * 7);
    ASSERT_EQ(sender.sign(msg.data(), 100), 100 + auth::kTrailerLen);
    EXPECT_TRUE(receiver.verify(msg.data(), msg.size()));
    // Every byte, payload, nonce and tag, is covered.
    for (size_t i = 0; i < msg.size(); ++i) {
        msg[i] ^= 1;
        EXPECT_FALSE(receiver.verify(msg.data(), msg.size())) << "byte " << i;
        msg[i] ^= 1;
    }
    EXPECT_FALSE(receiver.verify(msg.data(), msg.size() - 1));
    EXPECT_FALSE(receiver.verify(msg.data(), auth::kTrailerLen - 1));
    std::string other = kHex;
    other[0] = '0';
    MessageMac stranger(auth::parse_key_hex(other, "test"));
    EXPECT_FALSE(stranger.verify(msg.data(), msg.size()));
}

TEST(MessageMac, NeverSignsTwiceWithOneNonce) {
    MessageMac a(auth::parse_key_hex(kHex, "test")), b(auth::parse_key_hex(kHex, "test"));
    std::set<std::vector<uint8_t>> nonces;
    uint8_t msg[8 + auth::kTrailerLen] = {};
    for (MessageMac* m : {&a, &b})
        for (int i = 0; i < 1000; ++i) {
            m->sign(msg, 8);
            nonces.insert({msg + 8, msg + 8 + auth::kNonceLen});
        }
    EXPECT_EQ(nonces.size(), 2000u);  // a counter per sender, a random sender id per MessageMac
}

TEST(KeyFile, LoadsHexWithANewlineAndRefusesWhatSshWouldRefuse) {
    const std::string good = write_key_file(kHex + "\n", 0600);
    EXPECT_EQ(auth::load_key_file(good).bytes, auth::parse_key_hex(kHex, "x").bytes);
    chmod(good.c_str(), 0640);
    try {
        auth::load_key_file(good);
        ADD_FAILURE() << "a group-readable key was taken";
    } catch (const KeyFileError& e) {
        EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
    }
    chmod(good.c_str(), 0604);
    EXPECT_THROW(auth::load_key_file(good), KeyFileError);
    std::remove(good.c_str());
    const std::string short_key = write_key_file(kHex.substr(2), 0600);
    EXPECT_THROW(auth::load_key_file(short_key), KeyFileError);
    std::remove(short_key.c_str());
    const std::string not_hex = write_key_file(std::string(63, 'a') + "g", 0600);
    EXPECT_THROW(auth::load_key_file(not_hex), KeyFileError);
    std::remove(not_hex.c_str());
    EXPECT_THROW(auth::load_key_file("/nonexistent/linerate.key"), KeyFileError);
    EXPECT_THROW(auth::load_key_file("/tmp"), KeyFileError);
}

}  // namespace
