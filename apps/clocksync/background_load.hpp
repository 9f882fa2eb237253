#pragma once
// Benchmark aid of the client (--background-pps): plain UDP frames sent on the probe port at a
// set rate, so the master's port carries background traffic while the session probes it. On
// one machine memif ports are point to point: the peer facing the master is the only sender
// that can load the master's port and the very queue the probes use, and sending from the
// session's own loop needs no extra core (three busy pollers on two cores measure the
// scheduler). The frames go to UDP port 9 (discard): the master drops them as not_clocksync.
#include <rte_mempool.h>

#include <cstdint>
#include <vector>

#include "pkt/build.hpp"
#include "stats/counters.hpp"
#include "worker/pacer.hpp"

namespace linerate::clocksync {

class BackgroundLoad {
  public:
    BackgroundLoad() = default;  // off
    // `spec` addresses the master (MACs, IPs); frames of `frame_len` bytes at `pps` frames/s.
    BackgroundLoad(rte_mempool* pool, pkt::UdpFrameSpec spec, unsigned frame_len, double pps);

    bool enabled() const { return pps_ > 0; }
    // Sends the frames due by TSC `now`, in batches (one tx_burst per batch). A TX ring the
    // master has not drained refuses frames: they are freed and counted, never retried, so the
    // load stays at the set rate and a stall is not made up with a long burst.
    void poll(uint16_t port, uint16_t queue, uint64_t now, stats::WorkerCounters& c,
              unsigned sent_counter, unsigned refused_counter);
    // The destination MAC once the session learned the master's.
    void set_dst_mac(const pkt::MacAddr& mac);

  private:
    rte_mempool* pool_ = nullptr;
    std::vector<uint8_t> frame_;
    double pps_ = 0;
    bool started_ = false;
    worker::Pacer pacer_;  // from the first poll; frames sent or refused are spent
};

}  // namespace linerate::clocksync
