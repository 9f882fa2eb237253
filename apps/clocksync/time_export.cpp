#include "clocksync/time_export.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "clocksync/seqlock.hpp"

namespace linerate::clocksync {

namespace {

static_assert(sizeof(tt_mapping) == TT_MAPPING_WORDS * 8);
static_assert(offsetof(tt_page, seq) == 64);

template <class T>
void store_relaxed(T& field, T value) {
    std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
}
template <class T>
T load_relaxed(const T& field) {
    return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_relaxed);
}

std::runtime_error sys_error(const std::string& what) {
    return std::runtime_error(fmt::format("{}: {}", what, std::strerror(errno)));
}

}  // namespace

TimeExport::TimeExport(const std::string& name, uint64_t max_age_ns,
                       const std::optional<SimClock>& sim) {
    if (name.empty() || name.size() > TT_NAME_MAX || name.find('/', 1) != std::string::npos)
        throw std::runtime_error(fmt::format("bad export name '{}'", name));
    path_ = name[0] == '/' ? name : "/" + name;
    const int fd = shm_open(path_.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0) throw sys_error("shm_open " + path_);
    struct stat st {};
    if (fstat(fd, &st) != 0 || (st.st_size != 0 && size_t(st.st_size) != sizeof(tt_page))) {
        close(fd);
        throw std::runtime_error(fmt::format("{} exists and is not a time page", path_));
    }
    fchmod(fd, 0644);  // readable by every user, whatever the umask
    if (st.st_size == 0 && ftruncate(fd, sizeof(tt_page)) != 0) {
        close(fd);
        throw sys_error("ftruncate " + path_);
    }
    void* p = mmap(nullptr, sizeof(tt_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) throw sys_error("mmap " + path_);
    page_ = static_cast<tt_page*>(p);

    const bool ours = load_relaxed(page_->magic) == TT_PAGE_MAGIC;
    if (st.st_size != 0 && !ours) {
        munmap(page_, sizeof(tt_page));
        throw std::runtime_error(fmt::format("{} exists and is not a time page", path_));
    }
    const pid_t writer = pid_t(load_relaxed(page_->writer_pid));
    if (ours && load_relaxed(page_->data.m.valid) == 1 && writer != getpid() &&
        kill(writer, 0) == 0) {
        munmap(page_, sizeof(tt_page));
        throw std::runtime_error(
            fmt::format("{} is exported by a running client (pid {})", path_, writer));
    }
    // A writer that died mid-write left seq odd: make it even before writing on.
    uint64_t seq = load_relaxed(page_->seq);
    if (seq & 1) store_relaxed(page_->seq, seq + 1);
    store_relaxed(page_->layout, TT_PAGE_LAYOUT);
    store_relaxed(page_->clock_id, uint32_t(CLOCK_MONOTONIC_RAW));
    store_relaxed(page_->flags, sim ? TT_FLAG_SIMULATED : 0u);
    store_relaxed(page_->writer_pid, uint32_t(getpid()));

    mapping_.max_age_ns = max_age_ns;
    if (sim) {
        mapping_.sim_offset_ns = sim->offset_ns;
        mapping_.sim_drift_ppb = sim->drift_ppb;
        mapping_.sim_epoch_ns = sim->epoch_ns;
    }
    write(0);
    // The magic last: a reader that sees it sees the fields above (same writer, release store).
    std::atomic_ref<uint64_t>(page_->magic).store(TT_PAGE_MAGIC, std::memory_order_release);
}

TimeExport::~TimeExport() {
    if (!page_) return;
    invalidate(mapping_.written_ns);
    munmap(page_, sizeof(tt_page));
}

void TimeExport::publish(const SyncState& s, uint64_t syncs, uint64_t now_local) {
    if (!s.synced) return;
    mapping_.valid = 1;
    mapping_.theta_ns = s.theta_ns;
    mapping_.eps0_ns = s.eps0_ns;
    mapping_.rho_ppb = s.rho_ppb;
    mapping_.t1_ns = s.t1;
    mapping_.t4_ns = s.t4;
    mapping_.syncs = syncs;
    write(now_local);
}

void TimeExport::invalidate(uint64_t now_local) {
    mapping_.valid = 0;
    write(now_local);
}

void TimeExport::write(uint64_t now_local) {
    mapping_.written_ns = now_local;
    uint64_t words[TT_MAPPING_WORDS];
    std::memcpy(words, &mapping_, sizeof(words));
    words[TT_MAPPING_WORDS - 1] = mapping_.checksum = tt_checksum(words);
    seqlock_store(page_->seq, page_->data.words, words, TT_MAPPING_WORDS);
}

// chrony's refclock_shm.c / ntpd's struct shmTime, mode 1: the reader takes a sample when
// `count` is the same before and after its copy and `valid` is set, then clears `valid`.
namespace {
struct ShmTime {
    int mode;
    volatile int count;
    time_t clockTimeStampSec;
    int clockTimeStampUSec;
    time_t receiveTimeStampSec;
    int receiveTimeStampUSec;
    int leap;
    int precision;
    int nsamples;
    volatile int valid;
    unsigned clockTimeStampNSec;
    unsigned receiveTimeStampNSec;
    int dummy[8];
};
}  // namespace

ChronyShm::ChronyShm(int unit) {
    const int id =
        shmget(kChronyShmKeyBase + unit, sizeof(ShmTime), IPC_CREAT | (unit <= 1 ? 0600 : 0666));
    if (id < 0) throw sys_error(fmt::format("chrony SHM unit {}: shmget", unit));
    void* p = shmat(id, nullptr, 0);
    if (p == reinterpret_cast<void*>(-1)) throw sys_error(fmt::format("chrony SHM unit {}", unit));
    shm_ = p;
}

ChronyShm::~ChronyShm() {
    if (shm_) {
        static_cast<ShmTime*>(shm_)->valid = 0;
        shmdt(shm_);
    }
}

void ChronyShm::update(uint64_t master_ns, const timespec& system, int precision) {
    auto* t = static_cast<ShmTime*>(shm_);
    t->valid = 0;
    t->mode = 1;
    t->count = t->count + 1;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    t->clockTimeStampSec = time_t(master_ns / 1'000'000'000u);
    t->clockTimeStampNSec = unsigned(master_ns % 1'000'000'000u);
    t->clockTimeStampUSec = int(t->clockTimeStampNSec / 1000);
    t->receiveTimeStampSec = system.tv_sec;
    t->receiveTimeStampNSec = unsigned(system.tv_nsec);
    t->receiveTimeStampUSec = int(system.tv_nsec / 1000);
    t->leap = 0;
    t->precision = precision;
    t->nsamples = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    t->count = t->count + 1;
    t->valid = 1;
    ++samples_;
}

int precision_log2(uint64_t epsilon_ns) {
    int p = -30;  // 2^-30 s ≈ 0.93 ns
    while (p < 0 && (uint64_t(1'000'000'000) >> -p) < epsilon_ns) ++p;
    return p;
}

}  // namespace linerate::clocksync
