#pragma once
// nfv's own command-line options (Click's CheckIPHeader keywords and the app's I/O choices),
// what they make of the kernel's Config, and the effective configuration as JSON.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nfv/check_ip_header.hpp"
#include "runtime/datapath_choice.hpp"
#include "runtime/forward_mode.hpp"

namespace linerate::nfv {

struct Options {
    bool no_checksum = false;
    bool pass_non_ip = false;
    bool verbose = false;
    // Set only when given: Click's keywords replace what INTERFACES or the default put there.
    std::optional<std::vector<uint32_t>> bad_src;
    std::optional<std::vector<uint32_t>> good_dst;
    std::optional<Interfaces> interfaces;
    std::string interfaces_text;  // as given, for the config report
    std::optional<uint16_t> bad_port;
    ForwardChoice forward;    // --forward, --mac-swap, --no-mac-swap
    DatapathChoice datapath;  // --datapath, --xdp-mode

    // The option group (cli::OptionGroup). A bad list or prefix, or --interfaces with
    // --bad-src/--good-dst, fails the parse itself, so it gets the one-line error and exit 2 of
    // every other bad value, before the EAL starts: check() has nothing left.
    void add(CLI::App& app);
    void check() const {}
    // What parsing cannot see, against the started workers and ports in use (AppInfo::
    // check_ports): --forward's pairing, --bad-port one of the ports (else cli::UsageError, exit
    // 2); a worker with no queue on the bad port gets a warning (it frees its bad frames).
    void check_against(const std::vector<worker::WorkerSlot>& slots,
                       const std::vector<uint16_t>& ports) const;
    // Its option the XDP program cannot serve on an interface (it drops bad frames, diverts and
    // logs none), "" when none is given.
    const char* not_on_xdp_interface() const;
};

// Click's order: INTERFACES sets bad sources and good destinations, then BADSRC and GOODDST
// replace them when given.
Config make_config(const Options& options);

// The effective configuration: for the JSON's "nfv" object and /linerate/nfv/config.
nlohmann::json config_json(const Options& options, const CheckIpHeader& check);

}  // namespace linerate::nfv
