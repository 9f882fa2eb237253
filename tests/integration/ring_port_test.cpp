// The forward loop on a net_ring port made with rte_eth_from_rings: frames injected into the RX
// ring come out of the TX ring MAC-swapped; a TX ring too small for them is a full TX queue,
// whose leftovers must be retried, freed and counted, leaving no mbuf in use.
#include <gtest/gtest.h>
#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <cstring>
#include <thread>

#include "eal/eal.hpp"
#include "eal/port.hpp"
#include "l2reflect/reflect.hpp"
#include "mem/mempool.hpp"
#include "pkt/build.hpp"
#include "ring/ring.hpp"
#include "runtime/forward_loop.hpp"

using namespace linerate;

TEST(ForwardLoopOnRingPort, FullTxRingIsCountedAndNothingLeaks) {
    eal::Eal eal({"ring_port_test", "--no-huge", "-m", "256", "--no-pci", "--no-shconf", "-l", "0",
                  "--log-level=lib.eal:warning", "--no-telemetry"});
    mem::PacketPool pool("ring_test_pool", 8191, 32, mem::RegionSpec{}, 0);
    Ring<rte_mbuf> rx("ring_test_rx", 4096, 0, {.single_producer = true, .single_consumer = true});
    Ring<rte_mbuf> tx("ring_test_tx", 500, 0, {.single_producer = true, .single_consumer = true});
    rte_ring* rx_ring = rx.get();
    rte_ring* tx_ring = tx.get();
    int port_id = rte_eth_from_rings("net_ring_test", &rx_ring, 1, &tx_ring, 1, 0);
    ASSERT_GE(port_id, 0);
    eal::Port port(uint16_t(port_id), {.queues = 1, .rx_desc = 512, .tx_desc = 512});
    port.start(pool.get());

    constexpr unsigned kFrames = 3000;
    for (unsigned i = 0; i < kFrames; ++i) {
        rte_mbuf* m = rte_pktmbuf_alloc(pool.get());
        ASSERT_NE(m, nullptr);
        pkt::UdpFrameSpec spec;
        spec.ip_id = uint16_t(i);
        auto frame = pkt::make_udp_frame(spec, 64 + i % 100);
        std::memcpy(rte_pktmbuf_append(m, uint16_t(frame.size())), frame.data(), frame.size());
        rte_mbuf* one[] = {m};
        ASSERT_TRUE(rx.enqueue_bulk(one));
    }

    stats::StatsBoard board("l2reflect", 1, l2reflect::kDrops, stats::kRuntimeCounters);
    worker::WorkerSlot slot{0, rte_lcore_id(), {{uint16_t(port_id), 0}}};
    WorkerContext ctx{slot, board.worker(0), 32, 4};
    auto kernel = [](rte_mbuf* m) {
        return l2reflect::reflect_frame(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_data_len(m));
    };
    std::thread watcher([&] {
        while (board.worker(0).rx_packets.get() < kFrames)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        worker::request_stop();
    });
    forward_loop(ctx, kernel);
    watcher.join();

    stats::Totals t = board.totals();
    EXPECT_EQ(t.rx_packets, kFrames);
    EXPECT_EQ(t.tx_packets, tx.count());
    EXPECT_EQ(t.tx_packets, tx.capacity());
    EXPECT_EQ(t.drops[stats::kTxFullSlot], kFrames - t.tx_packets);
    EXPECT_EQ(t.rx_packets, t.tx_packets + t.dropped());

    rte_mbuf* out[64];
    unsigned n, seen = 0;
    pkt::UdpFrameSpec spec;
    while ((n = tx.dequeue_burst(out)) > 0) {
        for (unsigned i = 0; i < n; ++i, ++seen) {
            const uint8_t* f = rte_pktmbuf_mtod(out[i], const uint8_t*);
            ASSERT_EQ(0, std::memcmp(f, spec.src_mac.data(), 6));
            ASSERT_EQ(0, std::memcmp(f + 6, spec.dst_mac.data(), 6));
            ASSERT_EQ(rte_pktmbuf_pkt_len(out[i]), 64 + seen % 100);  // order kept
        }
        rte_pktmbuf_free_bulk(out, n);
    }
    port.stop();
    EXPECT_EQ(pool.in_use(), 0u);
}
