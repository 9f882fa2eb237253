#include "eal/af_xdp_ports.hpp"

#include <fmt/core.h>
#include <net/if.h>
#include <rte_bus_vdev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <xdp/libxdp.h>

#include "eal/eal.hpp"
#include "eal/port.hpp"

#include <dirent.h>
#include <linux/if_xdp.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace linerate::eal {

AfXdpSpec parse_af_xdp_spec(const std::string& spec) {
    AfXdpSpec s;
    auto comma = spec.find(',');
    s.iface = spec.substr(0, comma);
    if (s.iface.empty() || s.iface.size() >= IF_NAMESIZE ||
        s.iface.find_first_of("=: ") != std::string::npos)
        throw std::invalid_argument("--af-xdp needs an interface name: IFACE[,queues=N]");
    if (comma == std::string::npos) return s;
    std::string opt = spec.substr(comma + 1);
    const std::string key = "queues=";
    if (opt.compare(0, key.size(), key) != 0)
        throw std::invalid_argument("--af-xdp " + spec + ": unknown option '" + opt +
                                    "' (IFACE[,queues=N])");
    std::string n = opt.substr(key.size());
    char* end = nullptr;
    unsigned long v = std::strtoul(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v < 1 || v > 64)
        throw std::invalid_argument("--af-xdp " + spec + ": queues must be 1..64");
    s.queues = unsigned(v);
    return s;
}

void check_af_xdp_interface(const AfXdpSpec& spec) {
    if (if_nametoindex(spec.iface.c_str()) == 0)
        throw std::invalid_argument(fmt::format(
            "--af-xdp {0}: there is no interface {0} here (`ip link` lists them)", spec.iface));
}

namespace {

// libxdp says this at every socket it adds to a program without a reference count (linerate's
// steering and datapath programs have none, on purpose: the process's BPF link holds them, and
// the kernel detaches them when it ends), on an interface where no other libxdp user is: to an
// operator it says nothing to act on.
constexpr std::string_view kRefcountWarning =
    "Another XSK socket was created by a version of libxdp that doesn't support program refcnt";

libxdp_print_fn_t g_libxdp_print = nullptr;  // libxdp's own printer

int libxdp_print(enum libxdp_print_level level, const char* format, va_list args) {
    if (level == LIBXDP_WARN &&
        std::string_view(format).find(kRefcountWarning) != std::string_view::npos)
        return 0;
    return g_libxdp_print ? g_libxdp_print(level, format, args) : 0;
}

void leave_out_refcount_warning() {
    static const bool set = [] {
        g_libxdp_print = libxdp_set_print(&libxdp_print);
        return true;
    }();
    (void)set;
}

}  // namespace

std::string af_xdp_devargs(const AfXdpSpec& spec, unsigned queue) {
    std::string args = fmt::format("iface={},start_queue={},queue_count=1", spec.iface, queue);
    for (const auto& extra : spec.devargs) args += "," + extra;
    return args;
}

std::vector<std::string> af_xdp_mode_eal_args(const std::vector<AfXdpSpec>& specs) {
    unsigned queues = 1;
    for (const auto& s : specs) queues = std::max(queues, s.queues);
    if (queues == 1) return default_eal_args("0", 512);  // the main lcore is the worker
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus.push_back(c);
    if (cpus.empty()) cpus.push_back(0);
    // lcore 0 is the main lcore (stats), lcores 1..N the workers.
    std::string lcores;
    for (unsigned l = 0; l <= queues; ++l)
        lcores += fmt::format("{}{}@{}", l ? "," : "", l, cpus[l % cpus.size()]);
    return default_eal_args(lcores, 512);
}

std::vector<AfXdpPort> create_af_xdp_ports(const std::vector<AfXdpSpec>& specs, unsigned workers) {
    std::vector<AfXdpPort> ports;
    if (!specs.empty()) leave_out_refcount_warning();
    for (const AfXdpSpec& spec : specs) {
        unsigned queues = spec.queues ? spec.queues : workers;
        for (unsigned q = 0; q < queues; ++q) {
            // vdev names must start with the driver's name; the rest only has to be unique.
            std::string name = fmt::format("net_af_xdp_lr{}", ports.size());
            std::string args = af_xdp_devargs(spec, q);
            if (int rc = rte_vdev_init(name.c_str(), args.c_str()); rc != 0)
                throw std::runtime_error(fmt::format(
                    "--af-xdp {}: cannot open queue {} ({}): {} (does the interface exist and "
                    "have that many queues? ethtool -l {})",
                    spec.iface, q, args, rte_strerror(rc < 0 ? -rc : rte_errno), spec.iface));
            uint16_t id;
            if (rte_eth_dev_get_port_by_name(name.c_str(), &id) != 0)
                throw std::runtime_error("--af-xdp: no port for " + name);
            ports.push_back({id, q, spec.iface});
        }
    }
    return ports;
}

std::string af_xdp_interface(uint16_t port_id) {
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port_id, &info) != 0 || !info.driver_name ||
        std::strcmp(info.driver_name, "net_af_xdp") != 0)
        return {};
    std::vector<std::string> iface = devarg_values(port_id, "iface");
    return iface.empty() ? std::string() : iface[0];
}

std::vector<int> af_xdp_socket_fds() {
    std::vector<int> fds;
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return fds;
    while (dirent* e = readdir(dir)) {
        char* end = nullptr;
        long fd = std::strtol(e->d_name, &end, 10);
        if (*end != '\0' || end == e->d_name || fd == dirfd(dir)) continue;
        int domain = 0;
        socklen_t len = sizeof domain;
        if (getsockopt(int(fd), SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_XDP)
            fds.push_back(int(fd));
    }
    closedir(dir);
    std::sort(fds.begin(), fds.end());
    return fds;
}

AfXdpSocketDrops af_xdp_socket_drops(const std::vector<int>& fds) {
    AfXdpSocketDrops d;
    for (int fd : fds) {
        xdp_statistics st{};
        socklen_t len = sizeof st;
        if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len) != 0) continue;
        d.rx_ring_full += st.rx_ring_full;
        d.rx_invalid += st.rx_invalid_descs;
        d.tx_invalid += st.tx_invalid_descs;
    }
    return d;
}

}  // namespace linerate::eal
