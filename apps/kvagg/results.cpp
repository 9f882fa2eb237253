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

}  // namespace linerate::kvagg
