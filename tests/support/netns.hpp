#pragma once
// Network namespaces, veth pairs and raw sockets for tests on kernel-backed ports.
//
//   if (std::string why = netns_unavailable(); !why.empty()) GTEST_SKIP() << why;
//   NetNs app("app"), peer("peer");            // "lr<pid>_<n>_app": unique across parallel tests
//   VethPair veth(app, peer, {.mtu = 9000});   // veth.app_if in `app`, veth.peer_if in `peer`, up
//   peer.run("ip addr add 10.0.0.2/24 dev " + veth.peer_if);   // any command, inside `peer`
//   RawSocket sock(peer, veth.peer_if);        // AF_PACKET socket bound to the peer end
//   sock.send(frame);  auto back = sock.receive_frames(1, 2.0);
//   run_process(app.wrap({binary("apps/l2reflect/l2reflect"), "--af-xdp", veth.app_if, ...}));
//
// Both ends have IPv6 disabled so the kernel sends nothing on its own (no router solicitations, no
// MLD): what a raw socket receives is what the test and the app made. Destructors remove the
// namespaces, which removes the veth pair with them. Every helper throws std::runtime_error
// (with the command's output) when a command fails; GoogleTest reports it as a failure.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace linerate::test {

// Empty when this process can create namespaces and veth pairs; otherwise why not (not root, no
// `ip`, namespaces refused). Checked once per process.
std::string netns_unavailable();

// Runs `shell_command` with sh -c; returns exit status and output (stdout + stderr).
struct ShellResult {
    int status = -1;
    std::string out;
};
ShellResult shell(const std::string& shell_command);

class NetNs {
  public:
    explicit NetNs(const std::string& tag);
    ~NetNs();
    NetNs(const NetNs&) = delete;
    NetNs& operator=(const NetNs&) = delete;

    const std::string& name() const { return name_; }
    // Runs a shell command inside the namespace; throws when it exits non-zero.
    std::string run(const std::string& shell_command) const;
    // Same, without throwing.
    ShellResult try_run(const std::string& shell_command) const;
    // argv that runs `argv` inside the namespace (`ip netns exec NAME ...`), for run_process.
    std::vector<std::string> wrap(const std::vector<std::string>& argv) const;
    // Opens a file descriptor on the namespace (for setns); the caller closes it.
    int open_fd() const;

  private:
    std::string name_;
};

struct VethOptions {
    unsigned mtu = 1500;
    unsigned queues = 1;  // RX and TX queues of each end (multi-queue AF_XDP)
    // TX checksum offload off on both ends (`ethtool -K IF tx off`, as docs/wire-formats.md
    // shows): the kernel completes every checksum, as on a real wire. Off by default: a veth as
    // users get it leaves UDP checksums of local senders to offload (the pseudo-header sum).
    bool full_tx_checksums = false;
    // TCP segmentation offload off on the peer's end (`ethtool -K IF tso off`): its kernel then
    // sends segments of the MTU, not 64 KiB ones, which an AF_PACKET reader would see whole
    // (README, Kernel-backed ports, tells users of net_af_packet to do the same).
    bool peer_tso_off = false;
};

// A veth pair with one end in each namespace, both up, otherwise as `ip link add` makes it.
// Interface names are unique per process.
struct VethPair {
    VethPair(const NetNs& app, const NetNs& peer, const VethOptions& options = {});
    std::string app_if, peer_if;
    std::string app_mac, peer_mac;  // "aa:bb:cc:dd:ee:ff"
    std::vector<uint8_t> app_mac_bytes() const;
    std::vector<uint8_t> peer_mac_bytes() const;
};

// An AF_PACKET raw socket bound to one interface of a namespace (created by a thread that entered
// the namespace with setns; the socket stays in that namespace and is used from any thread).
// Receives only frames arriving at the interface, not the ones it sends.
class RawSocket {
  public:
    RawSocket(const NetNs& ns, const std::string& ifname);
    ~RawSocket();
    RawSocket(const RawSocket&) = delete;
    RawSocket& operator=(const RawSocket&) = delete;

    void send(const std::vector<uint8_t>& frame);  // throws when the kernel refuses it
    // The next incoming frame, or nothing after timeout_s.
    std::optional<std::vector<uint8_t>> receive(double timeout_s);
    // Incoming frames until `count` arrived or nothing came for `quiet_s` seconds.
    std::vector<std::vector<uint8_t>> receive_frames(size_t count, double quiet_s);

  private:
    int fd_ = -1;
};

// "aa:bb:cc:dd:ee:ff" -> 6 bytes.
std::vector<uint8_t> parse_mac(const std::string& text);

}  // namespace linerate::test
