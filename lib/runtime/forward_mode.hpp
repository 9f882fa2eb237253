#pragma once
// Where a forwarding app sends what it keeps: back out the port and queue it
// came in on (reflect), or out of the paired port (pair: the ports in use taken two by two,
// 1st <-> 2nd, 3rd <-> 4th, as testpmd's paired topology and l2fwd do), which makes the app a
// bump in the wire between two links. And whether it swaps the MACs on the way.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "worker/worker_map.hpp"

namespace linerate {

enum class ForwardMode { reflect, pair };

struct ForwardChoice {
    ForwardMode mode = ForwardMode::reflect;
    std::optional<bool> mac_swap;  // unset: swap when reflecting, leave unchanged when paired

    bool swaps_macs() const { return mac_swap.value_or(mode == ForwardMode::reflect); }

    // The option group (cli::OptionGroup): --forward reflect|pair, --mac-swap, --no-mac-swap
    // (which exclude each other: CLI11 refuses both at parse).
    void add(CLI::App& app);
    void check() const {}
    // The check parsing cannot do: --forward pair against the started runtime's workers and
    // ports in use (Runtime::port_ids(), in order), an odd count or a paired port without the
    // worker's queue. Throws cli::UsageError with the line (Runtime::run_app: exit 2). Wired as
    // AppInfo::check_ports.
    void check_against(const std::vector<worker::WorkerSlot>& slots,
                       const std::vector<uint16_t>& ports) const;
};

const char* forward_mode_name(ForwardMode mode);

// For each RX queue of `slot` (same order), the queue its kept frames go out on: the same one
// (reflect) or the worker's queue of the same index on the paired port (pair). `ports` are the
// ports in use, in order (Runtime::port_ids()). Throws std::invalid_argument, with the reason, when
// the ports cannot be paired: an odd count, or a paired port without the worker's queue.
std::vector<worker::QueueRef> forward_tx_queues(const worker::WorkerSlot& slot, ForwardMode mode,
                                                const std::vector<uint16_t>& ports);

}  // namespace linerate
