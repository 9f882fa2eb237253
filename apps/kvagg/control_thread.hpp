#pragma once
// kvagg's control thread: workers hand it the service requests they receive (submit: a copy into
// its inbox, and they go on); it answers them one at a time, off the tuple path, and posts the
// response frames to the receiving worker's request slot, which transmits them on the port and
// queue the request came in on. Between requests it runs the timed tasks (--state's
// checkpoints, --export's epochs).
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "kvagg/request_slot.hpp"

namespace linerate::kvagg {

class ControlThread {
  public:
    static constexpr size_t kInboxLimit = 256;  // queued requests; more are refused (busy)
    using Frames = std::vector<std::vector<uint8_t>>;
    // The response frames to a request frame received on a port.
    using Answer = std::function<Frames(const uint8_t* frame, size_t len, uint16_t port)>;

    // slots: by worker, where the answers go.
    ControlThread(std::vector<RequestSlot*> slots, Answer answer)
        : slots_(std::move(slots)), answer_(std::move(answer)) {}
    ~ControlThread() { stop(); }

    using Clock = std::chrono::steady_clock;
    // Runs the timed tasks that are due; returns when the next one is (nullopt: none).
    using Timers = std::function<std::optional<Clock::time_point>()>;

    // on_thread: run first on the thread (the app sets its CPU affinity there); timers: run
    // between requests, before each wait.
    void start(std::function<void()> on_thread, Timers timers);
    void stop();

    // Worker side: queue a copy of a request frame received on `port`; false when the inbox is
    // full or the thread stopping (the worker counts the request as control_busy).
    bool submit(unsigned worker, uint16_t port, const uint8_t* frame, size_t len);

  private:
    struct Request {
        unsigned worker;
        uint16_t port;
        std::vector<uint8_t> frame;
    };

    void loop(const Timers& timers);
    // The next request, waiting until `deadline` (if any); nullopt at the deadline or the stop.
    std::optional<Request> next(std::optional<Clock::time_point> deadline);

    std::vector<RequestSlot*> slots_;
    Answer answer_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Request> inbox_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace linerate::kvagg
