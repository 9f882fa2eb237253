#pragma once
// One run of linerate-regions: measure (or read an earlier JSON), print, write, advise.
#include "cli/command_line.hpp"
#include "regions/options.hpp"

namespace linerate::regions {

// The exit status: 0, or 1 after one line on stderr (EAL, memory, files).
int run_session(const Options& options, const Resolved& resolved, const cli::SplitArgs& args);

}  // namespace linerate::regions
