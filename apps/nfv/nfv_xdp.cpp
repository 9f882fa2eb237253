#include "nfv/nfv_xdp.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "nfv/xdp/nfv_abi.h"

namespace linerate::nfv {

namespace {

static_assert(sizeof(nfv_src_filter) <= sizeof(dp_config::app),
              "nfv's source filter outgrows dp_config.app");

void add_addresses(xdp::DatapathProgram& program, const char* map,
                   const std::vector<uint32_t>& addresses) {
    if (addresses.size() > NFV_MAX_ADDRESSES)
        throw std::runtime_error(fmt::format("{} addresses for {}: the XDP program holds {}",
                                             addresses.size(), map, NFV_MAX_ADDRESSES));
    const uint8_t one = 1;
    for (uint32_t a : addresses) program.update_map(map, &a, &one);
}

nfv_src_filter source_filter(const std::vector<uint32_t>& bad_sources, bool good_destinations) {
    nfv_src_filter filter{};
    const AddressRange clear = widest_range_without(bad_sources);
    filter.clear_first = clear.first;
    filter.clear_span = clear.last - clear.first;
    filter.good_dst = good_destinations;
    for (uint32_t a : bad_sources) {
        const uint32_t bit = nfv_src_filter_bit(a);
        filter.bits[bit / 64] |= uint64_t(1) << (bit % 64);
    }
    return filter;
}

}  // namespace

AddressRange widest_range_without(std::vector<uint32_t> addresses) {
    std::sort(addresses.begin(), addresses.end());
    // The gaps below the first address, between neighbours and above the last, in 64 bits (the
    // last gap can be the whole 2^32). Never all empty: the sets hold NFV_MAX_ADDRESSES.
    uint64_t from = 0, best_first = 0, best_size = 0;
    for (uint32_t a : addresses) {
        if (a >= from && a - from > best_size) best_first = from, best_size = a - from;
        from = uint64_t(a) + 1;
    }
    if ((uint64_t(1) << 32) - from > best_size)
        best_first = from, best_size = (uint64_t(1) << 32) - from;
    return {uint32_t(best_first), uint32_t(best_first + best_size - 1)};
}

void set_xdp_sources(xdp::DatapathProgram& program, const std::vector<uint32_t>& bad_src,
                     const std::vector<uint32_t>& good_dst) {
    add_addresses(program, NFV_BAD_SRC_MAP, bad_src);
    add_addresses(program, NFV_GOOD_DST_MAP, good_dst);
    const nfv_src_filter filter = source_filter(bad_src, !good_dst.empty());
    program.set_app_config(&filter, sizeof filter);
}

}  // namespace linerate::nfv
