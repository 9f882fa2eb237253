#include "kvagg/kv_control.hpp"

#include "kvagg/agg_merge.hpp"

#include <algorithm>
#include <stdexcept>

namespace linerate::kvagg {

using pkt::store_be16;
using pkt::store_be32;
using pkt::store_be64;

StatusReply merge_status(std::span<const ControlJob> parts, bool window_on, size_t max_missing) {
    StatusReply s;
    if (!window_on) {
        s.flags = kKvStatusNoWindow;
        return s;
    }
    unsigned holders = 0;
    for (const ControlJob& p : parts) {
        if (!p.state) continue;
        ++holders;
        // The stream lives on one worker when RSS pins it; otherwise report the worker with the
        // highest sequence number and flag the split, the refusals of all of them.
        if (holders == 1 || p.state->top > s.state.top) {
            const uint64_t dups = s.state.duplicates, stale = s.state.stale;
            s.state = *p.state;
            s.state.duplicates = dups;
            s.state.stale = stale;
        }
        s.state.duplicates += p.state->duplicates;
        s.state.stale += p.state->stale;
    }
    if (holders) s.flags |= kKvStatusKnown;
    if (holders > 1) s.flags |= kKvStatusSplit;
    if (s.state.missing.size() > max_missing) s.state.missing.resize(max_missing);
    return s;
}

std::vector<AggSlot> merge_sums(std::span<ControlJob> parts) {
    std::vector<AggSlot> all;
    for (ControlJob& p : parts) all.insert(all.end(), p.sums.begin(), p.sums.end());
    std::vector<AggSlot> out = sum_per_key(std::move(all));
    std::erase_if(out, [](const AggSlot& s) { return s.value == 0; });
    return out;
}

namespace {

// A response frame with its app header; the caller appends the body and finishes it.
std::vector<uint8_t> response_frame(const uint8_t* request, const KvRequest& r, size_t body_len,
                                    uint16_t count, uint32_t index_flags) {
    std::vector<uint8_t> f(r.app_offset + kKvHeaderLen + body_len);
    start_kv_response(f.data(), request, r);
    uint8_t* app = f.data() + r.app_offset;
    write_kv_header(app, {.tuple_count = count,
                          .stream = r.stream,
                          .seq = r.seq,
                          .op = uint8_t(r.op | kKvOpResponse)});
    store_be32(app + kKvReservedOff, index_flags);
    return f;
}

}  // namespace

std::vector<uint8_t> error_response(const uint8_t* request, const KvRequest& r, uint16_t code) {
    std::vector<uint8_t> f = response_frame(request, r, 0, code, kKvLastFrame | kKvError);
    finish_kv_response(f.data(), r, f.size());
    return f;
}

void sign_response(std::vector<uint8_t>& frame, const KvRequest& r, auth::MessageMac& mac) {
    const size_t payload = frame.size() - r.app_offset;
    frame.resize(frame.size() + auth::kTrailerLen);
    mac.sign(frame.data() + r.app_offset, payload);
    finish_kv_response(frame.data(), r, frame.size());
}

std::vector<std::vector<uint8_t>> tuple_responses(const uint8_t* request, const KvRequest& r,
                                                  std::span<const AggSlot> tuples,
                                                  size_t max_frame) {
    const size_t room = max_frame > r.app_offset + kKvHeaderLen
                            ? (max_frame - r.app_offset - kKvHeaderLen) / kKvTupleLen
                            : 0;
    const size_t per_frame = std::min<size_t>(room, 0xFFFF);
    if (per_frame == 0) throw std::invalid_argument("response frame cannot hold one tuple");
    std::vector<std::vector<uint8_t>> frames;
    size_t i = 0;
    do {
        const size_t n = std::min(per_frame, tuples.size() - i);
        const bool last = i + n == tuples.size();
        const uint32_t index = uint32_t(frames.size()) | (last ? kKvLastFrame : 0);
        std::vector<uint8_t> f = response_frame(request, r, n * kKvTupleLen, uint16_t(n), index);
        uint8_t* p = f.data() + r.app_offset + kKvHeaderLen;
        for (size_t k = 0; k < n; ++k, p += kKvTupleLen) {
            store_be64(p, tuples[i + k].key);
            store_be64(p + 8, tuples[i + k].value);
        }
        finish_kv_response(f.data(), r, f.size());
        frames.push_back(std::move(f));
        i += n;
    } while (i < tuples.size());
    return frames;
}

size_t status_capacity(const KvRequest& r, size_t max_frame) {
    const size_t fixed = r.app_offset + kKvHeaderLen + kKvStatusBodyLen + kKvStatusTailLen;
    return max_frame > fixed ? std::min<size_t>((max_frame - fixed) / 8, 0xFFFF) : 0;
}

std::vector<uint8_t> status_response(const uint8_t* request, const KvRequest& r,
                                     const StatusReply& s) {
    const StreamState& st = s.state;
    std::vector<uint8_t> f =
        response_frame(request, r, kKvStatusBodyLen + 8 * st.missing.size() + kKvStatusTailLen,
                       uint16_t(st.missing.size()), kKvLastFrame);
    uint8_t* p = f.data() + r.app_offset + kKvHeaderLen;
    for (uint64_t v : {s.flags, st.top, st.gaps, st.duplicates, st.stale, st.window_low}) {
        store_be64(p, v);
        p += 8;
    }
    for (uint64_t seq : st.missing) {
        store_be64(p, seq);
        p += 8;
    }
    // After the list, where clients of before --state never look.
    store_be64(p, s.durable_through);
    store_be64(p + 8, s.instance);
    finish_kv_response(f.data(), r, f.size());
    return f;
}

}  // namespace linerate::kvagg
