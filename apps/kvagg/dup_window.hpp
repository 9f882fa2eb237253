#pragma once
// Duplicate detection per stream id: a sliding window of sequence numbers as a bitmap.
// With `top` the highest sequence accepted on the stream and W the window:
//   seq > top              -> accept, the window slides to end at seq (a jump >= W clears it)
//   top - W < seq <= top   -> duplicate if its bit is set, else accept (late but new)
//   seq <= top - W         -> stale (too old to tell; counted, not aggregated)
// A new stream starts with top = 0 and nothing seen, so its first packet is always accepted.
//
// Streams live in a small open-addressing map sized at construction for max_streams; all memory
// is allocated there, none per packet. A packet of a new stream beyond max_streams is refused
// (too_many_streams, not aggregated): aggregating it without duplicate protection could count a
// retransmission twice, and dropping it keeps the refusal visible.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace linerate::kvagg {

enum class SeqVerdict : uint8_t { accept, duplicate, stale, too_many_streams };

// One stream's window as the status op reports it. Sequence numbers start at 1: `missing` are
// the numbers in [window_low, top] not received, lowest first.
struct StreamState {
    uint64_t top = 0;               // highest sequence number accepted
    uint64_t window_low = 1;        // lowest number still inside the window (older ones: stale)
    uint64_t gaps = 0;              // numbers in [window_low, top] not received
    uint64_t duplicates = 0;        // packets refused as duplicates
    uint64_t stale = 0;             // packets refused as stale
    std::vector<uint64_t> missing;  // the first of the gaps, at most the number asked for
};

// Every stream's gaps so far (see DupFilter).
struct SeqGaps {
    uint64_t opened = 0;  // sequence numbers jumped over
    uint64_t filled = 0;  // of those, accepted late

    SeqGaps& operator+=(const SeqGaps& o) {
        opened += o.opened;
        filled += o.filled;
        return *this;
    }
};

class DupFilter {
  public:
    static constexpr uint64_t kDefaultWindow = 65536;
    static constexpr uint32_t kDefaultMaxStreams = 256;

    // window: 0 turns detection off (everything accepted, no stream state); otherwise a power of
    // two >= 64. max_streams >= 1. Throws std::invalid_argument otherwise. Memory: max_streams x
    // window / 8 bytes of bitmap (256 streams x 65536 -> 2 MiB).
    explicit DupFilter(uint64_t window = kDefaultWindow, uint32_t max_streams = kDefaultMaxStreams);

    // Classifies (stream, seq) and records it when accepted. Inline for the common case, the
    // next sequence number of a known stream (a call with its register saves cost a third of
    // the per-packet work at 1 tuple per packet); the rest is out of line.
    SeqVerdict check(uint32_t stream, uint64_t seq) {
        if (window_ == 0) return SeqVerdict::accept;
        Entry* e = find(stream);
        if (e == nullptr) [[unlikely]]
            return check_new(stream, seq);
        if (seq > e->top && seq - e->top == 1) [[likely]] {
            // Its bit is the only one the window slides over: set it.
            e->top = seq;
            bitmap(*e)[(seq & (window_ - 1)) >> 6] |= uint64_t(1) << (seq & 63);
            return SeqVerdict::accept;
        }
        return check_known(*e, seq);
    }

    // The stream's state (nullopt: never seen, or detection off), with up to max_missing gaps.
    std::optional<StreamState> state(uint32_t stream, size_t max_missing) const;

    uint64_t window() const { return window_; }
    uint32_t max_streams() const { return max_streams_; }
    uint32_t streams() const { return streams_; }  // distinct streams tracked so far
    const SeqGaps& gaps() const { return gaps_; }

    // One tracked stream as --state saves it (kv_state.hpp): its window's words, window / 64 of
    // them, bit (seq mod window) set when seq was accepted.
    struct StreamImage {
        uint32_t id = 0;
        uint64_t top = 0, duplicates = 0, stale = 0;
        std::span<const uint64_t> words;
    };
    // Every tracked stream, in the order they were first seen (restore() in that order gives
    // the same filter).
    std::vector<StreamImage> images() const;
    // Tracks a stream as saved; false (nothing changed) when max_streams are tracked, the id is
    // tracked already, detection is off or the words are not window / 64.
    bool restore(const StreamImage& s);

  private:
    struct Entry {
        uint32_t id;
        uint32_t bitmap_plus1;  // 0: empty map slot
        uint64_t top;
    };
    static size_t slot_of(uint32_t stream) {
        return size_t((stream * 0x9E3779B97F4A7C15ull) >> 32);
    }
    // The stream's entry, or nullptr if it has none yet.
    Entry* find(uint32_t stream) {
        Entry& last = map_[last_];
        if (last.bitmap_plus1 != 0 && last.id == stream) return &last;
        for (size_t i = slot_of(stream) & map_mask_;; i = (i + 1) & map_mask_) {
            Entry& e = map_[i];
            if (e.bitmap_plus1 == 0) return nullptr;
            if (e.id == stream) {
                last_ = i;
                return &e;
            }
        }
    }
    SeqVerdict check_new(uint32_t stream, uint64_t seq);
    SeqVerdict check_known(Entry& e, uint64_t seq);
    uint64_t* bitmap(const Entry& e) { return bits_.data() + size_t(e.bitmap_plus1 - 1) * words_; }
    const Entry* find_const(uint32_t stream) const;
    void clear_bits(uint64_t* words, uint64_t first, uint64_t count) const;

    uint64_t window_;
    uint64_t words_;  // bitmap words per stream
    uint32_t max_streams_;
    uint32_t streams_ = 0;
    size_t map_mask_ = 0;
    size_t last_ = 0;  // map index of the last stream seen: consecutive packets mostly share one
    SeqGaps gaps_;
    std::vector<Entry> map_;
    std::vector<uint64_t> bits_;
    // Per stream (bitmap index): refusals, counted off the accept path.
    struct Refusals {
        uint64_t duplicates = 0, stale = 0;
    };
    std::vector<Refusals> refusals_;
};

}  // namespace linerate::kvagg
