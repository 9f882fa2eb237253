#pragma once
// The sending side of gen on the shared runtime: every worker builds frames with its own
// Traffic generator straight into mbufs, paces them by TSC, transmits on its queues, and counts
// what comes back; after the last frame it keeps receiving for the drain time.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "gen/options.hpp"
#include "gen/returns.hpp"
#include "gen/traffic.hpp"
#include "runtime/runtime.hpp"

namespace linerate::gen {

// The app counters of the stats board.
#define LINERATE_GEN_COUNTERS(X)      \
    X(expected_back, "expected back") \
    X(returned, "returned")           \
    X(reordered, "reordered")         \
    X(foreign, "foreign")             \
    X(tuples, "tuples")
LINERATE_COUNTERS(GenCounter, kGenCounters, LINERATE_GEN_COUNTERS);
// Besides the runtime's tx_full (frames TX had not taken when the run stopped: gen waits for a
// full ring rather than dropping): a long frame found no mbufs for its chain.
#define LINERATE_GEN_DROPS(X) X(no_mbuf, "no mbuf")
LINERATE_DROPS(GenDrop, kGenDrops, LINERATE_GEN_DROPS);

// A feature of the runtime: its figures (declared once: sent, returns, round trips, expected
// sums) reach the JSON, the summary and --metrics by the runtime.
class Sender : public Feature {
  public:
    // Throws std::invalid_argument when the traffic cannot be split over the workers.
    Sender(Runtime& runtime, const GenOptions& options, const TrafficPlan& plan);
    ~Sender();

    int run();

  private:
    struct Worker;
    class Loop;
    void work(WorkerContext& ctx);
    void merge_and_write();
    void workers_stopped() override { merge_and_write(); }
    const stats::FigureSet* figures() const override { return &figure_set_; }
    void add_json(nlohmann::json& j) const override;
    stats::FigureSet declare_figures() const;
    std::vector<stats::Figure> sent_figures() const;
    std::vector<stats::Figure> return_figures() const;
    std::vector<stats::Figure> expect_figures() const;

    Runtime& rt_;
    const GenOptions& opt_;
    const TrafficPlan& plan_;
    unsigned active_ = 0;  // workers with queues: slot indices 0 .. active_-1
    std::vector<std::unique_ptr<Worker>> workers_;
    std::atomic<unsigned> finished_{0};
    TscClock clock_;
    stats::LogHistogram latency_;
    ExpectedSums expected_;
    double send_s_ = 0;
    stats::FigureSet figure_set_;
};

}  // namespace linerate::gen
