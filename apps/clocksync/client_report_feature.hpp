#pragma once
// The client's sinks (--export's page, --chrony-shm's segment, --clockbound's segment) and its
// report as a runtime feature: its figures (report.hpp) and its other JSON keys.
#include <memory>
#include <string>

#include "clocksync/client_session.hpp"
#include "clocksync/clockbound.hpp"
#include "clocksync/local_clock.hpp"
#include "clocksync/options.hpp"
#include "clocksync/report.hpp"
#include "clocksync/synced_clock.hpp"
#include "clocksync/time_export.hpp"
#include "clocksync/worker_loops.hpp"
#include "runtime/feature.hpp"

namespace linerate::clocksync {

// The client's clock for other programs: --export's page, --chrony-shm's segment,
// --clockbound's segment (opened before the EAL: a bad path is a usage error).
struct ClientSinks {
    std::unique_ptr<TimeExport> page;
    std::unique_ptr<ChronyShm> chrony;
    std::unique_ptr<ClockBoundWriter> clockbound;
};

// --clockbound's writer, none without it (opened before the EAL: a bad path is a usage error).
// Throws std::runtime_error when it cannot be opened.
std::unique_ptr<ClockBoundWriter> open_clockbound(const Options& cs, const ClientConfig& config);
// --export's page and --chrony-shm's segment. Throws std::runtime_error when one cannot be opened.
ClientSinks open_sinks(const Options& cs, const LocalClock& local);

// The client's report as a runtime feature: its figures (report.hpp: the JSON, telemetry,
// --metrics and the summary) and its other JSON keys, read from the session after the run.
class ClientReportFeature : public Feature {
  public:
    ClientReportFeature(const Options& cs, const ClientSession& session, const SyncedClock& synced,
                        const ClientWorker& client, const ClientSinks& sinks)
        : cs_(cs),
          session_(session),
          synced_(synced),
          client_(client),
          sinks_(sinks),
          figures_(client_figures(session, synced, report_)) {}

    const stats::FigureSet* figures() const override { return &figures_; }
    // STATUS= and the stats line's end; a line when the client gains or loses its sync.
    std::string status() override;
    void workers_stopped() override;
    void add_json(nlohmann::json& j) const override;

  private:
    const Options& cs_;
    const ClientSession& session_;
    const SyncedClock& synced_;
    const ClientWorker& client_;
    const ClientSinks& sinks_;
    ClientReport report_;        // filled once the workers stopped
    bool synchronized_ = false;  // as the last status() said
    const stats::FigureSet figures_;
};

}  // namespace linerate::clocksync
