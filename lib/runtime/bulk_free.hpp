#pragma once
// Gives a burst of received mbufs back to their pool. rte_pktmbuf_free_bulk() tests and resets
// each mbuf on its own (its reference count, external buffer, chain pointer in the mbuf's second
// cache line, pool: 41 instructions a frame in a sink loop that keeps no frame, callgrind). A loop
// that reads every mbuf of the burst anyway notes whether each is plain (note()): one segment, one
// reference, its own buffer, the burst's pool. A burst of plain mbufs goes back with one
// rte_mempool_put_bulk(), as a port's fast free (RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE) does under
// the same conditions; any other burst with rte_pktmbuf_free_bulk().
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace linerate {

class BulkFree {
  public:
    // Before the burst's first note(): its first mbuf's pool is the burst's.
    explicit BulkFree(const rte_mbuf* first) : pool_(first->pool) {}

    [[gnu::always_inline]] void note(const rte_mbuf* m) {
        odd_ |= uintptr_t(m->pool) ^ uintptr_t(pool_);
        odd_ |= refs_and_segs(m) ^ kOneAndOne;
        odd_ |= m->ol_flags & (RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL);
    }

    // The burst's `n` mbufs, each note()d.
    [[gnu::always_inline]] void free(rte_mbuf** pkts, unsigned n) const {
        if (odd_ == 0) [[likely]]
            rte_mempool_put_bulk(pool_, reinterpret_cast<void**>(pkts), n);
        else
            rte_pktmbuf_free_bulk(pkts, n);
    }

  private:
    // The reference count and the segment count, adjacent in the mbuf, read as one word (two
    // loads and tests less a frame); the count is only written with the mbuf in one thread's
    // hands, as here, so a plain read is rte_mbuf_refcnt_read()'s.
    static_assert(offsetof(rte_mbuf, nb_segs) == offsetof(rte_mbuf, refcnt) + sizeof(uint16_t));
    static constexpr uint32_t kOneAndOne = 1 | 1u << 16;  // either byte order
    static uint32_t refs_and_segs(const rte_mbuf* m) {
        uint32_t w;
        std::memcpy(&w, &m->refcnt, sizeof w);
        return w;
    }

    rte_mempool* pool_;
    uint64_t odd_ = 0;  // not 0: some mbuf is not plain
};

}  // namespace linerate
