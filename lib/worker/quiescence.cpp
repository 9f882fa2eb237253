#include "worker/quiescence.hpp"

#include <dlfcn.h>
#include <rte_interrupts.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace linerate::worker {

namespace detail {
namespace {
rte_rcu_qsbr* make_pollers() {
    const size_t size = rte_rcu_qsbr_get_memsize(kMaxPollers);
    const size_t rounded =
        (size + RTE_CACHE_LINE_SIZE - 1) / RTE_CACHE_LINE_SIZE * RTE_CACHE_LINE_SIZE;
    // Never freed: a thread may poll, and munmap() wait, until the process exits.
    auto* v = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(RTE_CACHE_LINE_SIZE, rounded));
    if (v == nullptr || rte_rcu_qsbr_init(v, kMaxPollers) != 0) std::abort();
    return v;
}
}  // namespace

// Null until static initialization reaches it: munmap() calls before that wait for nothing (no
// thread polls yet).
rte_rcu_qsbr* const g_pollers = make_pollers();
}  // namespace detail

PollingThread::PollingThread(unsigned id)
    : id_(detail::t_poller == kNotAPoller ? id : kNotAPoller) {
    if (id_ == kNotAPoller) return;
    if (id_ >= kMaxPollers || rte_rcu_qsbr_thread_register(detail::g_pollers, id_) != 0)
        throw std::out_of_range("polling thread id " + std::to_string(id_));
    rte_rcu_qsbr_thread_online(detail::g_pollers, id_);
    detail::t_poller = id_;
}

PollingThread::~PollingThread() {
    if (id_ == kNotAPoller) return;
    detail::t_poller = kNotAPoller;
    rte_rcu_qsbr_thread_offline(detail::g_pollers, id_);
    rte_rcu_qsbr_thread_unregister(detail::g_pollers, id_);
}

namespace {
void say(const char* text) {
    ssize_t ignored = write(2, text, __builtin_strlen(text));
    (void)ignored;
}
}  // namespace

uint64_t start_poll_round() {
    rte_rcu_qsbr* const v = detail::g_pollers;
    return v == nullptr ? 0 : rte_rcu_qsbr_start(v);
}

bool poll_round_done(uint64_t round) {
    rte_rcu_qsbr* const v = detail::g_pollers;
    return v == nullptr || rte_rcu_qsbr_check(v, round, false) == 1;
}

void wait_for_pollers() {
    // A polling thread would wait for its own report.
    if (detail::g_pollers == nullptr || detail::t_poller != kNotAPoller) return;
    const uint64_t round = start_poll_round();
    const auto start = std::chrono::steady_clock::now();
    bool told = false;
    // Pollers report every loop round (microseconds); one that is descheduled takes longer, and
    // the wait must not take its core.
    while (!poll_round_done(round)) {
        sched_yield();
        if (!told && std::chrono::steady_clock::now() - start > std::chrono::seconds(1)) {
            say("linerate: an unmap has waited 1 s for a polling thread's quiescent report\n");
            told = true;
        }
    }
}

}  // namespace linerate::worker

namespace {
using MunmapFn = int (*)(void*, size_t);
// The next munmap after the executable's: the C library's, or a sanitizer's interceptor.
const MunmapFn g_next_munmap = reinterpret_cast<MunmapFn>(dlsym(RTLD_NEXT, "munmap"));
}  // namespace

// Every executable linking linerate exports this munmap (--export-dynamic-symbol, lib/
// CMakeLists.txt), so the PMDs' calls bind here: on the EAL interrupt thread (net_memif's
// memif_disconnect() when the peer left) the unmap waits until no polling thread can still be
// inside a burst that reads the memory (quiescence.hpp). Other threads' unmaps go straight on.
extern "C" int munmap(void* addr, size_t len) noexcept {
    if (rte_thread_is_intr()) linerate::worker::wait_for_pollers();
    if (g_next_munmap != nullptr) return g_next_munmap(addr, len);
    return int(syscall(SYS_munmap, addr, len));  // before static initialization got here
}
