#include "mem/mempool.hpp"

#include <fmt/core.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>

#include <bit>
#include <stdexcept>

namespace linerate::mem {

unsigned pool_size(const PoolDemand& d) {
    uint64_t n = uint64_t(d.rx_descriptors) + d.tx_descriptors +
                 uint64_t(d.lcores) * (d.cache + d.cache / 2 + 2ull * d.burst);
    return unsigned(std::bit_ceil(n + 1) - 1);
}

namespace {

// Bytes the pool takes in its region: objects never straddle a page of the region, the
// mempool's ring and header need room too.
size_t region_bytes_for(unsigned mbufs, uint16_t data_room, size_t page) {
    rte_mempool_objsz sz{};
    uint32_t obj = rte_mempool_calc_obj_size(uint32_t(sizeof(rte_mbuf) + data_room), 0, &sz);
    size_t per_page = obj <= page ? page / obj : 0;
    size_t objects = per_page ? (mbufs + per_page - 1) / per_page * page : size_t(mbufs) * obj * 2;
    return objects + size_t(mbufs) * 16 + (8u << 20);
}

// rte_pktmbuf_pool_create keeps every object inside one page so its IOVA is contiguous. On
// 4 KiB pages that leaves one 2.3 KiB mbuf per page, all at the same page offset: 40% of the
// memory wasted and every mbuf header in the same few L1 sets. With IOVA as VA, virtually
// contiguous is IOVA contiguous, so objects may cross pages: the same pool, packed.
rte_mempool* create_packed_pool(const std::string& name, unsigned n, unsigned cache,
                                uint16_t data_room, int socket) {
    if (rte_eal_iova_mode() != RTE_IOVA_VA)
        return rte_pktmbuf_pool_create(name.c_str(), n, cache, 0, data_room, socket);
    rte_mempool* mp = rte_mempool_create_empty(name.c_str(), n, sizeof(rte_mbuf) + data_room, cache,
                                               sizeof(rte_pktmbuf_pool_private), socket,
                                               RTE_MEMPOOL_F_NO_IOVA_CONTIG);
    if (mp == nullptr) return nullptr;
    rte_pktmbuf_pool_private priv{};
    priv.mbuf_data_room_size = data_room;
    priv.mbuf_priv_size = 0;
    if (rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), nullptr) != 0) {
        rte_mempool_free(mp);
        return nullptr;
    }
    rte_pktmbuf_pool_init(mp, &priv);
    if (rte_mempool_populate_default(mp) < 0) {
        rte_mempool_free(mp);
        return nullptr;
    }
    rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
    return mp;
}

}  // namespace

PacketPool::PacketPool(const std::string& name, unsigned mbufs, unsigned cache,
                       const RegionSpec& region, int default_socket, uint16_t data_room) {
    // The kind's page size (kRegionKinds): a new region kind needs nothing here.
    region_ =
        std::make_unique<Region>(region, region_bytes_for(mbufs, data_room, region.page_size()),
                                 name + "_heap", default_socket);
    pool_ = create_packed_pool(name, mbufs, std::min(cache, unsigned(RTE_MEMPOOL_CACHE_MAX_SIZE)),
                               data_room, region_->socket_id());
    if (pool_ == nullptr)
        throw std::runtime_error(fmt::format("cannot create pool of {} mbufs in region {}: {}",
                                             mbufs, region_->name(), rte_strerror(rte_errno)));
}

PacketPool::~PacketPool() {
    rte_mempool_free(pool_);
}

std::string PacketPool::describe() const {
    struct Extent {
        const void* first = nullptr;
        size_t bytes = 0;
    } extent;
    rte_mempool_mem_iter(
        pool_,
        [](rte_mempool*, void* arg, rte_mempool_memhdr* hdr, unsigned) {
            auto* e = static_cast<Extent*>(arg);
            if (!e->first) e->first = hdr->addr;
            e->bytes += hdr->len;
        },
        &extent);
    return fmt::format("{} mbufs, {} in region {}: {}", pool_->size,
                       format_bytes(double(extent.bytes)), region_->name(),
                       describe_placement(extent.first, extent.bytes));
}

}  // namespace linerate::mem
