#include "support/netns.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "pkt/address.hpp"

namespace linerate::test {

namespace {

std::atomic<unsigned> g_serial{0};

// A name unique across the tests running at the same time: pid and a per-process serial.
std::string unique_name(const std::string& tag) {
    return "lr" + std::to_string(getpid()) + "_" + std::to_string(g_serial++) + tag;
}

std::string ip_binary() {
    for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"})
        if (access(p, X_OK) == 0) return p;
    return "";
}

std::string checked(const std::string& cmd) {
    ShellResult r = shell(cmd);
    if (r.status != 0)
        throw std::runtime_error("`" + cmd + "` exited " + std::to_string(r.status) + ": " + r.out);
    return r.out;
}

std::string mac_of(const NetNs& ns, const std::string& ifname) {
    std::string out = ns.run("cat /sys/class/net/" + ifname + "/address");
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

}  // namespace

ShellResult shell(const std::string& shell_command) {
    ShellResult r;
    std::string cmd = shell_command + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int status = pclose(p);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

std::string netns_unavailable() {
    static std::once_flag once;
    static std::string why;
    std::call_once(once, [] {
        if (geteuid() != 0) {
            why = "needs root to create network namespaces";
            return;
        }
        if (ip_binary().empty()) {
            why = "no `ip` command (iproute2)";
            return;
        }
        std::string probe = unique_name("probe");
        ShellResult r = shell(ip_binary() + " netns add " + probe);
        if (r.status != 0) {
            why = "cannot create a network namespace: " + r.out;
            return;
        }
        shell(ip_binary() + " netns del " + probe);
    });
    return why;
}

NetNs::NetNs(const std::string& tag) : name_(unique_name(tag)) {
    checked(ip_binary() + " netns add " + name_);
    // Quiet interfaces: without IPv6 the kernel sends nothing unasked, so counts are exact. The
    // README tells users to do the same for exact counts (Launching: "The host's stack also
    // speaks on its own").
    run("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 && " +
        ip_binary() + " link set lo up");
}

NetNs::~NetNs() {
    shell(ip_binary() + " netns del " + name_);
}

ShellResult NetNs::try_run(const std::string& shell_command) const {
    std::string quoted;
    for (char c : shell_command) {
        if (c == '\'')
            quoted += "'\\''";
        else
            quoted += c;
    }
    return shell(ip_binary() + " netns exec " + name_ + " sh -c '" + quoted + "'");
}

std::string NetNs::run(const std::string& shell_command) const {
    ShellResult r = try_run(shell_command);
    if (r.status != 0)
        throw std::runtime_error("in netns " + name_ + ": `" + shell_command + "` exited " +
                                 std::to_string(r.status) + ": " + r.out);
    return r.out;
}

std::vector<std::string> NetNs::wrap(const std::vector<std::string>& argv) const {
    std::vector<std::string> w = {ip_binary(), "netns", "exec", name_};
    w.insert(w.end(), argv.begin(), argv.end());
    return w;
}

int NetNs::open_fd() const {
    std::string path = "/run/netns/" + name_;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("open " + path + ": " + std::strerror(errno));
    return fd;
}

namespace {

// Runs fn on a short-lived thread that entered `ns` (setns changes only the calling thread's
// namespace; sockets created there keep it). fn returns an error text, or "" on success; throws
// with it.
void in_namespace(const NetNs& ns, const std::function<std::string()>& fn) {
    std::string error;
    int ns_fd = ns.open_fd();
    std::thread([&] {
        error =
            setns(ns_fd, CLONE_NEWNET) != 0 ? std::string("setns: ") + std::strerror(errno) : fn();
    }).join();
    close(ns_fd);
    if (!error.empty()) throw std::runtime_error(error);
}

// Turns an offload of a veth end off, as `ethtool -K IF <feature> off` does (cmd: ETHTOOL_STXCSUM
// for `tx`, ETHTOOL_STSO for `tso`).
void offload_off(const NetNs& ns, const std::string& ifname, uint32_t cmd, const char* what) {
    in_namespace(ns, [&]() -> std::string {
        const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ethtool_value off{cmd, 0};
        ifreq ifr{};
        std::snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname.c_str());
        ifr.ifr_data = reinterpret_cast<char*>(&off);
        std::string error;
        if (fd < 0 || ioctl(fd, SIOCETHTOOL, &ifr) != 0)
            error = std::string(what) + " off on " + ifname + ": " + std::strerror(errno);
        if (fd >= 0) close(fd);
        return error;
    });
}

}  // namespace

VethPair::VethPair(const NetNs& app, const NetNs& peer, const VethOptions& options) {
    std::string base = unique_name("");
    app_if = base + "a";
    peer_if = base + "b";
    if (app_if.size() >= IFNAMSIZ) throw std::runtime_error("interface name too long: " + app_if);
    std::string q = " numrxqueues " + std::to_string(options.queues) + " numtxqueues " +
                    std::to_string(options.queues);
    std::string ip = ip_binary();
    checked(ip + " link add " + app_if + q + " netns " + app.name() + " type veth peer name " +
            peer_if + q + " netns " + peer.name());
    std::string mtu = std::to_string(options.mtu);
    app.run(ip + " link set " + app_if + " mtu " + mtu + " up");
    peer.run(ip + " link set " + peer_if + " mtu " + mtu + " up");
    // TX checksum offload off: the kernel completes every UDP/TCP checksum before the frame
    // crosses, as on a real wire (and TCP segmentation offload goes with it).
    if (options.full_tx_checksums) {
        offload_off(app, app_if, ETHTOOL_STXCSUM, "TX checksum offload");
        offload_off(peer, peer_if, ETHTOOL_STXCSUM, "TX checksum offload");
    }
    if (options.peer_tso_off) offload_off(peer, peer_if, ETHTOOL_STSO, "TCP segmentation offload");
    app_mac = mac_of(app, app_if);
    peer_mac = mac_of(peer, peer_if);
}

std::vector<uint8_t> VethPair::app_mac_bytes() const {
    return parse_mac(app_mac);
}
std::vector<uint8_t> VethPair::peer_mac_bytes() const {
    return parse_mac(peer_mac);
}

std::vector<uint8_t> parse_mac(const std::string& text) {
    const size_t end = text.find_last_not_of(" \n");  // as read from /sys/class/net/IF/address
    std::optional<pkt::MacAddr> mac =
        pkt::parse_mac(std::string_view(text).substr(0, end == std::string::npos ? 0 : end + 1));
    if (!mac) throw std::runtime_error("not a MAC address: " + text);
    return {mac->begin(), mac->end()};
}

RawSocket::RawSocket(const NetNs& ns, const std::string& ifname) {
    try {
        in_namespace(ns, [&]() -> std::string {
            fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
            if (fd_ < 0) return std::string("socket(AF_PACKET): ") + std::strerror(errno);
            sockaddr_ll addr{};
            addr.sll_family = AF_PACKET;
            addr.sll_protocol = htons(ETH_P_ALL);
            addr.sll_ifindex = int(if_nametoindex(ifname.c_str()));
            if (addr.sll_ifindex == 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr))
                return "bind to " + ifname + ": " + std::strerror(errno);
            int big = 8 << 20;
            setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
            setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
            return {};
        });
    } catch (...) {
        if (fd_ >= 0) close(fd_);
        throw;
    }
}

RawSocket::~RawSocket() {
    if (fd_ >= 0) close(fd_);
}

void RawSocket::send(const std::vector<uint8_t>& frame) {
    ssize_t n = ::send(fd_, frame.data(), frame.size(), 0);
    if (n != ssize_t(frame.size()))
        throw std::runtime_error("raw send of " + std::to_string(frame.size()) +
                                 " B: " + std::strerror(errno));
}

std::optional<std::vector<uint8_t>> RawSocket::receive(double timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    std::vector<uint8_t> buf(65536);
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
        if (left < 0) return std::nullopt;
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, int(left)) <= 0) continue;
        sockaddr_ll from{};
        socklen_t len = sizeof from;
        ssize_t n = recvfrom(fd_, buf.data(), buf.size(), MSG_TRUNC,
                             reinterpret_cast<sockaddr*>(&from), &len);
        if (n < 0) continue;
        if (from.sll_pkttype == PACKET_OUTGOING) continue;  // our own sends
        buf.resize(std::min<size_t>(size_t(n), buf.size()));
        return buf;
    }
}

std::vector<std::vector<uint8_t>> RawSocket::receive_frames(size_t count, double quiet_s) {
    std::vector<std::vector<uint8_t>> frames;
    while (frames.size() < count) {
        auto f = receive(quiet_s);
        if (!f) break;
        frames.push_back(std::move(*f));
    }
    return frames;
}

}  // namespace linerate::test
