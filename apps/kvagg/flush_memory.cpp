#include "kvagg/flush_memory.hpp"

namespace linerate::kvagg {

const FlushMemory::Frames* FlushMemory::repeat_of(uint32_t stream, uint64_t seq) const {
    const auto it = last_reset_.find(stream);
    return it != last_reset_.end() && it->second.first == seq ? &it->second.second : nullptr;
}

bool FlushMemory::older_than_last(uint32_t stream, uint64_t seq) const {
    const auto it = last_reset_.find(stream);
    return it != last_reset_.end() && seq < it->second.first;
}

void FlushMemory::remember(uint32_t stream, uint64_t seq, const Frames& frames) {
    if (last_reset_.size() >= kStreams) last_reset_.erase(last_reset_.begin());
    last_reset_[stream] = {seq, frames};
}

}  // namespace linerate::kvagg
