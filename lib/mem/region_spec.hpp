#pragma once
// Memory region specs (README.md "Memory regions"): socket:N, pages:4k, pages:thp,
// file:PATH[,size=BYTES][,create], or an alias defined with --region NAME=SPEC or a regions file.
// Parsing is plain code, testable without EAL.
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace linerate::mem {

enum class RegionKind { socket, pages_4k, pages_thp, file };

// Every region kind once: how it is written, what backs it, the page size objects are aligned
// to. The parser, the option help, describe_kind(), RegionSpec::page_size() and the test that
// holds README.md's region table to it read this list; a new kind is a line here, its case in
// parse_region_spec() and its backing in region.cpp (Region::Region).
struct RegionKindInfo {
    RegionKind kind;
    std::string_view name;    // describe_kind(): "pages:4k"
    std::string_view syntax;  // as the user writes it: "file:PATH[,size=BYTES][,create]"
    size_t page_size;         // alignment unit of what is placed in it (tables, pools)
};
inline constexpr RegionKindInfo kRegionKinds[] = {
    {RegionKind::socket, "socket", "socket:N", size_t(4) << 10},
    {RegionKind::pages_4k, "pages:4k", "pages:4k", size_t(4) << 10},
    {RegionKind::pages_thp, "pages:thp", "pages:thp", size_t(2) << 20},
    {RegionKind::file, "file", "file:PATH[,size=BYTES][,create]", size_t(4) << 10},
};
const RegionKindInfo& region_kind_info(RegionKind kind);
// "socket:N, pages:4k, pages:thp, file:PATH[,size=BYTES][,create]": the kinds, for help texts.
std::string region_syntax();

struct RegionSpec {
    RegionKind kind = RegionKind::socket;
    int socket = -1;      // socket: NUMA node; -1 = the port's node
    std::string path;     // file:
    size_t size = 0;      // file: bytes to map, 0 = the file's size
    bool create = false;  // file: create PATH when it does not exist (`,create`)
    std::string text;     // as written (after alias resolution)
    std::string alias;    // the alias name it was reached through, if any

    size_t page_size() const { return region_kind_info(kind).page_size; }
};

struct RegionError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// Parses one spec (not an alias). Throws RegionError naming what is wrong.
RegionSpec parse_region_spec(const std::string& text);

// Parses a byte count with an optional K/M/G suffix (powers of 1024), at most kMaxRegionBytes.
// Throws RegionError.
size_t parse_byte_size(const std::string& text);
// 1 PiB: far beyond any memory, and rounding it up to any page size cannot wrap.
inline constexpr size_t kMaxRegionBytes = size_t(1) << 50;

// A file: region whose path does not exist, without `,create`: RegionError (a mistyped path must
// not become a new file). Other kinds pass. Checked before the EAL starts.
void check_region_file(const RegionSpec& spec);

class RegionCatalog {
  public:
    // "NAME=SPEC"; throws RegionError.
    void define(const std::string& definition);
    // Lines "NAME = SPEC", '#' comments, blank lines. Throws RegionError with the line number.
    void load_file(const std::string& path);
    // A spec or an alias (aliases may not chain). Empty text means the port's socket.
    RegionSpec resolve(const std::string& text) const;

  private:
    std::map<std::string, RegionSpec> aliases_;
};

std::string describe_kind(RegionKind kind);

}  // namespace linerate::mem
