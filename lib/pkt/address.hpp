#pragma once
// IPv4 and MAC addresses as users write them on command lines and read them in JSON: the one
// parser and formatter of each, strict (what inet_pton takes for IPv4, xx:xx:xx:xx:xx:xx for MACs).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "pkt/build.hpp"  // MacAddr

namespace linerate::pkt {

// "a.b.c.d": four decimal parts 0..255, no shorthand, no leading zeros; host byte order.
std::optional<uint32_t> parse_ipv4(std::string_view text);
std::string format_ipv4(uint32_t addr);

// "xx:xx:xx:xx:xx:xx", hex digits in either case.
std::optional<MacAddr> parse_mac(std::string_view text);
std::string format_mac(const MacAddr& mac);

}  // namespace linerate::pkt
