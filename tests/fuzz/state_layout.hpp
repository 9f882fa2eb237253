#pragma once
// The options the state_load fuzz target decodes with, small enough that mutations reach every
// record: 64 keys (128 slots), a 64-number window, 4 streams, 2 workers. Its seeds in
// tests/fuzz/corpus/state_load are files of this layout (kv_state_test checks they decode).
#include "kvagg/kv_state.hpp"

namespace linerate::kvagg::test {

inline StateLayout fuzz_state_layout() {
    return {.keys = 64,
            .index = IndexMode::hash,
            .probe_limit = 64,
            .dup_window = 64,
            .max_streams = 4,
            .workers = 2,
            .slots = 128};
}

}  // namespace linerate::kvagg::test
