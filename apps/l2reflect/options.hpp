#pragma once
// l2reflect's command line beyond the common options: where kept frames go (ForwardChoice),
// where the kernel runs (DatapathChoice) and the memory work (MemoryWorkOptions), as one option
// group (cli::OptionGroup) with the check across them.
#include <CLI/CLI.hpp>

#include "l2reflect/memory_work_options.hpp"
#include "runtime/datapath_choice.hpp"
#include "runtime/forward_mode.hpp"

namespace linerate::l2reflect {

struct Options {
    ForwardChoice forward;
    DatapathChoice datapath;
    MemoryWorkOptions memory;

    void add(CLI::App& app);
    // Each group's check, then memory work with the XDP datapath (the program answers in the
    // kernel: no poll loop reads the frames). Throws std::invalid_argument with the line.
    void check() const;
};

}  // namespace linerate::l2reflect
