#include "nfv/options.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "cli/command_line.hpp"
#include "pkt/address.hpp"

namespace linerate::nfv {
namespace {

// A CLI11 check that runs one of the kernel's parsers: its message names the bad token.
template <class Parse>
CLI::Validator parses_as(const char* what, Parse parse) {
    return CLI::Validator(
        [parse](std::string& text) {
            try {
                parse(text);
                return std::string();
            } catch (const std::invalid_argument& e) {
                return std::string(e.what());
            }
        },
        what);
}

nlohmann::json address_list(const std::vector<uint32_t>& addrs) {
    nlohmann::json j = nlohmann::json::array();
    for (uint32_t a : addrs) j.push_back(pkt::format_ipv4(a));
    return j;
}

bool has_queue_on(const worker::WorkerSlot& slot, uint16_t port) {
    return std::any_of(slot.queues.begin(), slot.queues.end(),
                       [port](const worker::QueueRef& q) { return q.port == port; });
}

}  // namespace

void Options::check_against(const std::vector<worker::WorkerSlot>& slots,
                            const std::vector<uint16_t>& ports) const {
    forward.check_against(slots, ports);
    if (!bad_port) return;
    if (std::find(ports.begin(), ports.end(), *bad_port) == ports.end())
        throw cli::UsageError(fmt::format("--bad-port {}: not one of the ports in use", *bad_port));
    for (const worker::WorkerSlot& slot : slots)
        if (!slot.queues.empty() && !has_queue_on(slot, *bad_port))
            fmt::print(stderr,
                       "nfv: warning: worker {} has no queue on port {}, frees bad frames\n",
                       slot.index, *bad_port);
}

void Options::add(CLI::App& app) {
    Options& o = *this;
    app.add_flag("--no-checksum", o.no_checksum,
                 "Do not verify the IP header checksum (Click's CHECKSUM false, CheckIPHeader2)");
    app.add_option_function<std::string>(
           "--bad-src", [&o](const std::string& s) { o.bad_src = parse_ipv4_list(s); },
           "Comma-separated source addresses to drop (Click's BADSRC; replaces the default "
           "0.0.0.0,255.255.255.255; '' = none; not with --interfaces)")
        ->check(parses_as("LIST", parse_ipv4_list));
    app.add_option_function<std::string>(
           "--good-dst", [&o](const std::string& s) { o.good_dst = parse_ipv4_list(s); },
           "Comma-separated destinations for which a bad source is accepted (Click's GOODDST; "
           "not with --interfaces)")
        ->check(parses_as("LIST", parse_ipv4_list));
    app.add_option_function<std::string>(
           "--interfaces",
           [&o](const std::string& s) {
               // CLI11 runs option callbacks in the order the options were added: --bad-src
               // and --good-dst have been seen by now, whatever their place on the line.
               if (o.bad_src || o.good_dst)
                   throw CLI::ValidationError(
                       "--interfaces",
                       "cannot be combined with --bad-src or --good-dst: Click's CheckIPHeader "
                       "ignores BADSRC and GOODDST when INTERFACES is given; use --interfaces "
                       "alone, or list the addresses with --bad-src/--good-dst");
               o.interfaces = parse_interfaces(s);
               o.interfaces_text = s;
           },
           "Comma-separated a.b.c.d/len: each subnet broadcast becomes a bad source (with 0.0.0.0 "
           "and 255.255.255.255), each address a good destination (Click's INTERFACES; not with "
           "--bad-src or --good-dst, which Click ignores then)")
        ->check(parses_as("ADDR/LEN,...", parse_interfaces));
    app.add_flag("--pass-non-ip", o.pass_non_ip,
                 "Forward frames that are not IPv4 (MAC-swapped) instead of dropping them");
    forward.add(app);
    app.add_option_function<unsigned>(
           "--bad-port", [&o](unsigned p) { o.bad_port = uint16_t(p); },
           "Transmit invalid frames on this port (on the worker's own queue) instead of freeing "
           "them; they are still counted by reason, and as diverted")
        ->check(CLI::Range(0u, 65535u));
    app.add_flag("--verbose", o.verbose,
                 "Log the first invalid frame of each reason (reason, length, first bytes)");
    datapath.add(app);
}

const char* Options::not_on_xdp_interface() const {
    if (verbose) return "--verbose";
    return bad_port ? "--bad-port" : "";
}

Config make_config(const Options& o) {
    Config c;
    c.verify_checksum = !o.no_checksum;
    c.pass_non_ip = o.pass_non_ip;
    // --interfaces excludes --bad-src and --good-dst (add_options refuses both together).
    if (o.interfaces) {
        c.bad_src = o.interfaces->bad_src;
        c.good_dst = o.interfaces->good_dst;
    }
    if (o.bad_src) c.bad_src = *o.bad_src;
    if (o.good_dst) c.good_dst = *o.good_dst;
    return c;
}

nlohmann::json config_json(const Options& o, const CheckIpHeader& check) {
    nlohmann::json j;
    j["checksum"] = !o.no_checksum;
    j["pass_non_ip"] = o.pass_non_ip;
    j["forward"] = forward_mode_name(o.forward.mode);
    j["mac_swap"] = o.forward.swaps_macs();
    j["bad_src"] = address_list(check.bad_src());
    j["good_dst"] = address_list(check.good_dst());
    j["interfaces"] = o.interfaces_text;
    j["bad_port"] = o.bad_port ? nlohmann::json(*o.bad_port) : nlohmann::json(nullptr);
    j["verbose"] = o.verbose;
    return j;
}

}  // namespace linerate::nfv
