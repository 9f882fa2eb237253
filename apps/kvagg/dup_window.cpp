#include "kvagg/dup_window.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace linerate::kvagg {

DupFilter::DupFilter(uint64_t window, uint32_t max_streams)
    : window_(window), words_(window / 64), max_streams_(max_streams) {
    if (window != 0 && (window < 64 || !std::has_single_bit(window)))
        throw std::invalid_argument("duplicate window must be 0 or a power of two >= 64");
    if (max_streams == 0) throw std::invalid_argument("max streams must be >= 1");
    if (window == 0) return;
    // Load <= 1/2 keeps probes short; every probe ends at an empty slot.
    const size_t slots = std::bit_ceil(size_t(max_streams) * 2);
    map_.assign(slots, Entry{0, 0, 0});
    map_mask_ = slots - 1;
    bits_.assign(size_t(max_streams) * words_, 0);
    refusals_.assign(max_streams, Refusals{});
}

// A stream seen for the first time: a map entry (index, not pointer, in last_, so copies of a
// filter stay independent) unless max_streams are tracked already.
SeqVerdict DupFilter::check_new(uint32_t stream, uint64_t seq) {
    if (streams_ == max_streams_) return SeqVerdict::too_many_streams;
    size_t i = slot_of(stream) & map_mask_;
    while (map_[i].bitmap_plus1 != 0) i = (i + 1) & map_mask_;
    map_[i] = {stream, ++streams_, 0};
    last_ = i;
    return check_known(map_[i], seq);
}

// Clears the bits of `count` (< window) sequence numbers starting at `first`, wrapping.
void DupFilter::clear_bits(uint64_t* words, uint64_t first, uint64_t count) const {
    uint64_t pos = first & (window_ - 1);
    while (count) {
        const uint64_t bit = pos & 63;
        const uint64_t n = std::min<uint64_t>(count, 64 - bit);
        const uint64_t mask = n == 64 ? ~0ull : ((uint64_t(1) << n) - 1) << bit;
        words[pos >> 6] &= ~mask;
        count -= n;
        pos = (pos + n) & (window_ - 1);
    }
}

SeqVerdict DupFilter::check_known(Entry& e, uint64_t seq) {
    uint64_t* words = bitmap(e);
    const uint64_t pos = seq & (window_ - 1);
    const uint64_t bit = uint64_t(1) << (pos & 63);
    // A new entry has top 0 and an empty bitmap: seq 0 or anything in [0, W) is simply "not seen".
    if (seq > e.top) {
        const uint64_t ahead = seq - e.top;
        gaps_.opened += ahead - 1;
        if (ahead >= window_)
            std::memset(words, 0, words_ * sizeof(uint64_t));
        else
            clear_bits(words, e.top + 1, ahead);
        e.top = seq;
        words[pos >> 6] |= bit;
        return SeqVerdict::accept;
    }
    Refusals& r = refusals_[e.bitmap_plus1 - 1];
    if (e.top - seq >= window_) {
        ++r.stale;
        return SeqVerdict::stale;
    }
    if (words[pos >> 6] & bit) {
        ++r.duplicates;
        return SeqVerdict::duplicate;
    }
    words[pos >> 6] |= bit;
    gaps_.filled += seq != 0;  // 0 precedes the numbering: never jumped over
    return SeqVerdict::accept;
}

const DupFilter::Entry* DupFilter::find_const(uint32_t stream) const {
    if (window_ == 0) return nullptr;
    for (size_t i = slot_of(stream) & map_mask_;; i = (i + 1) & map_mask_) {
        const Entry& e = map_[i];
        if (e.bitmap_plus1 == 0) return nullptr;
        if (e.id == stream) return &e;
    }
}

std::optional<StreamState> DupFilter::state(uint32_t stream, size_t max_missing) const {
    const Entry* e = find_const(stream);
    if (e == nullptr) return std::nullopt;
    const uint64_t* words = bits_.data() + size_t(e->bitmap_plus1 - 1) * words_;
    const Refusals& r = refusals_[e->bitmap_plus1 - 1];
    StreamState s{.top = e->top,
                  .window_low = e->top >= window_ ? e->top - window_ + 1 : 1,
                  .duplicates = r.duplicates,
                  .stale = r.stale};
    for (uint64_t seq = s.window_low; seq <= s.top && s.window_low <= s.top;) {
        const uint64_t pos = seq & (window_ - 1);
        const uint64_t w = words[pos >> 6] >> (pos & 63);
        const uint64_t n = std::min<uint64_t>(64 - (pos & 63), s.top - seq + 1);
        const uint64_t mask = n == 64 ? ~0ull : (uint64_t(1) << n) - 1;
        uint64_t absent = ~w & mask;
        s.gaps += uint64_t(std::popcount(absent));
        while (absent && s.missing.size() < max_missing) {
            s.missing.push_back(seq + uint64_t(std::countr_zero(absent)));
            absent &= absent - 1;
        }
        seq += n;
        if (seq == 0) break;  // wrapped at 2^64
    }
    return s;
}

std::vector<DupFilter::StreamImage> DupFilter::images() const {
    std::vector<StreamImage> out(streams_);
    for (const Entry& e : map_) {
        if (e.bitmap_plus1 == 0) continue;
        const size_t b = e.bitmap_plus1 - 1;
        out[b] = {.id = e.id,
                  .top = e.top,
                  .duplicates = refusals_[b].duplicates,
                  .stale = refusals_[b].stale,
                  .words = {bits_.data() + b * words_, size_t(words_)}};
    }
    return out;
}

bool DupFilter::restore(const StreamImage& s) {
    if (window_ == 0 || streams_ == max_streams_ || s.words.size() != words_ || find(s.id))
        return false;
    size_t i = slot_of(s.id) & map_mask_;
    while (map_[i].bitmap_plus1 != 0) i = (i + 1) & map_mask_;
    map_[i] = {s.id, ++streams_, s.top};
    const size_t b = streams_ - 1;
    std::copy(s.words.begin(), s.words.end(), bits_.begin() + ptrdiff_t(b * words_));
    refusals_[b] = {s.duplicates, s.stale};
    return true;
}

}  // namespace linerate::kvagg
