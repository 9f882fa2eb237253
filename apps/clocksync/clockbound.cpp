#include "clocksync/clockbound.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "clocksync/seqlock.hpp"

namespace linerate::clocksync {

namespace {

constexpr uint64_t kMaxBoundNs = uint64_t(1) << 62;

CbTimespec add_ns(CbTimespec t, uint64_t ns) {
    const int64_t nsec = t.nsec + int64_t(ns % 1'000'000'000u);
    return {t.sec + int64_t(ns / 1'000'000'000u) + nsec / 1'000'000'000, nsec % 1'000'000'000};
}

template <class T>
void store_relaxed(T& field, T value) {
    std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
}

std::runtime_error path_error(const std::string& path, const std::string& what) {
    return std::runtime_error(fmt::format("--clockbound {}: {}", path, what));
}

// Opens (creating it and its directory) the file of the segment, locked for this writer, and
// sized to the segment. Refuses a file that is anything else.
int open_segment_file(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) throw path_error(path, "cannot create its directory: " + ec.message());
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw path_error(path, std::string("cannot open: ") + std::strerror(errno));
    auto refuse = [&](const std::string& why) {
        close(fd);
        return path_error(path, why);
    };
    struct stat st {};
    if (fstat(fd, &st) != 0) throw refuse(std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw refuse("not a regular file");
    if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        throw refuse(errno == EWOULDBLOCK ? "written by another running clocksync client"
                                          : std::string("flock: ") + std::strerror(errno));
    if (st.st_size == 0) {
        if (ftruncate(fd, sizeof(ClockBoundSegment)) != 0)
            throw refuse(std::string("ftruncate: ") + std::strerror(errno));
    } else {
        ClockBoundSegment head{};
        const bool ours = st.st_size == sizeof(ClockBoundSegment) &&
                          pread(fd, &head, sizeof(head), 0) == ssize_t(sizeof(head)) &&
                          head.magic[0] == kClockBoundMagic0 &&
                          head.magic[1] == kClockBoundMagic1 &&
                          (head.version == 0 || head.version == kClockBoundVersion);
        if (!ours) throw refuse("exists and is not a ClockBound v2 segment (not overwritten)");
    }
    fchmod(fd, 0644);  // readable by every user, whatever the umask
    return fd;
}

}  // namespace

CbReadings read_cb_readings(const LocalClock& local) {
    timespec coarse{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &coarse);
    return {{int64_t(coarse.tv_sec), int64_t(coarse.tv_nsec)}, read_realtime_pair(local)};
}

ClockBoundStatus clockbound_status(const SyncState& s, uint64_t now_local, uint64_t max_age_ns) {
    if (!s.synced) return ClockBoundStatus::unknown;
    return diff_ns(now_local, s.t4) > int64_t(max_age_ns) ? ClockBoundStatus::free_running
                                                          : ClockBoundStatus::synchronized;
}

int64_t clockbound_bound_ns(const SyncState& s, const RealtimePair& p) {
    const int64_t off = diff_ns(p.realtime_ns, s.to_master(p.local_ns));
    const uint64_t distance = off < 0 ? uint64_t(0) - uint64_t(off) : uint64_t(off);
    const uint64_t parts[] = {s.epsilon_at(p.local_ns), distance, p.half_width_ns};
    uint64_t bound = 0;
    for (uint64_t part : parts) bound = part >= kMaxBoundNs - bound ? kMaxBoundNs : bound + part;
    return int64_t(bound);
}

ClockErrorBound make_clock_error_bound(const SyncState& s, const CbReadings& r,
                                       ClockBoundStatus status, uint64_t max_age_ns,
                                       uint32_t max_drift_ppb) {
    ClockErrorBound e;
    e.as_of = r.coarse;
    e.void_after = add_ns(r.coarse, max_age_ns);
    e.bound_ns = status == ClockBoundStatus::unknown ? 0 : clockbound_bound_ns(s, r.realtime);
    e.max_drift_ppb = max_drift_ppb;
    e.clock_status = int32_t(status);
    return e;
}

ClockBoundWriter::ClockBoundWriter(const std::string& path, uint64_t max_age_ns, uint64_t rho_ppb)
    : path_(path), max_age_ns_(max_age_ns), max_drift_ppb_(uint32_t(rho_ppb)) {
    if (path.empty()) throw path_error(path, "empty path");
    if (rho_ppb >= 1'000'000'000u) throw path_error(path, "drift bound of 1e9 ppb or more");
    fd_ = open_segment_file(path);
    void* p = mmap(nullptr, sizeof(ClockBoundSegment), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
        const std::string why = std::strerror(errno);
        close(fd_);
        throw path_error(path, "mmap: " + why);
    }
    segment_ = static_cast<ClockBoundSegment*>(p);
    // The header before the first generation: readers take nothing while it is 0.
    store_relaxed(segment_->magic[0], kClockBoundMagic0);
    store_relaxed(segment_->magic[1], kClockBoundMagic1);
    store_relaxed(segment_->segment_size, uint32_t(sizeof(ClockBoundSegment)));
    std::atomic_ref<uint16_t>(segment_->version)
        .store(kClockBoundVersion, std::memory_order_release);
    write(make_clock_error_bound(sync_, read_cb_readings(LocalClock{}), ClockBoundStatus::unknown,
                                 0, max_drift_ppb_));
}

ClockBoundWriter::~ClockBoundWriter() {
    if (!segment_) return;
    stop();
    munmap(segment_, sizeof(ClockBoundSegment));
    close(fd_);  // releases the flock
}

uint64_t ClockBoundWriter::refresh_ns() const {
    return std::min(max_age_ns_ / 2, kClockBoundMaxRefreshNs);
}

void ClockBoundWriter::write(const ClockErrorBound& e) {
    uint64_t words[kClockBoundPayloadWords];
    std::memcpy(words, &e, sizeof(words));
    seqlock_store(segment_->generation, segment_->payload, words, kClockBoundPayloadWords);
    last_ = e;
    ++writes_;
}

void ClockBoundWriter::write_now(const LocalClock& local) {
    const CbReadings r = read_cb_readings(local);
    status_ = clockbound_status(sync_, r.realtime.local_ns, max_age_ns_);
    write(make_clock_error_bound(sync_, r, status_, max_age_ns_, max_drift_ppb_));
    written_local_ = r.realtime.local_ns;
}

void ClockBoundWriter::publish(const SyncState& s, const LocalClock& local) {
    if (stopped_ || !s.synced) return;
    sync_ = s;
    write_now(local);
}

void ClockBoundWriter::poll(uint64_t now_local, const LocalClock& local) {
    if (stopped_ || !sync_.synced) return;
    if (clockbound_status(sync_, now_local, max_age_ns_) != status_ ||
        diff_ns(now_local, written_local_) >= int64_t(refresh_ns()))
        write_now(local);
}

void ClockBoundWriter::stop() {
    if (stopped_) return;
    stopped_ = true;
    ClockErrorBound e = last_;
    e.clock_status = int32_t(ClockBoundStatus::unknown);
    e.void_after = e.as_of;
    status_ = ClockBoundStatus::unknown;
    write(e);
}

}  // namespace linerate::clocksync
