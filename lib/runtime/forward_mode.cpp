#include "runtime/forward_mode.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "cli/command_line.hpp"

namespace linerate {

const char* forward_mode_name(ForwardMode mode) {
    return mode == ForwardMode::pair ? "pair" : "reflect";
}

void ForwardChoice::add(CLI::App& app) {
    app.add_option_function<std::string>(
           "--forward",
           [this](const std::string& m) {
               mode = m == "pair" ? ForwardMode::pair : ForwardMode::reflect;
           },
           "reflect: send kept frames back out the port and queue they came in on; pair: out of "
           "the paired port (ports in use two by two: 1st <-> 2nd, 3rd <-> 4th), a bump in the "
           "wire (default: reflect)")
        ->check(CLI::IsMember({"reflect", "pair"}));
    auto* swap = app.add_flag_function(
        "--mac-swap", [this](int64_t) { mac_swap = true; },
        "Swap source and destination MAC of forwarded frames (default with --forward reflect)");
    auto* no_swap = app.add_flag_function(
        "--no-mac-swap", [this](int64_t) { mac_swap = false; },
        "Forward frames with their MACs unchanged (default with --forward pair)");
    swap->excludes(no_swap);
}

std::vector<worker::QueueRef> forward_tx_queues(const worker::WorkerSlot& slot, ForwardMode mode,
                                                const std::vector<uint16_t>& ports) {
    if (mode == ForwardMode::reflect) return slot.queues;
    if (ports.size() % 2 != 0)
        throw std::invalid_argument(fmt::format(
            "--forward pair needs an even number of ports, {} in use (choose them with --ports)",
            ports.size()));
    std::vector<worker::QueueRef> tx;
    for (const worker::QueueRef& q : slot.queues) {
        const size_t at = size_t(std::find(ports.begin(), ports.end(), q.port) - ports.begin());
        if (at == ports.size())
            throw std::invalid_argument(fmt::format("port {} is not a port in use", q.port));
        const uint16_t peer = ports[at ^ 1];
        const bool has_queue = std::any_of(
            slot.queues.begin(), slot.queues.end(),
            [&](const worker::QueueRef& o) { return o.port == peer && o.queue == q.queue; });
        if (!has_queue)
            throw std::invalid_argument(fmt::format(
                "--forward pair: worker {} polls port {} queue {} but port {} has no queue {} "
                "(the paired ports have different queue counts: use fewer lcores)",
                slot.index, q.port, q.queue, peer, q.queue));
        tx.push_back({peer, q.queue});
    }
    return tx;
}

// forward_tx_queues for every worker up front, so a bad pairing is one line and exit 2 before
// anything runs.
void ForwardChoice::check_against(const std::vector<worker::WorkerSlot>& slots,
                                  const std::vector<uint16_t>& ports) const {
    try {
        for (const worker::WorkerSlot& slot : slots) forward_tx_queues(slot, mode, ports);
        // A worker with no queue at all still needs the count check.
        if (mode == ForwardMode::pair) forward_tx_queues({}, mode, ports);
    } catch (const std::invalid_argument& e) {
        throw cli::UsageError(e.what());
    }
}

}  // namespace linerate
