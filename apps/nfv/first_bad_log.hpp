#pragma once
// --verbose: one line for the first invalid frame of each reason, whichever worker sees it, and
// nothing for the frames after it (a flood of bad frames must not become a flood of lines).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "nfv/check_ip_header.hpp"

namespace linerate::nfv {

// `nfv: first "bad IP checksum" frame: 60 bytes: 02 00 ...` (at most kLoggedBytes bytes).
inline constexpr size_t kLoggedBytes = 64;
std::string describe_bad_frame(const std::string& app, Verdict verdict, const uint8_t* frame,
                               size_t len);

class FirstBadLog {
  public:
    explicit FirstBadLog(std::string app) : app_(std::move(app)) {}

    // Prints the frame on stderr if it is the first of its reason; true when it did.
    // Called on the drop path only; after the first frame it costs one relaxed load.
    bool record(Verdict verdict, const uint8_t* frame, size_t len) {
        if (seen_.load(std::memory_order_relaxed) & bit(verdict)) return false;
        return record_first(verdict, frame, len);
    }

  private:
    static uint32_t bit(Verdict v) { return 1u << static_cast<unsigned>(v); }
    // Out of line and cold: keeps formatting code out of the packet loop.
    [[gnu::cold]] bool record_first(Verdict verdict, const uint8_t* frame, size_t len);

    std::string app_;
    std::atomic<uint32_t> seen_{0};
    static_assert(kVerdictCount <= 32);
};

}  // namespace linerate::nfv
