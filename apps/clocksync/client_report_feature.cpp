#include "clocksync/client_report_feature.hpp"

#include <fmt/core.h>

namespace linerate::clocksync {

namespace {
constexpr const char* kApp = "clocksync";
}  // namespace

std::unique_ptr<ClockBoundWriter> open_clockbound(const Options& cs, const ClientConfig& config) {
    if (!cs.clockbound_path) return nullptr;
    auto writer =
        std::make_unique<ClockBoundWriter>(*cs.clockbound_path, uint64_t(cs.export_max_age() * 1e6),
                                           drift_bound_ppb(config.drift_bound_ppm));
    fmt::print(
        "{}: writing the bound on CLOCK_REALTIME to the ClockBound segment {} (FreeRunning after "
        "{} ms without a good sync)\n",
        kApp, writer->path(), cs.export_max_age());
    return writer;
}

ClientSinks open_sinks(const Options& cs, const LocalClock& local) {
    ClientSinks sinks;
    if (cs.export_name) {
        sinks.page = std::make_unique<TimeExport>(*cs.export_name,
                                                  uint64_t(cs.export_max_age() * 1e6), local.sim);
        fmt::print(
            "{}: exporting the synchronized clock to {} (invalid after {} ms without a good "
            "sync)\n",
            kApp, sinks.page->path(), cs.export_max_age());
    }
    if (cs.chrony_shm) {
        sinks.chrony = std::make_unique<ChronyShm>(*cs.chrony_shm);
        fmt::print("{}: feeding chronyd's SHM refclock unit {}\n", kApp, *cs.chrony_shm);
    }
    return sinks;
}

std::string ClientReportFeature::status() {
    const std::string now = client_status(synced_.snapshot().state, synced_.local().now(),
                                          uint64_t(cs_.export_max_age() * 1e6), cs_.master_ip);
    const bool synchronized = now.starts_with("synchronized");
    if (synchronized != synchronized_) fmt::print("{}: {}\n", kApp, now);
    synchronized_ = synchronized;
    return now;
}

void ClientReportFeature::workers_stopped() {
    report_ = {session_.summary(), session_.sync(), client_.master_mac(), cs_.verification()};
}

void ClientReportFeature::add_json(nlohmann::json& j) const {
    add_client_json(j, report_);
    if (sinks_.page) j["export"] = sinks_.page->path();
    if (sinks_.chrony) j["chrony_samples"] = sinks_.chrony->samples();
    if (sinks_.clockbound) {
        j["clockbound"] = sinks_.clockbound->path();
        j["clockbound_writes"] = sinks_.clockbound->writes();
    }
    j["role"] = "client";
    j["clocksync"] = config_json(cs_);
}

}  // namespace linerate::clocksync
