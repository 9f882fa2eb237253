#pragma once
// l2reflect's memory work options (--touch, --lookups, --lookup-buffer, --lookup-region,
// --lookup-kind: memory_work.hpp), declared with their defaults and checks in one group. All
// off by default; off, the worker runs the plain reflector.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

#include "l2reflect/memory_work.hpp"

namespace linerate::l2reflect {

inline constexpr const char* kLookupRegionFlag = "--lookup-region";

struct MemoryWorkOptions {
    unsigned touch_pct = 0;                          // --touch: % of each frame read
    unsigned lookups = 0;                            // --lookups: reads per frame
    size_t lookup_buffer_bytes = size_t(8) << 20;    // --lookup-buffer: 8 MiB, as the study
    std::string lookup_region;                       // --lookup-region; empty: the port's node
    LookupKind lookup_kind = LookupKind::dependent;  // --lookup-kind
    bool lookup_details_given = false;  // --lookup-buffer, --lookup-region or --lookup-kind

    bool on() const { return touch_pct > 0 || lookups > 0; }
    // The option group (cli::OptionGroup): the five options under their --help heading, and
    // check(): a lookup detail without --lookups throws std::invalid_argument with the line.
    void add(CLI::App& app);
    void check() const;
    LookupKind kind() const { return lookups > 0 ? lookup_kind : LookupKind::none; }
    size_t lookup_slots() const { return lookup_buffer_bytes / kWordBytes; }
};

// The smallest and largest lookup buffer: a page, and 2^32 slots of 8 bytes (the chain's
// range, mem/pointer_chain.hpp).
inline constexpr size_t kMinLookupBuffer = size_t(4) << 10;
inline constexpr size_t kMaxLookupBuffer = (size_t(1) << 32) * kWordBytes;

const char* lookup_kind_name(LookupKind kind);

}  // namespace linerate::l2reflect
