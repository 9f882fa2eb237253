#include "pkt/address.hpp"

#include <arpa/inet.h>
#include <fmt/core.h>

namespace linerate::pkt {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

std::optional<uint32_t> parse_ipv4(std::string_view text) {
    // inet_pton takes exactly four decimal parts (no shorthand, no octal), unlike inet_aton.
    const std::string s(text);
    in_addr a{};
    if (inet_pton(AF_INET, s.c_str(), &a) != 1) return std::nullopt;
    return ntohl(a.s_addr);
}

std::string format_ipv4(uint32_t a) {
    return fmt::format("{}.{}.{}.{}", a >> 24, a >> 16 & 0xFF, a >> 8 & 0xFF, a & 0xFF);
}

std::optional<Ipv4Net> parse_ipv4_net(std::string_view text) {
    const size_t slash = text.find('/');
    const std::optional<uint32_t> addr = parse_ipv4(text.substr(0, slash));
    if (!addr) return std::nullopt;
    unsigned len = 32;
    if (slash != std::string_view::npos) {
        const std::string_view digits = text.substr(slash + 1);
        if (digits.empty() || digits.size() > 2 || (digits.size() == 2 && digits[0] == '0'))
            return std::nullopt;
        len = 0;
        for (char c : digits) {
            if (c < '0' || c > '9') return std::nullopt;
            len = len * 10 + unsigned(c - '0');
        }
        if (len > 32) return std::nullopt;
    }
    const uint32_t mask = len == 0 ? 0 : ~uint32_t(0) << (32 - len);
    if (*addr & ~mask) return std::nullopt;
    return Ipv4Net{*addr, mask};
}

std::string format_ipv4_net(const Ipv4Net& net) {
    return fmt::format("{}/{}", format_ipv4(net.addr), __builtin_popcount(net.mask));
}

std::optional<MacAddr> parse_mac(std::string_view text) {
    // Strictly xx:xx:xx:xx:xx:xx (sscanf would take signs, spaces and single digits).
    if (text.size() != 17) return std::nullopt;
    MacAddr mac{};
    for (size_t i = 0; i < 6; ++i) {
        if (i > 0 && text[3 * i - 1] != ':') return std::nullopt;
        const int hi = hex_digit(text[3 * i]), lo = hex_digit(text[3 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        mac[i] = uint8_t(hi << 4 | lo);
    }
    return mac;
}

std::string format_mac(const MacAddr& m) {
    return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4],
                       m[5]);
}

}  // namespace linerate::pkt
