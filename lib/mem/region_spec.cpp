#include "mem/region_spec.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace linerate::mem {

namespace {

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    size_t e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

bool valid_alias_name(const std::string& name) {
    if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0]))) return false;
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
    return true;
}

}  // namespace

size_t parse_byte_size(const std::string& text) {
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
        throw RegionError("bad size '" + text + "'");
    size_t pos = 0;
    unsigned long long v = 0;
    try {
        v = std::stoull(text, &pos);
    } catch (const std::out_of_range&) {
        throw RegionError("size out of range: '" + text + "' (at most 1 PiB)");
    }
    std::string suffix = text.substr(pos);
    unsigned shift = 0;
    if (suffix == "" || suffix == "B")
        shift = 0;
    else if (suffix == "K" || suffix == "k" || suffix == "KiB")
        shift = 10;
    else if (suffix == "M" || suffix == "m" || suffix == "MiB")
        shift = 20;
    else if (suffix == "G" || suffix == "g" || suffix == "GiB")
        shift = 30;
    else
        throw RegionError("bad size suffix in '" + text + "' (use K, M or G)");
    if (v == 0 || v > (kMaxRegionBytes >> shift))
        throw RegionError("size out of range: '" + text + "' (at most 1 PiB)");
    return size_t(v << shift);
}

RegionSpec parse_region_spec(const std::string& text) {
    RegionSpec spec;
    spec.text = text;
    auto colon = text.find(':');
    if (colon == std::string::npos)
        throw RegionError("bad region '" + text + "': expected " + region_syntax() +
                          " or an alias");
    std::string kind = text.substr(0, colon);
    std::string rest = text.substr(colon + 1);
    if (kind == "socket") {
        if (rest.empty() || rest.size() > 3 ||
            rest.find_first_not_of("0123456789") != std::string::npos)
            throw RegionError("bad region '" + text + "': socket:N needs a NUMA node number");
        spec.kind = RegionKind::socket;
        spec.socket = std::stoi(rest);
    } else if (kind == "pages") {
        if (rest == "4k" || rest == "4K")
            spec.kind = RegionKind::pages_4k;
        else if (rest == "thp")
            spec.kind = RegionKind::pages_thp;
        else
            throw RegionError("bad region '" + text + "': pages:4k or pages:thp");
    } else if (kind == "file") {
        spec.kind = RegionKind::file;
        auto comma = rest.find(',');
        spec.path = rest.substr(0, comma);
        if (spec.path.empty()) throw RegionError("bad region '" + text + "': file: needs a path");
        while (comma != std::string::npos) {
            auto next = rest.find(',', comma + 1);
            std::string opt = rest.substr(comma + 1, next - comma - 1);
            if (opt.rfind("size=", 0) == 0)
                spec.size = parse_byte_size(opt.substr(5));
            else if (opt == "create")
                spec.create = true;
            else
                throw RegionError("bad region '" + text + "': unknown option '" + opt +
                                  "' (size=BYTES or create)");
            comma = next;
        }
    } else {
        throw RegionError("bad region '" + text + "': unknown kind '" + kind + "'");
    }
    return spec;
}

void RegionCatalog::define(const std::string& definition) {
    auto eq = definition.find('=');
    if (eq == std::string::npos)
        throw RegionError("bad region alias '" + definition + "': expected NAME=SPEC");
    std::string name = trim(definition.substr(0, eq));
    if (!valid_alias_name(name)) throw RegionError("bad region alias name '" + name + "'");
    RegionSpec spec = parse_region_spec(trim(definition.substr(eq + 1)));
    spec.alias = name;
    aliases_[name] = spec;
}

void RegionCatalog::load_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw RegionError("cannot read regions file '" + path + "'");
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        line = trim(line.substr(0, line.find('#')));
        if (line.empty()) continue;
        try {
            define(line);
        } catch (const RegionError& e) {
            throw RegionError(path + ":" + std::to_string(n) + ": " + e.what());
        }
    }
}

RegionSpec RegionCatalog::resolve(const std::string& text) const {
    if (text.empty()) return RegionSpec{};
    if (auto it = aliases_.find(text); it != aliases_.end()) return it->second;
    if (text.find(':') == std::string::npos && valid_alias_name(text))
        throw RegionError("unknown region alias '" + text + "' (define it with --region " + text +
                          "=SPEC)");
    return parse_region_spec(text);
}

void check_region_file(const RegionSpec& spec) {
    if (spec.kind != RegionKind::file || spec.create) return;
    struct stat st {};
    if (stat(spec.path.c_str(), &st) != 0)
        throw RegionError("region " + spec.text + ": " + spec.path + ": " + std::strerror(errno) +
                          " (add ,create to create it)");
}

const RegionKindInfo& region_kind_info(RegionKind kind) {
    for (const RegionKindInfo& k : kRegionKinds)
        if (k.kind == kind) return k;
    throw std::logic_error("a region kind missing from kRegionKinds");
}

std::string region_syntax() {
    std::string s;
    for (const RegionKindInfo& k : kRegionKinds)
        s += (s.empty() ? "" : ", ") + std::string(k.syntax);
    return s;
}

std::string describe_kind(RegionKind kind) {
    return std::string(region_kind_info(kind).name);
}

}  // namespace linerate::mem
