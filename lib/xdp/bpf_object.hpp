#pragma once
// Where the XDP programs' BPF objects are found, whatever the program family (lib/xdp/<family>/).
// Plain C++, no EAL.
#include <string>

namespace linerate::xdp {

// The path of a BPF object built from lib/xdp (e.g. "steer.bpf.o"): next to the executable, in
// the install layout relative to it (bin/../lib/.../linerate/bpf), else in the build tree; ""
// when none has it.
std::string find_bpf_object(const std::string& name);

}  // namespace linerate::xdp
