#include "nfv/check_ip_header.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <stdexcept>
#include <string>

#include "pkt/address.hpp"

namespace linerate::nfv {
namespace {

std::string_view trim(std::string_view s) {
    constexpr std::string_view kSpace = " \t";
    const size_t b = s.find_first_not_of(kSpace);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

// Comma-separated entries, each trimmed; a blank string has none, a blank entry is an error.
std::vector<std::string_view> split_list(std::string_view text, const char* what) {
    std::vector<std::string_view> out;
    if (trim(text).empty()) return out;
    const std::string_view whole = text;
    for (;;) {
        const size_t comma = text.find(',');
        const std::string_view entry = trim(text.substr(0, comma));
        if (entry.empty())
            throw std::invalid_argument("empty entry in " + std::string(what) + " list '" +
                                        std::string(whole) + "'");
        out.push_back(entry);
        if (comma == std::string_view::npos) return out;
        text.remove_prefix(comma + 1);
    }
}

uint32_t ipv4_or_throw(std::string_view text) {
    if (std::optional<uint32_t> a = pkt::parse_ipv4(text)) return *a;
    throw std::invalid_argument("bad IPv4 address '" + std::string(text) + "'");
}

void sort_unique(std::vector<uint32_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

std::vector<uint32_t> parse_ipv4_list(std::string_view text) {
    std::vector<uint32_t> out;
    for (std::string_view entry : split_list(text, "address")) out.push_back(ipv4_or_throw(entry));
    return out;
}

Interfaces parse_interfaces(std::string_view text) {
    Interfaces out;
    for (std::string_view entry : split_list(text, "interface")) {
        const size_t slash = entry.find('/');
        const uint32_t addr = ipv4_or_throw(entry.substr(0, slash));
        unsigned prefix = 32;  // a bare address is a /32 (Click's IPPrefixArg(true))
        if (slash != std::string_view::npos) {
            const std::string_view len = entry.substr(slash + 1);
            const auto [end, ec] = std::from_chars(len.data(), len.data() + len.size(), prefix);
            if (len.empty() || ec != std::errc() || end != len.data() + len.size() || prefix > 32)
                throw std::invalid_argument("bad prefix length in interface '" +
                                            std::string(entry) + "' (want 0..32)");
        }
        const uint32_t mask = prefix == 0 ? 0 : ~0u << (32 - prefix);
        // Click: (ip & mask) | ~mask, with no /31 or /32 exception: a /32's "broadcast" is the
        // address itself, which stays reachable as a good destination.
        out.bad_src.push_back((addr & mask) | ~mask);
        out.good_dst.push_back(addr);
    }
    out.bad_src.push_back(0x00000000u);
    out.bad_src.push_back(0xFFFFFFFFu);
    return out;
}

CheckIpHeader::CheckIpHeader(Config config)
    : verify_checksum_(config.verify_checksum),
      pass_non_ip_(config.pass_non_ip),
      bad_src_(std::move(config.bad_src)),
      good_dst_(std::move(config.good_dst)) {
    sort_unique(bad_src_);
    sort_unique(good_dst_);
    source_test_ = bad_src_ == std::vector<uint32_t>{0x00000000u, 0xFFFFFFFFu} ? SourceTest::rfc1812
                                                                               : SourceTest::filter;
    for (uint32_t addr : bad_src_) {
        uint8_t wire[4];
        pkt::store_be32(wire, addr);
        const uint32_t bit = filter_bit(wire32(wire));
        bad_src_filter_[bit / 64] |= uint64_t(1) << (bit % 64);
    }
}

// The check is apps/nfv/xdp/check_ipv4.h's, the one source the XDP program compiles too; the source
// test looks the addresses up in this object's sorted sets.
Result CheckIpHeader::check_full(const uint8_t* frame, size_t len) const {
    lr_ipv4_check r = lr_check_ipv4_header(frame, frame + len, verify_checksum_, pass_non_ip_);
    if (r.verdict == LR_IPV4_TEST_SOURCE)
        lr_ipv4_test_source(&r, std::binary_search(bad_src_.begin(), bad_src_.end(), r.src),
                            std::binary_search(good_dst_.begin(), good_dst_.end(), r.dst));
    return {verdict_of(lr_ipv4_verdict(r.verdict)), r.out_len};
}

}  // namespace linerate::nfv
