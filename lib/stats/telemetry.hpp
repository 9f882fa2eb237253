#pragma once
// rte_telemetry commands backed by C++ functions returning JSON, so dpdk-telemetry.py can read
// a running app (e.g. `/linerate/stats`). DPDK callbacks carry no user pointer; one dispatcher
// looks the command up.
#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace linerate::stats {

using TelemetryHandler = std::function<nlohmann::json(const std::string& params)>;

// Registers `command` (must start with '/'); returns false if the EAL refused it (e.g. telemetry
// disabled). Handlers run on the telemetry thread: they may only read. DPDK 22.11 nests
// containers one level deep only: a handler's object may hold objects or arrays of scalars,
// not deeper; key characters other than [A-Za-z0-9_./-] become '_'.
bool register_telemetry(const std::string& command, const std::string& help,
                        TelemetryHandler handler);

// Drops every handler (call before the objects they read go away).
void clear_telemetry();

}  // namespace linerate::stats
