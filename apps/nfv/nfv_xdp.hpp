#pragma once
// nfv's XDP program's user side (apps/nfv/xdp/nfv.bpf.c, ABI apps/nfv/xdp/nfv_abi.h): the address
// sets into its maps and the source filter in front of them into dp_config.app, through
// DatapathProgram's generic update_map and set_app_config. Plain libbpf, no EAL.
#include <cstdint>
#include <vector>

#include "xdp/datapath/datapath_program.hpp"

namespace linerate::nfv {

// An inclusive range of IPv4 addresses (host order).
struct AddressRange {
    uint32_t first = 0, last = 0;
    bool operator==(const AddressRange&) const = default;
};
// The widest range holding none of `addresses` (the first such, on a tie): the XDP program asks
// no set for a source inside it (nfv_src_filter). `addresses` holds fewer than 2^32.
AddressRange widest_range_without(std::vector<uint32_t> addresses);

// The address sets (host order) into `program` (nfv.bpf.o): the bad sources into their map and
// the filter in front of it, the good destinations into theirs. Throws.
void set_xdp_sources(xdp::DatapathProgram& program, const std::vector<uint32_t>& bad_src,
                     const std::vector<uint32_t>& good_dst);

}  // namespace linerate::nfv
