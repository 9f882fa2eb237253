#pragma once
// --exception-path tap[:NAME]: the frames an app does not serve (ARP, ICMP to the host, other
// traffic) go to the kernel through a TAP interface instead of being dropped, and what the kernel
// sends on that interface goes out the app's port, so the host stack answers on a port the app
// owns. Workers hand frames to a multi-producer / single-consumer ring; the main lcore moves them
// into the TAP port and moves what the kernel sent into a single-producer / single-consumer ring
// that the worker owning queue 0 of the first port transmits from.
#include <rte_mbuf.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ring/ring.hpp"
#include "stats/counters.hpp"
#include "stats/names.hpp"
#include "worker/worker_map.hpp"

namespace linerate {

// Ring sizes (each direction): what a burst of host traffic can queue before it is dropped.
inline constexpr unsigned kExceptionRingSize = 1024;

class ExceptionPath {
  public:
    // tap_port is started (one queue); out_port/out_queue is where the kernel's frames leave.
    ExceptionPath(const std::string& name, uint16_t tap_port, uint16_t out_port, int socket);
    ~ExceptionPath();  // frees what the rings still hold
    ExceptionPath(const ExceptionPath&) = delete;
    ExceptionPath& operator=(const ExceptionPath&) = delete;

    // Worker side, any worker: hands `n` frames the app does not serve to the kernel. Frames the
    // ring does not take are freed and counted under the runtime's exception_ring_full slot, the
    // rest as exception_to_kernel (stats/names.hpp: the same slots on every board).
    void to_kernel(stats::WorkerCounters& c, rte_mbuf* const* pkts, unsigned n);
    // Worker side, the worker that owns (out_port, queue 0): transmits what the kernel sent.
    // Frames the port does not take after `retries` are freed and counted (tx_full()).
    void transmit_from_kernel(stats::WorkerCounters& c, unsigned retries);
    uint16_t out_port() const { return out_port_; }
    // Whether `slot` is the worker that transmits the kernel's frames (it owns queue 0 there).
    bool transmits_for(const worker::WorkerSlot& slot) const {
        for (const worker::QueueRef& q : slot.queues)
            if (q.port == out_port_ && q.queue == 0) return true;
        return false;
    }

    // Main lcore: ring -> TAP, TAP -> the transmit ring. Call often (every ms or so).
    void service();
    // After the workers stopped: frees what is left in both rings (counting the frames that
    // were on their way to the kernel).
    void drain();

    nlohmann::json json() const;
    std::string summary() const;

  private:
    std::string name_;
    uint16_t tap_port_, out_port_;
    Ring<rte_mbuf> to_kernel_;    // workers -> main
    Ring<rte_mbuf> from_kernel_;  // main -> the worker of (out_port, 0)
    // Written by the main lcore only, read after the workers stopped (and for telemetry, a
    // stale value is fine): plain relaxed single-writer counters.
    stats::Counter sent_to_tap_, tap_tx_full_, left_at_stop_, received_from_tap_,
        from_kernel_ring_full_;
    // Written by the transmitting worker only.
    stats::Counter out_tx_full_;
};

}  // namespace linerate
