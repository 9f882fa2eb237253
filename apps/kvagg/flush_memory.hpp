#pragma once
// What a flush with reset remembers so that a repeat is answered the same: a client resending
// after a lost answer (same stream and sequence number as that stream's last reset flush) gets
// the same frames again, and nothing is flushed twice. Kept in the --state file (ResetMemory).
// Control thread only.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kvagg/kv_state.hpp"

namespace linerate::kvagg {

class FlushMemory {
  public:
    using Frames = std::vector<std::vector<uint8_t>>;
    static constexpr size_t kStreams = 256;  // streams whose last reset flush is kept

    // The response frames of the stream's last reset flush when `seq` is its sequence number;
    // nullptr when this is no repeat.
    const Frames* repeat_of(uint32_t stream, uint64_t seq) const;
    // Whether `seq` is below the stream's last reset flush: an old request replayed (or one
    // overtaken by a later one), never executed.
    bool older_than_last(uint32_t stream, uint64_t seq) const;
    // The answer to the stream's newest reset flush; when kStreams are kept, the lowest stream
    // number is forgotten first.
    void remember(uint32_t stream, uint64_t seq, const Frames& frames);

    const ResetMemory& saved() const { return last_reset_; }
    void restore(const ResetMemory& loaded) { last_reset_ = loaded; }

  private:
    ResetMemory last_reset_;
};

}  // namespace linerate::kvagg
