#include "xdp/steer/steer_program.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/core.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "xdp/steer/steer_abi.h"

namespace linerate::xdp {

namespace {

[[noreturn]] void fail(const std::string& what, int err) {
    throw std::runtime_error(fmt::format("{}: {}", what, std::strerror(err < 0 ? -err : err)));
}

// A file descriptor closed when it goes out of scope unless released.
struct Fd {
    int fd = -1;
    explicit Fd(int f) : fd(f) {}
    ~Fd() {
        if (fd >= 0) close(fd);
    }
    int release() { return std::exchange(fd, -1); }
};

}  // namespace

std::string SteerFilter::describe() const {
    switch (mode) {
        case SteerMode::none:
            return "nothing (every frame to the kernel)";
        case SteerMode::all:
            return "every frame";
        case SteerMode::ipv4:
            return "every IPv4 frame";
        case SteerMode::udp_port:
            return fmt::format("IPv4/UDP to port {}", udp_port);
    }
    return "?";
}

SteerFilter parse_steer_filter(const std::string& v, const SteerFilter& app_filter) {
    const bool stamp = app_filter.rx_stamp;
    if (v == "app") return app_filter;
    if (v == "ipv4") return {SteerMode::ipv4, 0, stamp};
    if (v == "all") return {SteerMode::all, 0, stamp};
    if (v.rfind("udp:", 0) == 0) {
        char* end = nullptr;
        unsigned long port = std::strtoul(v.c_str() + 4, &end, 10);
        if (v.size() > 4 && *end == '\0' && port >= 1 && port <= 65535)
            return {SteerMode::udp_port, uint16_t(port), stamp, app_filter.hook};
    }
    throw std::invalid_argument("bad --xdp-steer '" + v + "' (app, ipv4, all or udp:PORT)");
}

SteerCounters& SteerCounters::operator+=(const SteerCounters& o) {
    redirected += o.redirected;
    passed += o.passed;
    unclaimed += o.unclaimed;
    turned += o.turned;
    return *this;
}

nlohmann::json SteerCounters::json() const {
    return {{"redirected", redirected},
            {"passed", passed},
            {"unclaimed", unclaimed},
            {"turned", turned}};
}

uint32_t xdp_program_id(const std::string& ifname) {
    unsigned ifindex = if_nametoindex(ifname.c_str());
    if (ifindex == 0) fail("interface " + ifname, errno);
    uint32_t prog_id = 0;
    if (int err = bpf_xdp_query_id(int(ifindex), 0, &prog_id))
        fail("XDP program of " + ifname, err);
    return prog_id;
}

namespace {

// Whether a BPF link attaches program `prog_id` to the XDP hook of interface `ifindex`: the
// link belongs to a process and goes with it; a netlink attachment outlives its process.
bool held_by_link(unsigned ifindex, uint32_t prog_id) {
    uint32_t id = 0;
    while (bpf_link_get_next_id(id, &id) == 0) {
        Fd link(bpf_link_get_fd_by_id(id));
        if (link.fd < 0) continue;  // gone meanwhile
        bpf_link_info info{};
        uint32_t len = sizeof info;
        if (bpf_obj_get_info_by_fd(link.fd, &info, &len) == 0 && info.type == BPF_LINK_TYPE_XDP &&
            info.prog_id == prog_id && info.xdp.ifindex == ifindex)
            return true;
    }
    return false;
}

}  // namespace

std::string xdp_program_in_the_way(const std::string& ifname) {
    const uint32_t id = xdp_program_id(ifname);
    if (id == 0) return {};
    const std::string there = fmt::format("{} has an XDP program already (id {})", ifname, id);
    if (held_by_link(if_nametoindex(ifname.c_str()), id))
        return there + fmt::format(
                           ", held by a running process through a BPF link (another app on {}? "
                           "it goes when that process ends)",
                           ifname);
    const std::string off = fmt::format("`ip link set dev {} xdp off` removes it", ifname);
    if (SteerProgram::from_id(id))
        return there +
               ": linerate's steering program attached without a BPF link, which "
               "outlives its process (left by a linerate older than this one or by a "
               "vdev's xdp_prog=): " +
               off;
    return there +
           ", attached without a BPF link (another tool's, which stays after its "
           "process ends): " +
           off;
}

std::unique_ptr<SteerProgram> SteerProgram::attached_to(const std::string& ifname) {
    uint32_t prog_id = xdp_program_id(ifname);
    if (prog_id == 0) return nullptr;
    return from_id(prog_id);
}

std::unique_ptr<SteerProgram> SteerProgram::from_id(uint32_t prog_id) {
    Fd prog(bpf_prog_get_fd_by_id(prog_id));
    if (prog.fd < 0) fail(fmt::format("XDP program id {}", prog_id), errno);
    // First ask how many maps the program uses, then for their ids.
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(prog.fd, &info, &len)) fail("bpf program info", errno);
    std::vector<uint32_t> map_ids(info.nr_map_ids);
    uint32_t nr_map_ids = info.nr_map_ids;
    info = {};
    info.nr_map_ids = nr_map_ids;
    info.map_ids = reinterpret_cast<uint64_t>(map_ids.data());
    len = sizeof(info);
    if (bpf_obj_get_info_by_fd(prog.fd, &info, &len)) fail("bpf program maps", errno);

