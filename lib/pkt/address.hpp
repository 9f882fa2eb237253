#pragma once
// IPv4 and MAC addresses as users write them on command lines and read them in JSON: the one
// parser and formatter of each, strict (what inet_pton takes for IPv4, xx:xx:xx:xx:xx:xx for MACs).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pkt/build.hpp"  // MacAddr

namespace linerate::pkt {

// "a.b.c.d": four decimal parts 0..255, no shorthand, no leading zeros; host byte order.
std::optional<uint32_t> parse_ipv4(std::string_view text);
std::string format_ipv4(uint32_t addr);

// "xx:xx:xx:xx:xx:xx", hex digits in either case.
std::optional<MacAddr> parse_mac(std::string_view text);
std::string format_mac(const MacAddr& mac);

// An IPv4 network "a.b.c.d/len" (len 0..32; a bare address is /32), host byte order. The
// address bits beyond the prefix must be 0 ("10.0.0.1/8" is refused: a typo more often than
// not).
struct Ipv4Net {
    uint32_t addr = 0;
    uint32_t mask = 0;
    bool contains(uint32_t a) const { return (a & mask) == addr; }
};
std::optional<Ipv4Net> parse_ipv4_net(std::string_view text);
std::string format_ipv4_net(const Ipv4Net& net);

// The sources a service takes (--allow CIDR[,...]); empty: none listed.
struct Ipv4AllowList {
    std::vector<Ipv4Net> nets;
    bool empty() const { return nets.empty(); }
    bool contains(uint32_t a) const {
        for (const Ipv4Net& n : nets)
            if (n.contains(a)) return true;
        return false;
    }
};

}  // namespace linerate::pkt
