#include "xdp/datapath/datapath_program.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/core.h>
#include <linux/bpf.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "xdp/bpf_object.hpp"
#include "xdp/steer/steer_program.hpp"

namespace linerate::xdp {

namespace {

std::string errno_text(int err) {
    std::string s = std::strerror(err < 0 ? -err : err);
    if (err == -EPERM || err == EPERM) s += " (loading BPF programs needs root or CAP_BPF)";
    return s;
}

// Headroom and room to spare: the program only shortens frames, but the kernel writes the
// whole buffer it ran on (with its tail room) into data_out when asked for it.
constexpr uint32_t kOutSlack = 4096;

}  // namespace

const char* datapath_name(Datapath d) {
    return d == Datapath::xdp ? "xdp" : "dpdk";
}

const char* xdp_mode_name(XdpMode m) {
    return m == XdpMode::native ? "native" : m == XdpMode::generic ? "generic" : "auto";
}

namespace {

// Interface `ifname`'s ifreq as the socket ioctl `request` (SIOCGIF*) fills it, none when it has
// no such interface.
std::optional<ifreq> interface_request(const std::string& ifname, unsigned long request) {
    ifreq req{};
    if (ifname.empty() || ifname.size() >= sizeof req.ifr_name) return std::nullopt;
    std::memcpy(req.ifr_name, ifname.data(), ifname.size());
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::nullopt;
    const int rc = ioctl(fd, request, &req);
    close(fd);
    if (rc != 0) return std::nullopt;
    return req;
}

}  // namespace

std::optional<std::array<uint8_t, 6>> interface_mac(const std::string& ifname) {
    const std::optional<ifreq> req = interface_request(ifname, SIOCGIFHWADDR);
    if (!req) return std::nullopt;
    std::array<uint8_t, 6> mac;
    std::memcpy(mac.data(), req->ifr_hwaddr.sa_data, mac.size());
    return mac;
}

std::optional<uint32_t> interface_mtu(const std::string& ifname) {
    const std::optional<ifreq> req = interface_request(ifname, SIOCGIFMTU);
    if (!req) return std::nullopt;
    return uint32_t(req->ifr_mtu);
}

DatapathProgram::DatapathProgram(const std::string& object_name, const std::string& program,
                                 bool multi_buffer)
    : multi_buffer_(multi_buffer) {
    path_ = find_bpf_object(object_name);
    if (path_.empty())
        throw std::runtime_error("no " + object_name + " (build target linerate_bpf)");
    libbpf_set_print(nullptr);  // the verifier's log is not for users; the error says what failed
    object_ = bpf_object__open_file(path_.c_str(), nullptr);
    if (!object_) throw std::runtime_error(path_ + ": " + errno_text(errno));
    bpf_program* prog = bpf_object__find_program_by_name(object_, program.c_str());
    if (!prog) {
        bpf_object__close(object_);
        throw std::runtime_error(path_ + ": no program " + program);
    }
    const uint32_t flags = bpf_program__flags(prog) & ~uint32_t(BPF_F_XDP_HAS_FRAGS);
    bpf_program__set_flags(prog, flags | (multi_buffer ? BPF_F_XDP_HAS_FRAGS : 0));
    if (int err = bpf_object__load(object_)) {
        bpf_object__close(object_);
        throw std::runtime_error(fmt::format("cannot load {}: {}", path_, errno_text(err)));
    }
    prog_fd_ = bpf_program__fd(prog);
    // A program without them (lib/xdp/reflect/reflect.bpf.c, timed beside the apps') only runs.
    counters_fd_ = bpf_object__find_map_fd_by_name(object_, DP_COUNTERS_MAP);
    last_fd_ = bpf_object__find_map_fd_by_name(object_, DP_LAST_MAP);
}

DatapathProgram::~DatapathProgram() {
    detach();
    bpf_object__close(object_);
}

int DatapathProgram::map_fd(const char* name) const {
    const int fd = bpf_object__find_map_fd_by_name(object_, name);
    if (fd < 0) throw std::runtime_error(fmt::format("{}: no map {}", path_, name));
    return fd;
}

void DatapathProgram::set_config(uint32_t flags, const SteerFilter& serve) {
    // A program loaded multi-buffer must ask each frame's length: the flag goes with the load.
    config_.flags =
        (flags & ~uint32_t(DP_SERVES_EVERY_IPV4)) | (multi_buffer_ ? DP_MULTI_BUFFER : 0);
    // Worked out here once rather than per frame in the program (dp_serves_every_ipv4).
    const bool every_ipv4 = serve.mode == SteerMode::ipv4 || serve.mode == SteerMode::all;
    if (every_ipv4 && !(config_.flags & DP_ROUTE_FLAGS)) config_.flags |= DP_SERVES_EVERY_IPV4;
    config_.serve.mode = uint32_t(serve.mode);
    config_.serve.udp_port = serve.udp_port;
    write_config();
}

void DatapathProgram::write_config() {
    const uint32_t key = 0;
    if (int err = bpf_map_update_elem(map_fd(DP_CONFIG_MAP), &key, &config_, BPF_ANY))
        throw std::runtime_error("writing " DP_CONFIG_MAP ": " + errno_text(err));
}

void DatapathProgram::set_pair_port(const std::string& ifname) {
    const uint32_t key = 0, ifindex = if_nametoindex(ifname.c_str());
    if (ifindex == 0) throw std::runtime_error("no interface " + ifname);
    if (int err = bpf_map_update_elem(map_fd(DP_PAIR_MAP), &key, &ifindex, BPF_ANY))
        throw std::runtime_error(
            fmt::format("writing {} ({}): {}", DP_PAIR_MAP, ifname, errno_text(err)));
}

void DatapathProgram::set_app_config(const void* bytes, size_t size) {
    if (size > sizeof config_.app)
        throw std::runtime_error(
            fmt::format("{}: the app's config ({} bytes) outgrows dp_config's "
                        "{}",
                        path_, size, sizeof config_.app));
    std::memset(config_.app, 0, sizeof config_.app);
    std::memcpy(config_.app, bytes, size);
    write_config();
}

void DatapathProgram::update_map(const char* name, const void* key, const void* value) {
    if (int err = bpf_map_update_elem(map_fd(name), key, value, BPF_ANY))
        throw std::runtime_error(fmt::format("writing {}: {}", name, errno_text(err)));
}

TestRun DatapathProgram::test_run(const uint8_t* frame, uint32_t len, std::vector<uint8_t>& out) {
    // dp_last is one slot: a run and the read of its slot go together.
    const std::lock_guard<std::mutex> lock(test_run_mutex_);
    out.resize(len + kOutSlack);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_out = out.data(),
                .data_size_in = len, .data_size_out = uint32_t(out.size()), .repeat = 1);
    if (int err = bpf_prog_test_run_opts(prog_fd_, &opts))
        throw std::runtime_error(
            fmt::format("BPF_PROG_TEST_RUN of a {} B frame: {}", len, errno_text(err)));
    out.resize(opts.data_size_out);
    const uint32_t key = 0;
    uint32_t slot = 0;
    if (int err = last_fd_ < 0 ? -ENOENT : bpf_map_lookup_elem(last_fd_, &key, &slot))
        throw std::runtime_error("reading " DP_LAST_MAP ": " + errno_text(err));
    return {opts.retval, slot};
}

