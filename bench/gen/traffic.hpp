#pragma once
// gen's traffic model: the frames of every kind, made deterministically from a seed, with no EAL.
// The sender builds each frame with it straight into an mbuf, --write-pcap writes the same
// frames to a file, and the tests check them: one piece of code for all three.
//
// Flows (kvagg: streams) are the unit RSS spreads: flow f has UDP source port src_port + f.
// With W sending workers, worker w owns the flows f with f % W == w and cycles through them, so
// the frames of one flow come from one worker in order. Worker 0 of 1 is what a pcap holds.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gen/expected.hpp"
#include "gen/nfv_mix.hpp"
#include "gen/rng.hpp"
#include "gen/zipf.hpp"
#include "pkt/build.hpp"

namespace linerate::gen {

enum class Kind : uint8_t { udp, nfv_mix, kvagg, clocksync };

Kind parse_kind(const std::string& text);  // throws std::invalid_argument
const char* kind_name(Kind k);

inline constexpr uint32_t kFcsLen = 4;
inline constexpr uint32_t kMinFrameSize = 64;
inline constexpr uint32_t kMaxFrameSize = 9000;
// Most tuples a frame of kMaxFrameSize carries: (9000 - 4 - 64) / 16.
inline constexpr uint32_t kMaxTuples = (kMaxFrameSize - kFcsLen - 64) / 16;

struct TrafficConfig {
    Kind kind = Kind::udp;
    // udp, nfv-mix: frame size on the wire including the 4-byte FCS, as Pktgen-DPDK and
    // RFC 2544 count it; the frame gen builds is 4 bytes shorter (the NIC appends the FCS).
    uint32_t frame_size = 64;
    uint32_t flows = 64;  // udp, nfv-mix, clocksync: source ports src_port .. src_port+flows-1
    uint16_t src_port = 1024;
    uint16_t dst_port = 0;  // 0: the kind's default (udp/nfv-mix 9, kvagg 9000, clocksync 9001)
    pkt::MacAddr src_mac{0x02, 0, 0, 0, 0, 0x01};
    pkt::MacAddr dst_mac{0x02, 0, 0, 0, 0, 0x02};
    uint32_t src_ip = 0xC0A80001;  // 192.168.0.1
    uint32_t dst_ip = 0xC0A80002;  // 192.168.0.2
    uint64_t seed = 1;
    // nfv-mix: share of frames of each bad class (index i is bad_class(i)); the rest is valid.
    std::array<double, kBadClassCount> bad{};
    // kvagg
    uint32_t tuples = 32;  // per frame
    uint64_t keys = 1024;  // distinct keys 0 .. keys-1
    DistSpec dist;
    uint32_t streams = 16;  // stream ids 0 .. streams-1, source port src_port + stream id
    double dup_share = 0;
    double malformed_share = 0;
    uint64_t value_min = 1;
    uint64_t value_max = 100;
    bool track_expected = false;  // keep the per-key sums of what is generated

    // Throws std::invalid_argument naming the option at fault.
    void validate() const;
    uint16_t udp_dst_port() const;
    // Flows (udp, nfv-mix, clocksync) or streams (kvagg).
    uint32_t flow_count() const { return kind == Kind::kvagg ? streams : flows; }
    // Bytes of a normal frame (without FCS); every frame is at most this long.
    size_t frame_len() const;
};

struct FrameInfo {
    uint32_t len = 0;
    FrameClass cls = FrameClass::normal;
    // Expected back from the device under test: a stamped udp/nfv-mix frame or a clocksync
    // request. The sender writes its TX time into these right before transmitting.
    bool expects_return = false;
};

// What every worker's generator shares, built once: the flows' header templates and the key
// distribution (a Zipf table can be large).
class TrafficPlan {
  public:
    explicit TrafficPlan(TrafficConfig config);  // validates; throws std::invalid_argument

    const TrafficConfig& config() const { return config_; }
    size_t frame_len() const { return frame_len_; }
    const KeyDist& keys() const { return keys_; }
    pkt::UdpFrameSpec flow_spec(uint32_t flow) const;
    // The 42 bytes of Ethernet + IPv4 + UDP of a normal frame of `flow`.
    const uint8_t* header(uint32_t flow) const { return headers_.data() + size_t(flow) * 42; }
    // nfv-mix: which class a 64-bit random number picks; cumulative thresholds.
    const std::array<uint64_t, kBadClassCount>& bad_thresholds() const { return bad_cum_; }
    uint64_t dup_threshold() const { return dup_cum_; }
    uint64_t malformed_threshold() const { return mal_cum_; }

  private:
    TrafficConfig config_;
    size_t frame_len_;
    KeyDist keys_;
    std::vector<uint8_t> headers_;
    std::array<uint64_t, kBadClassCount> bad_cum_{};
    uint64_t dup_cum_ = 0;
    uint64_t mal_cum_ = 0;
};

class Traffic {
  public:
    // Worker `worker` of `workers`; throws std::invalid_argument when there are fewer flows
    // (kvagg: streams) than workers. The plan must outlive the generator.
    explicit Traffic(const TrafficPlan& plan, unsigned worker = 0, unsigned workers = 1);

    // Writes the next frame at `dst` (room for plan.frame_len() bytes) and says what it is.
    FrameInfo next(uint8_t* dst);

    // The frame built by next() was not sent after all: its tuples leave the expected sums.
    void unsend(const uint8_t* frame, const FrameInfo& info);

    // Writes the TX time into a frame that expects a return: the stamp's TSC (udp, nfv-mix) or
    // the clocksync request's t1 in ns.
    void stamp_tx(uint8_t* frame, uint64_t tsc, uint64_t ns) const;

    const ExpectedSums& expected() const { return expected_; }
    uint64_t frames() const { return frames_; }
    const TrafficPlan& plan() const { return plan_; }

  private:
    uint32_t next_flow();
    FrameInfo next_udp(uint8_t* dst);
    FrameInfo next_nfv(uint8_t* dst);
    FrameInfo next_kv(uint8_t* dst);
    FrameInfo next_cs(uint8_t* dst);
    void fill_tuples(uint8_t* dst, uint32_t n, bool count);

    const TrafficPlan& plan_;
    const TrafficConfig& cfg_;
    Rng rng_;
    std::vector<uint32_t> flows_;  // the flows (streams) this worker owns
    size_t flow_pos_ = 0;
    std::vector<uint64_t> stream_seq_;  // kvagg: next sequence number, per owned stream
    uint64_t seq_ = 0;                  // stamp / clocksync sequence number
    uint64_t frames_ = 0;
    uint64_t value_span_;  // value_max - value_min
    ExpectedSums expected_;
    std::vector<uint8_t> last_;  // kvagg: the last aggregatable frame, what a duplicate repeats
    size_t last_len_ = 0;
};

}  // namespace linerate::gen
