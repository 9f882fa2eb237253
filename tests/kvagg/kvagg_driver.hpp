#pragma once
// The command line of a kvagg scenario driver in Python (service_test.py, state_chaos_test.py):
// `python3 tests/kvagg/SCRIPT run` with the build's kvagg and kvagg_load, and the namespaces and
// kvagg's interface the C++ test made; the caller appends the scenario's own options.
#include <string>
#include <vector>

#include "support/netns.hpp"
#include "support/process.hpp"

namespace linerate::test {

inline std::vector<std::string> kvagg_driver_argv(const std::string& script, const NetNs& kv,
                                                  const NetNs& cl, const std::string& kv_if) {
    return {"/usr/bin/env",
            "python3",
            std::string(LINERATE_SOURCE_DIR) + "/tests/kvagg/" + script,
            "run",
            "--kvagg",
            binary("apps/kvagg/kvagg"),
            "--load",
            binary("examples/kvagg_load"),
            "--kv-ns",
            kv.name(),
            "--cl-ns",
            cl.name(),
            "--kv-if",
            kv_if};
}

}  // namespace linerate::test