uint32_t DatapathProgram::ns_per_run(const std::vector<uint8_t>& frame, uint32_t repeat) {
    std::vector<uint8_t> out(frame.size() + kOutSlack);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_out = out.data(),
                .data_size_in = uint32_t(frame.size()), .data_size_out = uint32_t(out.size()),
                .repeat = int(repeat));
    if (int err = bpf_prog_test_run_opts(prog_fd_, &opts))
        throw std::runtime_error("BPF_PROG_TEST_RUN: " + errno_text(err));
    return opts.duration;
}

SlotTotals DatapathProgram::totals() const {
    const int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0) throw std::runtime_error("number of CPUs: " + errno_text(cpus));
    std::vector<dp_count> per_cpu(static_cast<size_t>(cpus));
    SlotTotals total;
    for (uint32_t slot = 0; slot < DP_SLOTS; ++slot) {
        if (int err = counters_fd_ < 0 ? -ENOENT
                                       : bpf_map_lookup_elem(counters_fd_, &slot, per_cpu.data()))
            throw std::runtime_error("reading " DP_COUNTERS_MAP ": " + errno_text(err));
        for (const dp_count& c : per_cpu) {
            total.packets[slot] += c.packets;
            total.bytes[slot] += c.bytes;
        }
    }
    return total;
}

namespace {

// The kernel driver of interface `ifname` ("veth", "mlx5_core", ...), "" when it does not say.
std::string driver_of(const std::string& ifname) {
    ethtool_drvinfo info{};
    info.cmd = ETHTOOL_GDRVINFO;
    ifreq req{};
    std::strncpy(req.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    req.ifr_data = reinterpret_cast<char*>(&info);
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) return {};
    const int rc = ioctl(fd, SIOCETHTOOL, &req);
    close(fd);
    return rc == 0 ? std::string(info.driver) : std::string();
}

// The mode auto chooses: veth's native XDP_TX hands the frame to the peer's NAPI, which a veth
// as `ip link add` makes it does not run (no GRO, no XDP program on the peer): the frame would
// be dropped. Generic XDP transmits through the stack, to any peer. A program that does not
// transmit is native (attach falls back to generic where the driver has no XDP).
XdpMode automatic_mode(const std::string& ifname, bool transmits) {
    return transmits && driver_of(ifname) == "veth" ? XdpMode::generic : XdpMode::native;
}

}  // namespace

XdpMode DatapathProgram::attach(const std::string& ifname, XdpMode mode, bool transmits) {
    const unsigned ifindex = if_nametoindex(ifname.c_str());
    if (ifindex == 0) throw std::runtime_error("no interface " + ifname);
    if (std::string why = xdp_program_in_the_way(ifname); !why.empty())
        throw std::runtime_error(why);
    const bool automatic = mode == XdpMode::automatic;
    if (automatic) mode = automatic_mode(ifname, transmits);
    for (;;) {
        LIBBPF_OPTS(bpf_link_create_opts, opts,
                    .flags = mode == XdpMode::native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
        link_fd_ = bpf_link_create(prog_fd_, int(ifindex), BPF_XDP, &opts);
        if (link_fd_ >= 0) return mode;
        const int err = -errno;
        // A driver without native XDP, or one whose MTU is too large for a single-buffer program
        // in native mode (veth: "Peer MTU is too large to set XDP"): generic, when the user left
        // the choice to the app.
        if (automatic && mode == XdpMode::native &&
            (err == -EOPNOTSUPP || err == -EINVAL || err == -ERANGE)) {
            mode = XdpMode::generic;
            continue;
        }
        throw std::runtime_error(fmt::format("cannot attach the XDP program to {} ({} mode): {}",
                                             ifname, xdp_mode_name(mode), errno_text(err)));
    }
}

void DatapathProgram::detach() {
    if (link_fd_ >= 0) close(std::exchange(link_fd_, -1));
}

uint32_t DatapathProgram::prog_id() const {
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(prog_fd_, &info, &len)) return 0;
    return info.id;
}

}  // namespace linerate::xdp
