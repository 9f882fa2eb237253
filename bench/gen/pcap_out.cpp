#include "gen/pcap_out.hpp"

#include <vector>

#include "pcapio/pcap_file.hpp"

namespace linerate::gen {

PcapSummary write_traffic_pcap(const TrafficPlan& plan, uint64_t count, const std::string& path,
                               double pps) {
    PcapSummary s;
    pcapio::PcapWriter out(path);
    Traffic traffic(plan);
    std::vector<uint8_t> frame(plan.frame_len());
    for (uint64_t i = 0; i < count; ++i) {
        const FrameInfo info = traffic.next(frame.data());
        const auto ts = pps > 0 ? uint64_t(double(i) * 1e9 / pps) : 0;
        out.write({frame.data(), info.len}, ts);
        ++s.frames;
        s.bytes += info.len;
        s.expects_return += info.expects_return;
        ++s.classes[size_t(info.cls)];
    }
    s.expected = traffic.expected();
    return s;
}

}  // namespace linerate::gen
