#pragma once
// What each clocksync role runs on the started runtime (the master's answers, the client's
// session and sinks), and what the client makes before the EAL starts.
#include <memory>

#include "clocksync/client_session.hpp"
#include "clocksync/clockbound.hpp"
#include "clocksync/local_clock.hpp"
#include "clocksync/options.hpp"
#include "runtime/runtime.hpp"

namespace linerate::clocksync {

// The client's session on its local clock, and --clockbound's writer.
struct ClientStart {
    LocalClock local;
    std::unique_ptr<ClientSession> session;
    std::unique_ptr<ClockBoundWriter> clockbound;
};

// Made before the EAL: a bad value (a period that rounds to 0 ns) or a --clockbound path that
// cannot be written is a usage error (one line, exit 2).
ClientStart start_client(const Options& cs);

// Answers requests until a stop.
int run_master(Runtime& runtime, const Options& cs);
// Runs the session on worker 0 (the others drain) until a stop, its report a runtime feature.
int run_client(Runtime& runtime, const Options& cs, ClientStart& start);

}  // namespace linerate::clocksync
