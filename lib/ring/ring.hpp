#pragma once
// A typed wrapper over rte_ring: pointers of one type in, the same out, burst or bulk, with the
// single-producer / single-consumer flags chosen at creation.
#include <rte_errno.h>
#include <rte_ring.h>

#include <span>
#include <stdexcept>
#include <string>

namespace linerate {

template <class T>
class Ring {
  public:
    struct Flags {
        bool single_producer = false;
        bool single_consumer = false;
    };

    // count is rounded up to a power of two (RING_F_EXACT_SZ): it can hold `count` items.
    Ring(const std::string& name, unsigned count, int socket, Flags flags) {
        unsigned f = RING_F_EXACT_SZ | (flags.single_producer ? RING_F_SP_ENQ : 0) |
                     (flags.single_consumer ? RING_F_SC_DEQ : 0);
        ring_ = rte_ring_create(name.c_str(), count, socket, f);
        if (!ring_) throw std::runtime_error("ring " + name + ": " + rte_strerror(rte_errno));
    }
    ~Ring() { rte_ring_free(ring_); }
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;

    // How many of `items` were enqueued (burst: as many as fit).
    unsigned enqueue_burst(std::span<T* const> items) {
        return rte_ring_enqueue_burst(ring_, as_void(items.data()), unsigned(items.size()),
                                      nullptr);
    }
    // All of `items` or none.
    bool enqueue_bulk(std::span<T* const> items) {
        return rte_ring_enqueue_bulk(ring_, as_void(items.data()), unsigned(items.size()),
                                     nullptr) == items.size();
    }
    unsigned dequeue_burst(std::span<T*> out) {
        return rte_ring_dequeue_burst(ring_, reinterpret_cast<void**>(out.data()),
                                      unsigned(out.size()), nullptr);
    }
    bool dequeue_bulk(std::span<T*> out) {
        return rte_ring_dequeue_bulk(ring_, reinterpret_cast<void**>(out.data()),
                                     unsigned(out.size()), nullptr) == out.size();
    }
    unsigned count() const { return rte_ring_count(ring_); }
    unsigned capacity() const { return rte_ring_get_capacity(ring_); }
    rte_ring* get() const { return ring_; }

  private:
    static void* const* as_void(T* const* p) { return reinterpret_cast<void* const*>(p); }
    rte_ring* ring_ = nullptr;
};

}  // namespace linerate
