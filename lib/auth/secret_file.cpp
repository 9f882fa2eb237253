#include "auth/secret_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace linerate::auth {

std::string_view trim_space(std::string_view s) {
    const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

std::string read_secret_file(const std::string& path, std::string_view what, size_t max_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        throw SecretFileError(
            fmt::format("cannot open {} {}: {}", what, path, std::strerror(errno)));
    struct stat st {};
    std::string refusal;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        refusal = fmt::format("{} {} is not a regular file", what, path);
    else if (st.st_mode & 077)
        refusal = fmt::format("{} {} is accessible by group or others (mode {:04o}): chmod 600 {}",
                              what, path, st.st_mode & 07777, path);
    else if (size_t(st.st_size) > max_bytes)
        refusal = fmt::format("{} {} is larger than {} bytes", what, path, max_bytes);
    std::string text(refusal.empty() ? size_t(st.st_size) : 0, '\0');
    ssize_t n = 0;
    while (refusal.empty() && size_t(n) < text.size()) {
        const ssize_t got = ::read(fd, text.data() + n, text.size() - size_t(n));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            refusal = fmt::format("cannot read {} {}: {}", what, path, std::strerror(errno));
        if (got <= 0) break;
        n += got;
    }
    ::close(fd);
    if (!refusal.empty()) throw SecretFileError(refusal);
    text.resize(size_t(n));  // a file that shrank while read
    return text;
}

}  // namespace linerate::auth
