#pragma once
// A kvagg trace for the app's integration tests: frames of every verdict made with the kernel's
// encoder, and the expected per-key sums and counters computed independently (a std::map and
// the rules of docs/wire-formats.md), not with the app's own table or duplicate filter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kvagg/kv_wire.hpp"
#include "pcapio/pcap_file.hpp"
#include "pkt/build.hpp"

namespace linerate::kvagg::test {

struct TraceSpec {
    unsigned seed = 1;
    unsigned frames = 3000;
    uint32_t streams = 4;         // ids first_stream .. first_stream + streams - 1
    uint32_t first_stream = 0;    // so two traces can hold different streams
    uint64_t dup_window = 256;    // what kvagg runs with (--dup-window): sets stale frames
    uint64_t dense_keys = 5000;   // keys 0 .. dense_keys-1 ...
    bool sparse_keys = true;      // ... and now and then any u64 (0 and ~0 too): hash mode only
    unsigned max_tuples = 89;     // per good frame, 0 .. max_tuples
    bool extras = true;           // malformed, not-kvagg, stale, extra-stream frames too
    uint32_t extra_stream = 999;  // a stream past --max-streams = streams (too_many_streams)
};

struct Expected {
    std::map<uint64_t, uint64_t> sums;
    uint64_t sent_sum = 0;  // wrapping sum of every aggregated tuple's value
    uint64_t good = 0, tuples = 0, duplicate = 0, stale = 0, too_many_streams = 0;
    uint64_t malformed = 0, bad_magic = 0, bad_version = 0, bad_op = 0, not_kvagg = 0;
    uint64_t dropped() const {
        return duplicate + stale + too_many_streams + malformed + bad_magic + bad_version + bad_op +
               not_kvagg;
    }
};

struct Trace {
    std::vector<pcapio::Frame> frames;
    Expected expected;
};

using Dump = std::map<uint64_t, uint64_t>;

// Reads kvagg's --dump, checking the format on the way: `key,value` decimal, strictly sorted
// by key.
inline Dump read_dump(const std::string& path) {
    Dump d;
    std::ifstream in(path);
    std::string line;
    bool first = true;
    uint64_t last = 0;
    while (std::getline(in, line)) {
        const size_t comma = line.find(',');
        EXPECT_NE(comma, std::string::npos) << line;
        const uint64_t key = std::stoull(line.substr(0, comma));
        const uint64_t value = std::stoull(line.substr(comma + 1));
        EXPECT_EQ(std::to_string(key) + "," + std::to_string(value), line);
        EXPECT_TRUE(first || key > last) << "not sorted at " << line;
        first = false;
        last = key;
        d[key] = value;
    }
    return d;
}

inline pkt::UdpFrameSpec kv_spec(uint32_t stream) {
    pkt::UdpFrameSpec s;
    s.dst_port = kKvDefaultPort;
    s.src_port = uint16_t(1024 + stream);
    return s;
}

inline Trace make_trace(const TraceSpec& spec) {
    std::mt19937_64 rng(spec.seed);
    Trace t;
    Expected& e = t.expected;
    struct Stream {
        uint64_t next = 0;
        uint64_t top = 0;  // highest sequence number accepted
        bool any = false;  // something accepted: the stream holds a duplicate-filter place
        std::vector<pcapio::Frame> sent;  // accepted frames, for duplicates
        pcapio::Frame held;               // sent later: reordered inside the window
        std::vector<KvTuple> held_tuples;
    };
    std::vector<Stream> streams(spec.streams);
    auto tuples_of = [&](unsigned n) {
        std::vector<KvTuple> v(n);
        for (KvTuple& tp : v) {
            tp.key = rng() % spec.dense_keys;
            if (spec.sparse_keys && rng() % 16 == 0) {
                const uint64_t specials[] = {0, ~0ull, rng()};
                tp.key = specials[rng() % 3];
            }
            tp.value = rng() % 4 == 0 ? rng() : rng() % 1000;  // wraps now and then
        }
        return v;
    };
    auto accept = [&](Stream& st, uint64_t seq, const std::vector<KvTuple>& tuples) {
        st.top = st.any ? std::max(st.top, seq) : seq;
        st.any = true;
        for (const KvTuple& tp : tuples) {
            e.sums[tp.key] += tp.value;
            e.sent_sum += tp.value;
        }
        e.tuples += tuples.size();
        ++e.good;
    };
    for (unsigned i = 0; i < spec.frames; ++i) {
        const uint32_t s = uint32_t(rng() % spec.streams);
        Stream& st = streams[s];
        const uint32_t id = spec.first_stream + s;
        unsigned kind = spec.extras ? unsigned(rng() % 100) : unsigned(rng() % 80);
        // A held frame goes out at most 32 sequence numbers late: well inside the window.
        if (!st.held.empty() &&
            st.next - pkt::load_be64(&st.held[kKvHeaderOffset + kKvSeqOff]) > 32)
            kind = 74;
        if (kind < 70) {  // good, in order
            auto tuples = tuples_of(unsigned(rng() % (spec.max_tuples + 1)));
            auto f = make_kv_frame(kv_spec(id), id, st.next, tuples);
            accept(st, st.next++, tuples);
            st.sent.push_back(f);
            t.frames.push_back(std::move(f));
        } else if (kind < 74) {  // duplicate of a recent accepted frame
            if (st.sent.empty()) continue;
            t.frames.push_back(
                st.sent[st.sent.size() - 1 - rng() % std::min<size_t>(st.sent.size(), 8)]);
            ++e.duplicate;
        } else if (kind < 78) {  // reordering: hold one back, send it a few frames later
            if (!st.held.empty()) {
                accept(st, pkt::load_be64(&st.held[kKvHeaderOffset + kKvSeqOff]), st.held_tuples);
                st.sent.push_back(st.held);
                t.frames.push_back(std::move(st.held));
                st.held.clear();
            } else {
                st.held_tuples = tuples_of(unsigned(rng() % 9));
                st.held = make_kv_frame(kv_spec(id), id, st.next++, st.held_tuples);
            }
        } else if (kind < 80) {  // a VLAN-tagged good frame
            auto tuples = tuples_of(unsigned(rng() % 5));
            auto f = make_kv_frame(kv_spec(id), id, st.next, tuples);
            const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x2A};
            f.insert(f.begin() + 12, tag, tag + 4);
            accept(st, st.next++, tuples);
            t.frames.push_back(std::move(f));
        } else if (kind < 83) {  // stale: one window behind the stream's top
            if (!st.any || st.top < spec.dup_window) continue;
            t.frames.push_back(
                make_kv_frame(kv_spec(id), id, st.top - spec.dup_window, tuples_of(3)));
            ++e.stale;
        } else if (kind < 85) {  // a stream past --max-streams, once every place is taken
            if (!std::all_of(streams.begin(), streams.end(), [](const Stream& x) { return x.any; }))
                continue;
            t.frames.push_back(make_kv_frame(kv_spec(spec.extra_stream), spec.extra_stream,
                                             rng() % 100, tuples_of(2)));
            ++e.too_many_streams;
        } else {  // refused by the parser; the sequence number is not consumed
            auto f = make_kv_frame(kv_spec(id), id, st.next, tuples_of(1 + rng() % 6));
            const size_t app = kKvHeaderOffset;
            switch (kind % 7) {
                case 0:  // claims one tuple more than it holds
                    pkt::store_be16(&f[app + kKvCountOff],
                                    uint16_t(pkt::load_be16(&f[app + kKvCountOff]) + 1));
                    ++e.malformed;
                    break;
                case 1:  // cut short: IPv4 total length beyond the frame
                    f.resize(f.size() - 5);
                    ++e.malformed;
                    break;
                case 2:
                    f[app + kKvMagicOff] = 0x4C;
                    ++e.bad_magic;
                    break;
                case 3:
                    f[app + kKvVersionOff] = 2;
                    ++e.bad_version;
                    break;
                case 4:
                    f[app + kKvOpOff] = 7;
                    ++e.bad_op;
                    break;
                case 5:  // another UDP port
                    pkt::store_be16(&f[36], 9001);
                    ++e.not_kvagg;
                    break;
                default:  // not IPv4 (ARP)
                    pkt::store_be16(&f[12], 0x0806);
                    ++e.not_kvagg;
                    break;
            }
            t.frames.push_back(std::move(f));
        }
    }
    return t;
}

}  // namespace linerate::kvagg::test