    Fd config(-1), counters(-1);
    for (uint32_t id : map_ids) {
        Fd map(bpf_map_get_fd_by_id(id));
        if (map.fd < 0) fail(fmt::format("bpf map id {}", id), errno);
        bpf_map_info mi{};
        uint32_t mlen = sizeof(mi);
        if (bpf_obj_get_info_by_fd(map.fd, &mi, &mlen)) fail("bpf map info", errno);
        if (std::strcmp(mi.name, STEER_CONFIG_MAP) == 0 && mi.type == BPF_MAP_TYPE_ARRAY &&
            mi.value_size == sizeof(steer_config))
            std::swap(config.fd, map.fd);
        else if (std::strcmp(mi.name, STEER_COUNTERS_MAP) == 0 &&
                 mi.type == BPF_MAP_TYPE_PERCPU_ARRAY && mi.value_size == sizeof(steer_counters))
            std::swap(counters.fd, map.fd);
    }
    if (config.fd < 0 || counters.fd < 0) return nullptr;
    return std::unique_ptr<SteerProgram>(
        new SteerProgram(prog_id, config.release(), counters.release()));
}

SteerProgram::~SteerProgram() {
    close(config_fd_);
    close(counters_fd_);
}

void SteerProgram::set_filter(const SteerFilter& f) {
    steer_config c{};
    c.mode = uint32_t(f.mode);
    c.udp_port = f.udp_port;
    c.flags = uint16_t((f.rx_stamp ? STEER_FLAG_RX_STAMP : 0) | (f.hook ? STEER_FLAG_HOOK : 0));
    uint32_t key = 0;
    if (bpf_map_update_elem(config_fd_, &key, &c, BPF_ANY)) fail("writing steer_config", errno);
}

SteerFilter SteerProgram::filter() const {
    steer_config c{};
    uint32_t key = 0;
    if (bpf_map_lookup_elem(config_fd_, &key, &c)) fail("reading steer_config", errno);
    return {SteerMode(c.mode), c.udp_port, (c.flags & STEER_FLAG_RX_STAMP) != 0,
            (c.flags & STEER_FLAG_HOOK) != 0};
}

std::vector<SteerCounters> SteerProgram::queues() const {
    int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0) fail("possible CPUs", cpus);
    std::vector<steer_counters> per_cpu(static_cast<size_t>(cpus));
    std::vector<SteerCounters> out;
    size_t used = 1;
    for (uint32_t q = 0; q < STEER_MAX_QUEUES; ++q) {
        if (bpf_map_lookup_elem(counters_fd_, &q, per_cpu.data()))
            fail("reading steer_counters", errno);
        SteerCounters sum;
        for (const steer_counters& c : per_cpu)
            sum += {c.redirected, c.passed, c.unclaimed, c.turned};
        out.push_back(sum);
        if (sum.redirected || sum.passed || sum.unclaimed || sum.turned) used = q + 1;
    }
    out.resize(used);
    return out;
}

SteerCounters SteerProgram::total() const {
    SteerCounters t;
    for (const SteerCounters& q : queues()) t += q;
    return t;
}

}  // namespace linerate::xdp
