#pragma once
// The figures of each region, measured on the runtime's workers (lib/worker: one per EAL worker
// lcore, pinned), with a progress line on stderr. Needs the EAL.
#include <string>
#include <vector>

#include "regions/options.hpp"
#include "regions/region_report.hpp"

namespace linerate::regions {

// `given[i]` is how the user named `resolved.regions[i]`. Throws std::runtime_error when a
// region cannot hold even the smallest buffer.
Report measure(const Resolved& resolved, const std::vector<std::string>& given);

// The EAL args linerate-regions runs with when the user gave none: every CPU a worker lcore,
// the main lcore (it only sleeps while they measure) floating over all of them; no PCI, no
// shared files, hugepages if the machine has free ones, else --no-huge with 1 GiB.
std::vector<std::string> default_eal_args();

}  // namespace linerate::regions
