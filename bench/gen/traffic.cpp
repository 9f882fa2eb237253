#include "gen/traffic.hpp"

#include <cmath>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "clocksync/cs_wire.hpp"
#include "gen/stamp.hpp"
#include "kvagg/kv_wire.hpp"
#include "pkt/bytes.hpp"
#include "pkt/headers.hpp"

namespace linerate::gen {

using namespace linerate::pkt;

namespace {
// The kinds' names (--kind, the JSON's "kind"), in Kind's order: one list for both directions.
constexpr const char* kKindNames[] = {"udp", "nfv-mix", "kvagg", "clocksync"};
static_assert(std::size(kKindNames) == size_t(Kind::clocksync) + 1, "a name for every Kind");
}  // namespace

Kind parse_kind(const std::string& text) {
    for (size_t i = 0; i < std::size(kKindNames); ++i)
        if (text == kKindNames[i]) return Kind(i);
    throw std::invalid_argument("bad kind '" + text + "' (want udp, nfv-mix, kvagg or clocksync)");
}

const char* kind_name(Kind k) {
    return size_t(k) < std::size(kKindNames) ? kKindNames[size_t(k)] : "?";
}

namespace {

void check(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
}

bool share_ok(double s) {
    return std::isfinite(s) && s >= 0 && s <= 1;
}

// A share (0..1) as a threshold on a uniform 64-bit random number.
uint64_t threshold(double share) {
    if (share <= 0) return 0;
    if (share >= 1) return ~uint64_t(0);
    return uint64_t(std::ldexp(share, 64));
}

}  // namespace

void TrafficConfig::validate() const {
    check(frame_size >= kMinFrameSize && frame_size <= kMaxFrameSize,
          "--size must be 64..9000 (bytes on the wire, with the FCS)");
    check(flows >= 1 && uint32_t(src_port) + flows - 1 <= 0xFFFF,
          "--flows must be >= 1 and --src-port + --flows - 1 <= 65535");
    double bad_sum = 0;
    for (size_t i = 0; i < kBadClassCount; ++i) {
        check(share_ok(bad[i]), std::string("--bad-") + kBadClassOptions[i] + " must be 0..1");
        bad_sum += bad[i];
    }
    check(bad_sum <= 1 + 1e-9, "the --bad shares add up to more than 1");
    check(tuples >= 1 && tuples <= kMaxTuples, "--tuples must be 1.." + std::to_string(kMaxTuples));
    check(keys >= 1, "--keys must be >= 1");
    check(!dist.zipf || keys <= KeyDist::kMaxZipfKeys,
          "--dist zipf supports up to " + std::to_string(KeyDist::kMaxZipfKeys) + " keys");
    check(streams >= 1 && uint32_t(src_port) + streams - 1 <= 0xFFFF,
          "--streams must be >= 1 and --src-port + --streams - 1 <= 65535");
    check(share_ok(dup_share), "--dup-share must be 0..1");
    check(share_ok(malformed_share), "--malformed-share must be 0..1");
    check(dup_share + malformed_share <= 1 + 1e-9,
          "--dup-share + --malformed-share must be at most 1");
    check(value_min <= value_max, "--value-min must not exceed --value-max");
}

uint16_t TrafficConfig::udp_dst_port() const {
    if (dst_port) return dst_port;
    switch (kind) {
        case Kind::kvagg:
            return kvagg::kKvDefaultPort;
        case Kind::clocksync:
            return clocksync::kCsUdpPort;
        default:
            return 9;  // discard
    }
}

size_t TrafficConfig::frame_len() const {
    switch (kind) {
        case Kind::kvagg:
            return kvagg::kv_frame_len(tuples);
        case Kind::clocksync:
            return clocksync::kCsFrameLen;
        default:
            return frame_size - kFcsLen;
    }
}

TrafficPlan::TrafficPlan(TrafficConfig config)
    : config_((config.validate(), std::move(config))),
      frame_len_(config_.frame_len()),
      keys_(config_.kind == Kind::kvagg ? config_.keys : 1, config_.dist) {
    const uint32_t n = config_.flow_count();
    headers_.resize(size_t(n) * kUdpPayloadOffset);
    uint8_t scratch[kUdpPayloadOffset];
    for (uint32_t f = 0; f < n; ++f) {
        // Lengths in the template are the normal frame's; classes that differ patch them.
        write_udp_headers(scratch, frame_len_, flow_spec(f));
        std::memcpy(headers_.data() + size_t(f) * kUdpPayloadOffset, scratch, sizeof scratch);
    }
    double cum = 0;
    for (size_t i = 0; i < kBadClassCount; ++i) {
        cum += config_.bad[i];
        bad_cum_[i] = threshold(cum);
    }
    dup_cum_ = threshold(config_.dup_share);
    mal_cum_ = threshold(config_.dup_share + config_.malformed_share);
}

UdpFrameSpec TrafficPlan::flow_spec(uint32_t flow) const {
    UdpFrameSpec s;
    s.dst_mac = config_.dst_mac;
    s.src_mac = config_.src_mac;
    s.src_ip = config_.src_ip;
    s.dst_ip = config_.dst_ip;
    s.src_port = uint16_t(config_.src_port + flow);
    s.dst_port = config_.udp_dst_port();
    return s;
}

Traffic::Traffic(const TrafficPlan& plan, unsigned worker, unsigned workers)
    : plan_(plan),
      cfg_(plan.config()),
      rng_(worker_seed(plan.config().seed, worker)),
      value_span_(plan.config().value_max - plan.config().value_min) {
    const uint32_t n = cfg_.flow_count();
    if (workers == 0 || worker >= workers) throw std::invalid_argument("bad worker index");
    if (n < workers)
        throw std::invalid_argument(
            std::string(cfg_.kind == Kind::kvagg ? "--streams " : "--flows ") + std::to_string(n) +
            " is fewer than the " + std::to_string(workers) +
            " sending workers (each worker needs flows of its own)");
    for (uint32_t f = worker; f < n; f += workers) flows_.push_back(f);
    if (cfg_.kind == Kind::kvagg) {
        stream_seq_.assign(flows_.size(), 0);
        if (cfg_.track_expected) expected_ = ExpectedSums(cfg_.keys);
        if (cfg_.dup_share > 0) last_.resize(plan.frame_len());
    }
}

uint32_t Traffic::next_flow() {
    const auto pos = uint32_t(flow_pos_);
    if (++flow_pos_ == flows_.size()) flow_pos_ = 0;
    return pos;
}

FrameInfo Traffic::next(uint8_t* dst) {
    ++frames_;
    switch (cfg_.kind) {
        case Kind::udp:
            return next_udp(dst);
        case Kind::nfv_mix:
            return next_nfv(dst);
        case Kind::kvagg:
            return next_kv(dst);
        case Kind::clocksync:
            return next_cs(dst);
    }
    return {};
}

FrameInfo Traffic::next_udp(uint8_t* dst) {
    const size_t len = plan_.frame_len();
    std::memcpy(dst, plan_.header(flows_[next_flow()]), kUdpPayloadOffset);
    std::memset(dst + kUdpPayloadOffset, 0, len - kUdpPayloadOffset);
    write_stamp(dst, seq_++, 0);
    return {uint32_t(len), FrameClass::normal, true};
}

FrameInfo Traffic::next_nfv(uint8_t* dst) {
    const uint64_t r = rng_.next();
    const auto& cum = plan_.bad_thresholds();
    size_t i = 0;
    while (i < kBadClassCount && r >= cum[i]) ++i;
    if (i == kBadClassCount) return next_udp(dst);
    // Bad frames carry no stamp: nothing should come back for them.
    const size_t len = plan_.frame_len();
    std::memcpy(dst, plan_.header(flows_[next_flow()]), kUdpPayloadOffset);
    std::memset(dst + kUdpPayloadOffset, 0, len - kUdpPayloadOffset);
    const FrameClass c = bad_class(i);
    return {uint32_t(make_bad(dst, len, c, rng_)), c, false};
}

void Traffic::fill_tuples(uint8_t* dst, uint32_t n, bool count) {
    uint64_t keys[kMaxTuples];
    plan_.keys().sample_n(rng_, keys, n);
    const bool track = count && expected_.enabled();
    if (track)
        for (uint32_t i = 0; i < n; ++i) expected_.prefetch(keys[i]);
    for (uint32_t i = 0; i < n; ++i, dst += kvagg::kKvTupleLen) {
        const uint64_t key = keys[i];
        const uint64_t value = value_span_ == ~uint64_t(0)
                                   ? rng_.next()
                                   : cfg_.value_min + rng_.below(value_span_ + 1);
        store_be64(dst, key);
        store_be64(dst + 8, value);
        if (track) expected_.add(key, value);
    }
}

FrameInfo Traffic::next_kv(uint8_t* dst) {
    const size_t len = plan_.frame_len();
    const uint64_t r = rng_.next();
    if (r < plan_.dup_threshold() && last_len_) {
        std::memcpy(dst, last_.data(), last_len_);
        return {uint32_t(last_len_), FrameClass::kv_duplicate, false};
    }
    const bool malformed = r >= plan_.dup_threshold() && r < plan_.malformed_threshold();
    const uint32_t pos = next_flow();
    std::memcpy(dst, plan_.header(flows_[pos]), kUdpPayloadOffset);
    kvagg::KvHeader h{
        .tuple_count = uint16_t(cfg_.tuples), .stream = flows_[pos], .seq = stream_seq_[pos]};
    if (malformed) {
        // One of the ways kvagg refuses a frame before it looks at the tuples.
        switch (rng_.below(4)) {
            case 0:
                h.magic = kvagg::kKvMagic ^ 0x0101;
                break;
            case 1:
                h.version = uint8_t(kvagg::kKvVersion + 1 + rng_.below(254));
                break;
            case 2:
                // Past the service ops (1-3), which kvagg would answer: 4..255.
                h.op = uint8_t(kvagg::kKvOpFlush + 1 + rng_.below(255 - kvagg::kKvOpFlush));
                break;
            default:
                h.tuple_count = uint16_t(cfg_.tuples + 1 + rng_.below(16));  // more than fit
                break;
        }
    }
    kvagg::write_kv_header(dst + kvagg::kKvHeaderOffset, h);
    fill_tuples(dst + kvagg::kKvTuplesOffset, cfg_.tuples, !malformed);
    if (malformed) return {uint32_t(len), FrameClass::kv_malformed, false};
    ++stream_seq_[pos];
    if (!last_.empty()) {
        std::memcpy(last_.data(), dst, len);
        last_len_ = len;
    }
    return {uint32_t(len), FrameClass::normal, false};
}

FrameInfo Traffic::next_cs(uint8_t* dst) {
    const uint32_t flow = flows_[next_flow()];
    const size_t len = clocksync::build_request(dst, clocksync::kCsFrameLen, plan_.flow_spec(flow),
                                                flow, seq_++, 0);
    return {uint32_t(len), FrameClass::normal, true};
}

void Traffic::unsend(const uint8_t* frame, const FrameInfo& info) {
    if (cfg_.kind != Kind::kvagg || info.cls != FrameClass::normal) return;
    // The last aggregatable frame is this one or a later one of the same burst, none of which
    // went out: a duplicate of it would be new to kvagg.
    last_len_ = 0;
    if (!expected_.enabled()) return;
    const uint8_t* t = frame + kvagg::kKvTuplesOffset;
    for (uint32_t i = 0; i < cfg_.tuples; ++i)
        expected_.remove(kvagg::kv_tuple_key(t, i), kvagg::kv_tuple_value(t, i));
}

void Traffic::stamp_tx(uint8_t* frame, uint64_t tsc, uint64_t ns) const {
    if (cfg_.kind == Kind::clocksync)
        store_be64(frame + kUdpPayloadOffset + clocksync::kCsOffT1, ns);
    else
        write_stamp_tsc(frame, tsc);
}

}  // namespace linerate::gen
