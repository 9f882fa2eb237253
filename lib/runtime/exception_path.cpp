#include "runtime/exception_path.hpp"

#include <fmt/core.h>
#include <rte_ethdev.h>

#include <stdexcept>

#include "runtime/tx.hpp"

namespace linerate {

namespace {
constexpr unsigned kServiceBurst = 64;
}  // namespace

ExceptionPath::ExceptionPath(const std::string& name, uint16_t tap_port, uint16_t out_port,
                             int socket)
    : name_(name),
      tap_port_(tap_port),
      out_port_(out_port),
      to_kernel_(name + "_exc_in", kExceptionRingSize, socket, {.single_consumer = true}),
      from_kernel_(name + "_exc_out", kExceptionRingSize, socket,
                   {.single_producer = true, .single_consumer = true}) {}

ExceptionPath::~ExceptionPath() {
    drain();
}

void ExceptionPath::to_kernel(stats::WorkerCounters& c, rte_mbuf* const* pkts, unsigned n) {
    const unsigned taken = to_kernel_.enqueue_burst({pkts, n});
    c.app_counter(stats::RuntimeCounter::exception_to_kernel).add(taken);
    if (taken < n) {
        rte_pktmbuf_free_bulk(const_cast<rte_mbuf**>(pkts + taken), n - taken);
        c.drop(stats::RuntimeDrop::exception_ring_full).add(n - taken);
    }
}

void ExceptionPath::transmit_from_kernel(stats::WorkerCounters& c, unsigned retries) {
    rte_mbuf* pkts[kServiceBurst];
    const unsigned n = from_kernel_.dequeue_burst(pkts);
    if (n == 0) return;
    TxStep(c, retries)
        .send_aside({out_port_, 0}, pkts, uint16_t(n),
                    c.app_counter(stats::RuntimeCounter::exception_from_kernel), out_tx_full_);
}

void ExceptionPath::service() {
    rte_mbuf* pkts[kServiceBurst];
    // Workers -> kernel.
    if (unsigned n = to_kernel_.dequeue_burst(pkts)) {
        const uint16_t sent = rte_eth_tx_burst(tap_port_, 0, pkts, uint16_t(n));
        sent_to_tap_.add(sent);
        if (sent < n) {
            rte_pktmbuf_free_bulk(pkts + sent, n - sent);
            tap_tx_full_.add(n - sent);
        }
    }
    // Kernel -> the port.
    if (uint16_t n = rte_eth_rx_burst(tap_port_, 0, pkts, kServiceBurst)) {
        received_from_tap_.add(n);
        const unsigned taken = from_kernel_.enqueue_burst({pkts, n});
        if (taken < n) {
            rte_pktmbuf_free_bulk(pkts + taken, n - taken);
            from_kernel_ring_full_.add(n - taken);
        }
    }
}

void ExceptionPath::drain() {
    rte_mbuf* pkts[kServiceBurst];
    while (unsigned n = to_kernel_.dequeue_burst(pkts)) {
        left_at_stop_.add(n);
        rte_pktmbuf_free_bulk(pkts, n);
    }
    while (unsigned n = from_kernel_.dequeue_burst(pkts)) rte_pktmbuf_free_bulk(pkts, n);
}

nlohmann::json ExceptionPath::json() const {
    return {{"sent_to_tap", sent_to_tap_.get()},
            {"tap_tx_full", tap_tx_full_.get()},
            {"left_at_stop", left_at_stop_.get()},
            {"received_from_tap", received_from_tap_.get()},
            {"from_kernel_ring_full", from_kernel_ring_full_.get()},
            {"port_tx_full", out_tx_full_.get()}};
}

std::string ExceptionPath::summary() const {
    return fmt::format(
        "  exception path: {} frames into the TAP ({} refused by it), {} from it ({} dropped: "
        "ring full {}, port {} TX full {})",
        sent_to_tap_.get(), tap_tx_full_.get(), received_from_tap_.get(),
        from_kernel_ring_full_.get() + out_tx_full_.get(), from_kernel_ring_full_.get(), out_port_,
        out_tx_full_.get());
}

}  // namespace linerate
