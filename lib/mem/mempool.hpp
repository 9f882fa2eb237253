#pragma once
// The packet buffer pool, sized from what can hold mbufs at once and placed in a region.
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <memory>
#include <string>

#include "mem/region.hpp"

namespace linerate::mem {

struct PoolDemand {
    unsigned rx_descriptors = 0;  // summed over every RX queue of every port
    unsigned tx_descriptors = 0;  // likewise for TX
    unsigned lcores = 1;          // lcores that take mbufs from the pool
    unsigned burst = 64;          // the apps' --burst default; the runtime sets the one in use
    unsigned cache = 256;         // per-lcore mempool cache
};

// Mbufs needed so that full RX and TX rings, every lcore's cache (which may grow to 1.5x its
// size before flushing) and a burst in flight per lcore in each direction never run the pool
// dry; rounded up to 2^k - 1, the size the mempool ring holds without waste.
unsigned pool_size(const PoolDemand& demand);

class PacketPool {
  public:
    // Throws std::runtime_error or RegionError.
    PacketPool(const std::string& name, unsigned mbufs, unsigned cache, const RegionSpec& region,
               int default_socket, uint16_t data_room = RTE_MBUF_DEFAULT_BUF_SIZE);
    ~PacketPool();
    PacketPool(const PacketPool&) = delete;
    PacketPool& operator=(const PacketPool&) = delete;

    rte_mempool* get() const { return pool_; }
    Region& region() { return *region_; }
    unsigned size() const { return pool_->size; }
    unsigned in_use() const { return rte_mempool_in_use_count(pool_); }
    // "8191 mbufs, 18.6 MiB in region pages:thp: external heap (...), 4 KiB pages"
    std::string describe() const;

  private:
    std::unique_ptr<Region> region_;
    rte_mempool* pool_ = nullptr;
};

}  // namespace linerate::mem
