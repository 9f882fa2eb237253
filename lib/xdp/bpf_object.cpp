#include "xdp/bpf_object.hpp"

#include <filesystem>
#include <system_error>
#include <vector>

namespace linerate::xdp {

std::string find_bpf_object(const std::string& name) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::vector<fs::path> candidates;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        candidates.push_back(exe.parent_path() / name);
        candidates.push_back(exe.parent_path() / LINERATE_BPF_FROM_BIN / name);  // installed
    }
    candidates.push_back(fs::path(LINERATE_BPF_BUILD_DIR) / name);
    for (const fs::path& p : candidates)
        if (fs::exists(p, ec)) return p.string();
    return {};
}

}  // namespace linerate::xdp
