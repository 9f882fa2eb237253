#include "gen/returns.hpp"

#include "clocksync/cs_wire.hpp"
#include "gen/stamp.hpp"
#include "pkt/bytes.hpp"

namespace linerate::gen {

ReturnTracker::ReturnTracker(const TrafficConfig& config, TscClock clock)
    : kind_(config.kind),
      src_port_(config.src_port),
      flows_(config.flow_count()),
      clock_(clock),
      high_(flows_, 0) {}

Return ReturnTracker::account(uint32_t flow, uint64_t seq, uint64_t rtt_ns) {
    latency_.record(rtt_ns);
    uint64_t& high = high_[flow];
    if (seq < high) return Return::reordered;
    high = seq + 1;
    return Return::in_order;
}

Return ReturnTracker::on_frame(const uint8_t* frame, size_t len, uint64_t now_tsc) {
    if (kind_ == Kind::clocksync) {
        // The master swaps the ports: the response goes to the request's source port.
        if (len < pkt::kUdpPayloadOffset) return Return::foreign;
        const uint16_t port = pkt::load_be16(frame + pkt::kEthHdrLen + pkt::kIpv4MinHdrLen + 2);
        const uint32_t flow = uint32_t(port - src_port_);
        if (flow >= flows_) return Return::foreign;
        const clocksync::CsPacket p = clocksync::parse_cs_packet(frame, len, port);
        if (!p.ok || p.type != clocksync::CsType::response) return Return::foreign;
        const uint64_t now = clock_.ns(now_tsc);
        return account(flow, p.seq, now >= p.t1 ? now - p.t1 : 0);
    }
    const Stamp s = read_stamp(frame, len);
    if (!s.valid) return Return::foreign;
    const uint32_t flow = uint32_t(s.src_port - src_port_);
    if (flow >= flows_) return Return::foreign;
    const uint64_t cycles = now_tsc >= s.tsc ? now_tsc - s.tsc : 0;
    return account(flow, s.seq, uint64_t(double(cycles) * clock_.ns_per_cycle));
}

}  // namespace linerate::gen
