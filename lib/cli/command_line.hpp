#pragma once
// The command line every app shares: `APP [EAL args] -- [app args]`, the common options, and
// the error convention (one line on stderr, exit status 2; --help exits 0).
#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "linerate/message_auth.hpp"
#include "pkt/address.hpp"

namespace linerate::cli {

struct CommonOptions {
    // 64: the PMD's per-call work (its RX refill, the TX doorbell, the pool's cache) spread over
    // twice the frames of DPDK's examples' 32 (Pktgen-DPDK's default too); a burst is what is
    // there, so a light load does not wait for one to fill. An app whose stamps are per burst
    // keeps a shorter one (measured: docs/perf-notes, "The default burst: 64").
    unsigned burst = 64;
    double stats_period_s = 1.0;
    double duration_s = 0.0;
    std::string json_path;
    std::string netbuf;                    // region spec or alias; empty: the port's NUMA node
    std::vector<std::string> region_defs;  // NAME=SPEC
    std::string regions_file;
    std::string pcap;                 // IN[:OUT]
    std::vector<std::string> af_xdp;  // IFACE[,queues=N], repeatable
    std::string ports;                // "0,2" or empty for all
    std::string port_mask;
    bool promiscuous = false;
    unsigned rx_desc = 1024;
    unsigned tx_desc = 1024;
    unsigned tx_retries = 16;
    unsigned mbufs = 0;  // 0: sized from ports, queues, descriptors, burst and caches
    unsigned mbuf_cache = 256;
    unsigned mtu = 0;        // 0: the port's default
    unsigned mbuf_size = 0;  // mbuf data room; 0: fits one frame of the MTU (2176 by default)
    double link_wait_s = 5.0;
    std::string xdp_steer;  // app, ipv4, all, udp:PORT; empty: "app" (--af-xdp always steers)
    bool isolate = false;   // rte_flow isolated mode + a rule for the app's traffic (--isolate)
    std::string exception_path;  // "tap[:NAME]" or empty (frames the app does not serve: dropped)
    std::string metrics;         // HOST:PORT of the OpenMetrics endpoint, or empty: none

