#include "l2reflect/memory_work_options.hpp"

#include <fmt/core.h>

#include <stdexcept>

#include "cli/command_line.hpp"
#include "mem/region.hpp"
#include "mem/region_spec.hpp"

namespace linerate::l2reflect {

namespace {

// --lookup-buffer SIZE: a byte count (K, M, G suffixes) of whole 8-byte slots within
// [kMinLookupBuffer, kMaxLookupBuffer]; the reason it is not, or "".
std::string lookup_buffer_error(const std::string& text) {
    try {
        const size_t bytes = mem::parse_byte_size(text);
        if (bytes < kMinLookupBuffer || bytes > kMaxLookupBuffer)
            return fmt::format("{} is outside {} .. {}", text, mem::format_bytes(kMinLookupBuffer),
                               mem::format_bytes(double(kMaxLookupBuffer)));
        if (bytes % kWordBytes != 0) return fmt::format("{} is not a multiple of 8 bytes", text);
    } catch (const mem::RegionError& e) {
        return e.what();
    }
    return {};
}

}  // namespace

const char* lookup_kind_name(LookupKind kind) {
    switch (kind) {
        case LookupKind::dependent:
            return "dependent";
        case LookupKind::independent:
            return "independent";
        case LookupKind::none:
            break;
    }
    return "none";
}

void MemoryWorkOptions::add(CLI::App& app) {
    MemoryWorkOptions& o = *this;
    cli::add_group(app, "Memory work (the DPA study's memory-bound reflector)", [&](CLI::App& a) {
        cli::add_bounded(a, "--touch", o.touch_pct, 0u, 100u,
                         "Read the first PCT % of each frame as little-endian 8-byte words and add "
                         "them up (whole words only: a tail under 8 bytes is not read); the sum "
                         "and the bytes read are in the JSON per worker. 0: off");
        cli::add_bounded(a, "--lookups", o.lookups, 0u, 4096u,
                         "N random 8-byte reads per frame from the lookup buffer (--lookup-kind), "
                         "their sum in the JSON per worker. 0: off");
        auto given = [&o] { o.lookup_details_given = true; };
        a.add_option_function<std::string>(
             "--lookup-buffer",
             [&o, given](const std::string& s) {
                 o.lookup_buffer_bytes = mem::parse_byte_size(s);
                 given();
             },
             "Size of the lookup buffer (K, M, G: powers of 1024), 4K .. 32G, whole 8-byte slots "
             "(default: 8M, as the study)")
            ->check(CLI::Validator(lookup_buffer_error, "SIZE"));
        a.add_option_function<std::string>(
            kLookupRegionFlag,
            [&o, given](const std::string& s) {
                o.lookup_region = s;
                given();
            },
            "Memory region of the lookup buffer, a spec as --netbuf's (" + mem::region_syntax() +
                ") or an alias (default: the port's NUMA node)");
        cli::add_choice(
            a, "--lookup-kind", o.lookup_kind,
            {{"dependent", LookupKind::dependent}, {"independent", LookupKind::independent}},
            "dependent (default): each read's address is the value the previous one "
            "read, one random cycle through the buffer, a chained lookup that waits "
            "on the memory's latency (the study's Fig. 11b); independent: random "
            "addresses the core may fetch in parallel")
            ->each([given](const std::string&) { given(); });
    });
}

void MemoryWorkOptions::check() const {
    if (lookup_details_given && lookups == 0)
        throw std::invalid_argument(
            "--lookup-buffer, --lookup-region and --lookup-kind need --lookups N (N > 0)");
}

}  // namespace linerate::l2reflect
