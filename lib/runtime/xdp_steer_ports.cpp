#include "runtime/xdp_steer_ports.hpp"

#include <fmt/core.h>
#include <rte_ethdev.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "eal/af_xdp_ports.hpp"
#include "eal/port.hpp"

namespace linerate::xdp {

namespace {

std::string counters_text(const SteerCounters& c) {
    std::string s =
        fmt::format("redirected {} passed {} unclaimed {}", c.redirected, c.passed, c.unclaimed);
    if (c.turned) s += fmt::format(" turned {}", c.turned);
    return s;
}

}  // namespace

Steering::Steering(const std::vector<uint16_t>& ports, const SteerFilter& filter, SteerHook hook)
    : filter_(filter), hook_(std::move(hook)) {
    std::vector<std::string> seen;
    for (uint16_t port : ports) {
        std::string iface = eal::af_xdp_interface(port);
        if (iface.empty()) continue;
        // A vdev naming a program of its own: the user's choice, not DPDK's default.
        const bool named_program = !eal::devarg_values(port, "xdp_prog").empty();
        if (std::ranges::find(seen, iface) != seen.end()) {  // one vdev per queue: again
            if (named_program) std::erase(unsteered_, iface);
            continue;
        }
        seen.push_back(iface);
        if (auto program = SteerProgram::attached_to(iface)) {
            program->set_filter(filter_);
            interfaces_.push_back({iface, std::move(program)});
        } else if (!named_program) {
            unsteered_.push_back(iface);
        }
    }
}

std::string Steering::describe() const {
    std::string s;
    for (const Interface& i : interfaces_)
        s += fmt::format("xdp steering on {}: program id {}, to the app: {}{}{}\n", i.name,
                         i.program->prog_id(), filter_.describe(),
                         filter_.rx_stamp ? ", each with its receive time" : "",
                         filter_.hook ? "; " + hook_.does : std::string());
    return s;
}

SteerCounters Steering::total() const {
    SteerCounters t;
    for (const Interface& i : interfaces_) t += i.program->total();
    return t;
}

std::string Steering::summary() const {
    std::string s;
    for (const Interface& i : interfaces_) {
        auto queues = i.program->queues();
        SteerCounters t;
        for (const auto& q : queues) t += q;
        s += fmt::format("  xdp {} (program id {}, {}): {}", i.name, i.program->prog_id(),
                         filter_.describe(), counters_text(t));
        if (queues.size() > 1)
            for (size_t q = 0; q < queues.size(); ++q)
                s += fmt::format("\n    queue {}: {}", q, counters_text(queues[q]));
        s += "\n";
    }
    if (!s.empty()) s.pop_back();
    return s;
}

nlohmann::json Steering::json() const {
    nlohmann::json j = total().json();
    j["filter"] = filter_.describe();
    j["rx_stamp"] = filter_.rx_stamp;
    if (!hook_.json_key.empty()) j[hook_.json_key] = filter_.hook;
    j["interfaces"] = nlohmann::json::object();
    for (const Interface& i : interfaces_) {
        auto queues = i.program->queues();
        SteerCounters t;
        nlohmann::json qs = nlohmann::json::array();
        for (size_t q = 0; q < queues.size(); ++q) {
            t += queues[q];
            nlohmann::json qj = queues[q].json();
            qj["queue"] = q;
            qs.push_back(qj);
        }
        nlohmann::json ij = t.json();
        ij["prog_id"] = i.program->prog_id();
        ij["queues"] = qs;
        j["interfaces"][i.name] = ij;
    }
    return j;
}

nlohmann::json Steering::telemetry() const {
    nlohmann::json j = total().json();
    j["filter"] = filter_.describe();
    for (const Interface& i : interfaces_) {
        nlohmann::json r = nlohmann::json::array(), p = nlohmann::json::array(),
                       u = nlohmann::json::array(), t = nlohmann::json::array();
        for (const SteerCounters& q : i.program->queues()) {
            r.push_back(q.redirected);
            p.push_back(q.passed);
            u.push_back(q.unclaimed);
            t.push_back(q.turned);
        }
        j[i.name + "_queues_redirected"] = r;
        j[i.name + "_queues_passed"] = p;
        j[i.name + "_queues_unclaimed"] = u;
        if (filter_.hook) j[i.name + "_queues_turned"] = t;
    }
    return j;
}

}  // namespace linerate::xdp