    // The option group (OptionGroup): add_common_options, check_common_options.
    void add(CLI::App& app);
    void check() const;
};

struct SplitArgs {
    std::string program;
    std::vector<std::string> eal;  // what stood before `--`
    std::vector<std::string> app;  // what stood after `--`, or everything when there was none
    bool had_separator = false;
};

SplitArgs split_args(int argc, const char* const* argv);

// An EAL option (e.g. `-l`, `--vdev=...`, `--no-huge`) found among app args, or "" if none;
// names `app_declares` says the app has (its own `--allow`) are not taken for the EAL's.
std::string find_eal_option(const std::vector<std::string>& app_args,
                            const std::function<bool(std::string_view)>& app_declares = {});

void add_common_options(CLI::App& app, CommonOptions& opts);

// A number within [min, max] that is finite: CLI::Range lets NaN through (every comparison with
// it is false), so `--duration nan` would mean "forever".
CLI::Validator finite_range(double min, double max);

// A dotted-quad IPv4 address (pkt::parse_ipv4): "bad IPv4 address 'TEXT'" otherwise.
CLI::Validator ipv4_address();

// --key FILE: the shared secret of a keyed service (lib/auth/message_mac.hpp), loaded and
// checked while parsing: a file others may read, or one that holds no key, is a usage error
// (one line, exit 2) that says what to do.
CLI::Option* add_key_option(CLI::App& app, std::optional<auth::Key>& key, const std::string& help);

// --allow CIDR[,...]: the IPv4 sources a service takes (pkt::Ipv4AllowList), each a.b.c.d/len
// or an address; repeatable.
CLI::Option* add_allow_option(CLI::App& app, pkt::Ipv4AllowList& allow, const std::string& help);

// A number within [min, max] whose default --help shows: the shape most of the apps' numeric
// options take. Integers are checked by CLI::Range, floating point by finite_range (no NaN).
template <typename T, typename Bound>
CLI::Option* add_bounded(CLI::App& app, const std::string& name, T& value, Bound min, Bound max,
                         const std::string& help) {
    CLI::Option* option = app.add_option(name, value, help);
    if constexpr (std::is_floating_point_v<Bound>)
        option->check(finite_range(min, max));
    else
        option->check(CLI::Range(min, max));
    return option->capture_default_str();
}

// An option naming one of a few values of `value`'s type (an enum): the names are checked (the
// help lists them, in `choices`' order) and the one given sets `value`; not given, it keeps its
// default.
template <typename T>
CLI::Option* add_choice(CLI::App& app, const std::string& name, T& value,
                        std::vector<std::pair<std::string, T>> choices, const std::string& help) {
    std::vector<std::string> names;
    for (const auto& choice : choices) names.push_back(choice.first);
    auto set = [&value, choices = std::move(choices)](const std::string& given) {
        for (const auto& [choice, meaning] : choices)
            if (choice == given) value = meaning;
    };
    return app.add_option_function<std::string>(name, set, help)->check(CLI::IsMember(names));
}

// Runs `add(app)` and puts the options it added under the heading `group` of --help; returns
// them (an app with several roles keeps each role's list to police which role an option
// belongs to).
template <typename Add>
std::vector<const CLI::Option*> add_group(CLI::App& app, const std::string& group, Add add) {
    const size_t before = app.get_options().size();
    add(app);
    const std::vector<CLI::Option*> all = app.get_options();
    std::vector<const CLI::Option*> added;
    for (size_t i = before; i < all.size(); ++i) added.push_back(all[i]->group(group));
    return added;
}

// The checksum flags of the apps that verify IPv4/UDP checksums:
// --no-verify-checksums (clears `verify`; `what` says what is then taken unverified) and
// --strict-checksums (sets `strict`: a UDP checksum the sender left to TX offload is bad, as on
// a real wire), which exclude each other.
void add_checksum_flags(CLI::App& app, bool& verify, bool& strict, const std::string& what);

// What the common options name that parsing alone cannot judge, checked before the EAL starts:
// --json writable, --mbufs large enough for --mbuf-cache. Throws std::invalid_argument with the
// line to print.
void check_common_options(const CommonOptions& opts);

// Throws std::invalid_argument naming `option` when `path` cannot be written (its directory is
// missing or not writable, or it is a directory). Creates nothing that was not there.
void check_writable(const std::string& path, const std::string& option);

// Parses app args into `app`. Prints help and exits 0 on --help; prints one line and exits 2
// on a bad option or value, or on an EAL option given without `--`.
SplitArgs parse_or_exit(CLI::App& app, int argc, const char* const* argv);

// A usage error: "program: message (see --help)" on stderr, exit 2.
[[noreturn]] void usage_error(const std::string& program, const std::string& message);
void print_usage_error(const std::string& program, const std::string& message);

// An option group: a struct that holds its options' values with their defaults, declares the
// options (add: names, help, single-value checks) and checks what no single option's check can
// see, across its options (check: throws std::invalid_argument with the line to print). A group
// may hold others (an app's options: the shared groups and its own) and check across them.
template <typename Group>
concept OptionGroup = requires(Group& group, CLI::App& app) {
    group.add(app);
    group.check();
};

// The one way an app reads its command line: adds `groups`' options to `app` in the order given
// (the order --help lists them), parses as above, then runs each group's check in the same
// order: a failed check is one line and exit 2, before anything starts.
template <OptionGroup... Groups>
SplitArgs parse_or_exit(CLI::App& app, int argc, const char* const* argv, Groups&... groups) {
    (groups.add(app), ...);
    SplitArgs split = parse_or_exit(app, argc, argv);
    try {
        (groups.check(), ...);
    } catch (const std::invalid_argument& e) {
        usage_error(app.get_name(), e.what());
    }
    return split;
}

// Who else is told the error line a run ends with (the runtime: a service manager's STATUS=,
// runtime/service_notify.hpp), the line without its newline. Set once, before main.
using ErrorLineListener = void (*)(const std::string& line);
void set_error_line_listener(ErrorLineListener listener);

// A usage error found once the runtime started (Runtime::run_app ends the run on it with
// exit 2): what() is the message.
struct UsageError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// Port list from --ports "0,1,3" or -p hex mask; empty means all ports.
std::vector<uint16_t> parse_port_list(const CommonOptions& opts);

}  // namespace linerate::cli
