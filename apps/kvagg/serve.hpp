#pragma once
// kvagg running as a service around the Runtime: the aggregation tables in their region (one per
// worker, or one shared), a kernel per worker, the control thread that answers clients (read,
// status, flush), the /linerate/kvagg/key telemetry command, the dump, the summary and the JSON
// figures. main.cpp only wires.
#include "kvagg/options.hpp"
#include "runtime/runtime.hpp"

namespace linerate::kvagg {

// --aggbuf resolved with the aliases the Runtime will know, before the EAL starts: a typo gets
// one line and exit 2 like every other bad value.
void precheck_aggbuf(const cli::CommonOptions& common, const Options& o);

// Aggregates on the started runtime until a stop; the process exit status.
int serve(Runtime& runtime, const Options& o);

}  // namespace linerate::kvagg
