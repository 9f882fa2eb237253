#include "kvagg/control_thread.hpp"

#include <utility>

namespace linerate::kvagg {

void ControlThread::start(std::function<void()> on_thread, Timers timers) {
    thread_ = std::thread([this, on_thread, timers] {
        if (on_thread) on_thread();
        loop(timers);
    });
}

void ControlThread::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

bool ControlThread::submit(unsigned worker, uint16_t port, const uint8_t* frame, size_t len) {
    {
        std::lock_guard lock(mutex_);
        if (inbox_.size() >= kInboxLimit || stopping_) return false;
        inbox_.push_back({worker, port, std::vector<uint8_t>(frame, frame + len)});
    }
    wake_.notify_one();
    return true;
}

void ControlThread::loop(const Timers& timers) {
    for (;;) {
        std::optional<Request> req = next(timers ? timers() : std::nullopt);
        if (!req) {
            std::lock_guard lock(mutex_);
            if (stopping_) return;
            continue;  // a timed task's time
        }
        post_frames(*slots_[req->worker], req->port,
                    answer_(req->frame.data(), req->frame.size(), req->port));
    }
}

std::optional<ControlThread::Request> ControlThread::next(
    std::optional<Clock::time_point> deadline) {
    std::unique_lock lock(mutex_);
    auto ready = [&] { return stopping_ || !inbox_.empty(); };
    if (deadline)
        wake_.wait_until(lock, *deadline, ready);
    else
        wake_.wait(lock, ready);
    if (stopping_ || inbox_.empty()) return std::nullopt;
    Request req = std::move(inbox_.front());
    inbox_.pop_front();
    return req;
}

}  // namespace linerate::kvagg
