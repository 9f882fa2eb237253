#include "nfv/first_bad_log.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>

namespace linerate::nfv {

std::string describe_bad_frame(const std::string& app, Verdict verdict, const uint8_t* frame,
                               size_t len) {
    std::string line =
        fmt::format("{}: first \"{}\" frame: {} bytes:", app, verdict_name(verdict), len);
    for (size_t i = 0; i < std::min(len, kLoggedBytes); ++i)
        line += fmt::format(" {:02x}", frame[i]);
    if (len > kLoggedBytes) line += " ...";
    return line;
}

bool FirstBadLog::record_first(Verdict verdict, const uint8_t* frame, size_t len) {
    // Two workers may race to the same reason: the one that sets the bit prints.
    if (seen_.fetch_or(bit(verdict), std::memory_order_relaxed) & bit(verdict)) return false;
    // One write per line, so lines of two workers never interleave.
    fmt::print(stderr, "{}\n", describe_bad_frame(app_, verdict, frame, len));
    return true;
}

}  // namespace linerate::nfv
