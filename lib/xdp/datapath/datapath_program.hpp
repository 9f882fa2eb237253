#pragma once
// The apps' XDP datapath (issue 24), user-space side, plain libbpf, no EAL: --datapath, an app's
// XDP program (apps/<app>/xdp/*.bpf.c, e.g. <app>.bpf.o) loaded with its maps, its options written
// into dp_config (the app's own part and its own maps through set_app_config and update_map, from
// the app's code), one frame run through it with BPF_PROG_TEST_RUN, its per-CPU counters summed.

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "xdp/datapath/datapath_abi.h"
#include "xdp/steer/steer_program.hpp"

struct bpf_object;

namespace linerate::xdp {

enum class Datapath { dpdk, xdp };
// How the program is attached to an interface: automatic is native where the driver runs XDP
// and can transmit what it returns (not veth: see attach()), generic (skb) otherwise.
enum class XdpMode { automatic, native, generic };

const char* datapath_name(Datapath d);
const char* xdp_mode_name(XdpMode m);
// The MAC address of interface `ifname` (SIOCGIFHWADDR), none when it has no such interface.
std::optional<std::array<uint8_t, 6>> interface_mac(const std::string& ifname);
// The MTU of interface `ifname` (SIOCGIFMTU), none when it has no such interface.
std::optional<uint32_t> interface_mtu(const std::string& ifname);

// Frames of an interface with this MTU or less fit one buffer on every driver: the program is
// loaded without multi-buffer support (BPF_F_XDP_HAS_FRAGS), so the kernel hands it only
// linear frames (and refuses an MTU raise it could not keep so) and it skips the per-frame
// length helper (DP_MULTI_BUFFER: ~6 ns of a header check's 41, bench/run xdp-cost). Above it,
// multi-buffer.
constexpr uint32_t kSingleBufferMtu = 1500;
// Whether the program on an interface with MTU `mtu` takes multi-buffer frames.
constexpr bool multi_buffer_for_mtu(uint32_t mtu) {
    return mtu > kSingleBufferMtu;
}

// What one frame's run through the program gave.
struct TestRun {
    uint32_t action;  // XDP_TX, XDP_PASS, XDP_DROP, ...
    uint32_t slot;    // enum dp_slot (with DP_DROP_FIRST + reason for a drop)
};

// Frame counts by dp_slot, summed over CPUs.
using SlotCounts = std::array<uint64_t, DP_SLOTS>;
// Frames and their bytes by dp_slot (struct dp_count), summed over CPUs.
struct SlotTotals {
    SlotCounts packets{}, bytes{};
};

class DatapathProgram {
  public:
    // Loads bpf object `object_name` (find_bpf_object) and takes its program `program`, with
    // multi-buffer support (BPF_F_XDP_HAS_FRAGS) or without (the kernel then hands it linear
    // frames only); throws std::runtime_error saying why it cannot (no such file, not root,
    // verifier). A program without the datapath's maps (lib/xdp/reflect/reflect.bpf.c) loads too,
    // for ns_per_run only.
    DatapathProgram(const std::string& object_name, const std::string& program,
                    bool multi_buffer = true);
    ~DatapathProgram();
    DatapathProgram(const DatapathProgram&) = delete;
    DatapathProgram& operator=(const DatapathProgram&) = delete;

    const std::string& object_path() const { return path_; }
    bool multi_buffer() const { return multi_buffer_; }
    int program_fd() const { return prog_fd_; }
    // dp_config[0]: flags (enum dp_flag; DP_MULTI_BUFFER is added when the program was loaded
    // multi-buffer, DP_SERVES_EVERY_IPV4 where it holds) and the frames the app serves (the
    // others go to the kernel). Throws.
    void set_config(uint32_t flags, const SteerFilter& serve);
    // set_config serving every frame (the test mode, the benchmarks). Throws.
    void set_flags(uint32_t flags) { set_config(flags, {SteerMode::all, 0}); }
    // --forward pair: the interface the program sends what it keeps out of (dp_pair_port, with
    // DP_FORWARD_PAIR in the flags). Throws naming it when it cannot (no such interface).
    void set_pair_port(const std::string& ifname);
    // The app's own part of dp_config (dp_config.app, its layout the app's ABI header's): `size`
    // bytes, the rest zero. Throws when it does not fit.
    void set_app_config(const void* bytes, size_t size);
    // Entry `key` of the object's map `name` := `value` (the map's key and value sizes): an app's
    // own maps. Throws naming the map.
    void update_map(const char* name, const void* key, const void* value);

    // Runs the frame through the program once (BPF_PROG_TEST_RUN, DP_RECORD_LAST set): `out`
    // gets the frame as the program left it (trimmed, swapped). Throws when the kernel refuses.
    // Thread-safe (runs are serialized: the test mode's, not a fast path).
    TestRun test_run(const uint8_t* frame, uint32_t len, std::vector<uint8_t>& out);
    // Runs `frame` `repeat` times; the kernel's mean ns per run.
    uint32_t ns_per_run(const std::vector<uint8_t>& frame, uint32_t repeat);
    SlotCounts counts() const { return totals().packets; }
    SlotTotals totals() const;

    // Attaches the program to interface `ifname` with a BPF link (so the kernel detaches it when
    // the process ends, however it ends) and returns the mode it runs in. `transmits`: the
    // program returns XDP_TX, which automatic keeps off veth's native mode (automatic_mode); one
    // that only passes frames and redirects them to AF_XDP sockets runs native wherever the
    // driver has XDP, as the kernel's own choice would. Throws std::runtime_error naming the
    // interface when it cannot (no such interface, a program there already, the mode refused).
    XdpMode attach(const std::string& ifname, XdpMode mode, bool transmits = true);
    // Detaches it (closes the link); nothing when not attached.
    void detach();
    // The program's kernel id.
    uint32_t prog_id() const;
    // The fd of the object's map `name`. Throws naming it when the object has none.
    int map_fd(const char* name) const;

  private:
    // dp_config[0] := config_ (set_config and set_app_config each change a part of it).
    void write_config();

    std::string path_;
    bool multi_buffer_ = true;
    dp_config config_{};
    bpf_object* object_ = nullptr;
    int prog_fd_ = -1;
    int counters_fd_ = -1;
    int last_fd_ = -1;
    int link_fd_ = -1;
    std::mutex test_run_mutex_;
};

}  // namespace linerate::xdp
