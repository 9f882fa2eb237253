#include "kvagg/results.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace linerate::kvagg {

void write_dump(const std::string& path, std::span<const KeySum> sums) {
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
    if (!f) throw std::runtime_error(fmt::format("cannot write {}: {}", path, strerror(errno)));
    fmt::memory_buffer buf;
    for (const KeySum& ks : sums) {
        fmt::format_to(std::back_inserter(buf), "{},{}\n", ks.key, ks.sum);
        if (buf.size() > (1u << 20)) {
            std::fwrite(buf.data(), 1, buf.size(), f.get());
            buf.clear();
        }
    }
    std::fwrite(buf.data(), 1, buf.size(), f.get());
    if (std::ferror(f.get()) || std::fclose(f.release()) != 0)
        throw std::runtime_error(fmt::format("cannot write {}: {}", path, strerror(errno)));
}

nlohmann::json figures_json(const RunFigures& f) {
    const KvCounters& t = f.totals;
    return {{"tuples", f.tuples()},
            {"keys", f.keys},
            {"overflow", t.tuples_overflowed()},
            {"overflow_sum", t.overflow_sum},
            {"aggregated_sum", f.aggregated_sum},
            {"duplicates", t[KvVerdict::duplicate]},
            {"stale", t[KvVerdict::stale]},
            {"gaps_opened", f.gaps.opened},
            {"gaps_filled", f.gaps.filled},
            {"mtuples_per_s", f.mtuples_per_s()}};
}

std::string figures_line(const RunFigures& f) {
    const KvCounters& t = f.totals;
    return fmt::format(
        "  tuples {} ({:.3f} Mtuples/s), keys {}, overflow {} tuples (sum {}), aggregated sum "
        "{}, duplicates {}",
        f.tuples(), f.mtuples_per_s(), f.keys, t.tuples_overflowed(), t.overflow_sum,
        f.aggregated_sum, t[KvVerdict::duplicate]);
}

}  // namespace linerate::kvagg
