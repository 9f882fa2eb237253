#include "eal/eal.hpp"

#include <fcntl.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace linerate::eal {

namespace {

// DPDK's own lines (the EAL's, the PMDs') go to stderr only. Its default stream writes each to
// stderr and to syslog as well, so under systemd, where both reach the journal, every one was
// there twice. The user's --syslog (a facility) keeps DPDK's default.
void log_to_stderr_only(const std::vector<std::string>& args) {
    for (const std::string& a : args)
        if (a == "--syslog" || a.starts_with("--syslog=")) return;
    rte_openlog_stream(stderr);  // before rte_eal_init: its first lines too
}

}  // namespace

Eal::Eal(const std::vector<std::string>& args) {
    log_to_stderr_only(args);
    std::vector<std::string> copy = args;  // rte_eal_init may permute argv
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (rte_eal_init(int(copy.size()), argv.data()) < 0)
        // Some failures (e.g. the shared config) leave rte_errno at 0: the EAL's own lines say why.
        throw std::runtime_error(
            rte_errno != 0 ? std::string("EAL init failed: ") + rte_strerror(rte_errno)
                           : std::string("EAL init failed (see the EAL's messages above)"));
}

void check_file_prefix_free(const std::vector<std::string>& eal_args) {
    std::string prefix = "rte";
    for (size_t i = 0; i < eal_args.size(); ++i) {
        std::string_view a = eal_args[i];
        auto value = [&](std::string_view name) -> std::optional<std::string> {
            if (a.substr(0, name.size()) != name) return std::nullopt;
            if (a.size() == name.size() && i + 1 < eal_args.size()) return eal_args[i + 1];
            if (a.size() > name.size() && a[name.size()] == '=')
                return std::string(a.substr(name.size() + 1));
            return std::nullopt;
        };
        if (a == "--no-shconf" || a == "--in-memory") return;
        if (auto v = value("--proc-type"); v && *v != "primary") return;
        if (auto v = value("--file-prefix")) prefix = *v;
    }
    // Where DPDK 22.11 puts it (eal_create_runtime_dir): /var/run for root, else
    // $XDG_RUNTIME_DIR or /tmp; the primary holds a write lock on its `config` file.
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    std::string dir = getuid() == 0 ? "/var/run" : xdg ? xdg : "/tmp";
    std::string config = dir + "/dpdk/" + prefix + "/config";
    int fd = open(config.c_str(), O_RDONLY);
    if (fd < 0) return;  // no primary ever ran there
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    int rc = fcntl(fd, F_GETLK, &lock);
    close(fd);
    if (rc == 0 && lock.l_type != F_UNLCK)
        throw std::invalid_argument("another DPDK process (pid " + std::to_string(lock.l_pid) +
                                    ") runs with --file-prefix " + prefix +
                                    ": give this one its own --file-prefix NAME (before `--`)");
}

namespace {

// The devargs of each --vdev of `eal_args` ("--vdev=NAME,ARGS" or "--vdev" "NAME,ARGS") whose
// name starts with `driver`, as key -> value.
std::vector<std::map<std::string, std::string>> vdev_args(const std::vector<std::string>& eal_args,
                                                          std::string_view driver) {
    std::vector<std::map<std::string, std::string>> found;
    for (size_t i = 0; i < eal_args.size(); ++i) {
        std::string spec;
        if (eal_args[i].rfind("--vdev=", 0) == 0)
            spec = eal_args[i].substr(7);
        else if (eal_args[i] == "--vdev" && i + 1 < eal_args.size())
            spec = eal_args[i + 1];
        if (spec.rfind(driver, 0) != 0) continue;
        std::map<std::string, std::string> kv;
        std::stringstream items(spec);
        std::string item;
        std::getline(items, item, ',');  // the vdev's name
        while (std::getline(items, item, ',')) {
            const size_t eq = item.find('=');
            if (eq != std::string::npos) kv[item.substr(0, eq)] = item.substr(eq + 1);
        }
        found.push_back(kv);
    }
    return found;
}

// Whether `path` is a socket file no socket of this network namespace listens on: its server
// ended without removing it. Read from /proc/net/unix (flag __SO_ACCEPTCON: listening), not by
// connecting: a memif server that sees a client come and go at once can panic (DPDK 22.11).
bool stale_socket(const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
    std::ifstream sockets("/proc/net/unix");
    if (!sockets) return false;  // cannot tell: leave it
    std::string line;
    std::getline(sockets, line);  // the header
    while (std::getline(sockets, line)) {
        std::istringstream fields(line);
        std::string num, refs, protocol, flags, type, state, inode, bound;
        fields >> num >> refs >> protocol >> flags >> type >> state >> inode >> bound;
        constexpr unsigned long kAcceptCon = 0x10000;
        if (bound == path && (std::strtoul(flags.c_str(), nullptr, 16) & kAcceptCon)) return false;
    }
    return true;
}

}  // namespace

void remove_stale_memif_sockets(const std::vector<std::string>& eal_args) {
    for (const auto& kv : vdev_args(eal_args, "net_memif")) {
        const auto get = [&](const char* key, const char* otherwise) {
            const auto it = kv.find(key);
            return it == kv.end() ? std::string(otherwise) : it->second;
        };
        // DPDK 22.11's defaults: a server, on /run/memif.sock, abstract.
        if (get("role", "server") != "server" || get("socket-abstract", "yes") != "no") continue;
        const std::string path = get("socket", "/run/memif.sock");
        if (stale_socket(path)) unlink(path.c_str());
    }
}

Eal::~Eal() {
    rte_eal_cleanup();
}

PcapSpec parse_pcap_spec(const std::string& spec) {
    PcapSpec p;
    auto colon = spec.find(':');
    p.in = spec.substr(0, colon);
    if (colon != std::string::npos) p.out = spec.substr(colon + 1);
    if (p.in.empty()) throw std::invalid_argument("--pcap needs IN[:OUT]");
    // net_pcap's vdev arguments are comma-separated key=value pairs.
    if (spec.find_first_of(",=") != std::string::npos)
        throw std::invalid_argument("--pcap paths may not contain ',' or '='");
    return p;
}

std::vector<std::string> default_eal_args(const std::string& lcores, unsigned memory_mb) {
    // No telemetry: without shared config every such process would contend for the one default
    // socket, and a test run has nobody to answer it.
    return {"--lcores=" + lcores,
            "--no-huge",
            "-m",
            std::to_string(memory_mb),
            "--no-pci",
            "--no-shconf",
            "--no-telemetry",
            "--log-level=lib.eal:warning"};
}

std::vector<std::string> pcap_mode_eal_args(const std::string& pcap_spec, bool user_gave_eal) {
    return pcap_mode_eal_args(parse_pcap_spec(pcap_spec), user_gave_eal);
}

std::vector<std::string> pcap_mode_eal_args(const PcapSpec& p, bool user_gave_eal) {
    std::string vdev = std::string("--vdev=") + kPcapVdevName + ",rx_pcap=" + p.in;
    // Without tx_pcap, net_pcap 22.11 would need an interface; /dev/null discards.
    vdev += ",tx_pcap=" + (p.out.empty() ? std::string("/dev/null") : p.out);
    std::vector<std::string> args;
    if (!user_gave_eal) args = default_eal_args("0", 256);
    args.push_back(vdev);
    return args;
}

}  // namespace linerate::eal
