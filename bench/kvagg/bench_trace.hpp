#pragma once
// The in-memory trace every variant of kvagg_bench runs on: kvagg frames laid out like packet
// buffers (each at a 64-byte aligned address), and the same tuples decoded to host order for
// the baselines that skip packet parsing.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kvagg/kv_wire.hpp"

namespace linerate::kvagg::bench {

struct TraceConfig {
    unsigned tuples_per_frame = 32;
    uint64_t keys = 1 << 20;          // uniform over 0 .. keys-1
    size_t tuples = size_t(1) << 22;  // in all (fewer when max_frames caps the frame count)
    size_t max_frames = size_t(1) << 20;
    uint32_t streams = 16;  // round robin, sequence numbers 0, 1, ... per stream
    uint64_t seed = 1;
};

class Trace {
  public:
    explicit Trace(const TraceConfig& cfg);

    size_t frames() const { return offsets_.size(); }
    const uint8_t* frame(size_t i) const { return buf_.data() + offsets_[i]; }
    size_t frame_len() const { return frame_len_; }
    // Host-order tuples in frame order (what a parser would hand over).
    const std::vector<KvTuple>& tuples() const { return tuples_; }
    uint64_t value_sum() const { return value_sum_; }
    size_t frame_bytes() const { return buf_.size(); }

  private:
    std::vector<uint8_t> buf_;
    std::vector<size_t> offsets_;
    std::vector<KvTuple> tuples_;
    size_t frame_len_ = 0;
    uint64_t value_sum_ = 0;
};

}  // namespace linerate::kvagg::bench
