#pragma once
// clocksync's run-to-completion loops: the master answers requests on every queue of its worker;
// the client's worker 0 runs the session (RX -> on_frame, tick, probes -> TX) and publishes the
// synchronized clock; other client workers only drain their queues.
#include <rte_mempool.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "clocksync/background_load.hpp"
#include "clocksync/client_session.hpp"
#include "clocksync/clockbound.hpp"
#include "clocksync/cs_wire.hpp"
#include "clocksync/local_clock.hpp"
#include "clocksync/master_clock.hpp"
#include "clocksync/synced_clock.hpp"
#include "clocksync/time_export.hpp"
#include "pkt/build.hpp"
#include "runtime/forward_loop.hpp"
#include "runtime/mbuf_frame.hpp"
#include "runtime/runtime.hpp"
#include "runtime/rx_step.hpp"
#include "xdp/xdp_tx/xdp_transmitter.hpp"

namespace linerate::clocksync {

// The client's app counters (also top-level JSON keys).
#define LINERATE_CS_CLIENT_COUNTERS(X)                                                          \
    X(timeouts, "timeouts")                                                                     \
    X(responses, "responses")                                                                   \
    X(probe_alloc_failed, "probe alloc failed")                                                 \
    X(other_worker_frames, "other worker frames")                                               \
    X(background_frames, "background frames")   /* --background-pps frames sent */              \
    X(background_refused, "background refused") /* ... refused: full TX ring or short pool */   \
    X(udp_checksum_offloaded, "udp checksum offloaded") /* accepted, left to TX offload */      \
    X(warmups_refused, "warmups refused") /* --warmup-us frames the pool or TX ring refused */  \
    X(rx_stamps, "rx stamps")             /* answers whose t4 is the XDP hook's receive time */ \
    X(rx_stamps_refused, "rx stamps refused") /* stamps outside their probe's [t1, t4] */       \
    X(xdp_tx_requests, "xdp tx requests")     /* --xdp-tx: sent by XDP_TX, t1 the program's */  \
    X(turn_stamps, "turn stamps") /* --xdp-turn: answers whose t1 is the steering program's */  \
    X(turn_stamps_refused, "turn stamps refused") /* ... outside their probe's [t1, t4] */
LINERATE_COUNTERS(ClientCounter, kClientCounters, LINERATE_CS_CLIENT_COUNTERS);

// The master's app counters (also top-level JSON keys).
#define LINERATE_CS_MASTER_COUNTERS(X)                                                     \
    X(udp_checksum_offloaded, "udp checksum offloaded") /* accepted, left to TX offload */ \
    X(rx_stamps, "rx stamps") /* requests whose t2 is the XDP hook's receive time */       \
    X(rx_stamps_refused, "rx stamps refused") /* stamps after the burst's own reading */
LINERATE_COUNTERS(MasterCounter, kMasterCounters, LINERATE_CS_MASTER_COUNTERS);

// Answers every valid request on the worker's queues with t2 read right after RX returned
// (with `rx_stamps`, the steering program's receive stamp where the frame has one:
// MasterClock::stamp_clock) and t3 right before TX; anything else is freed and counted by
// reason. `port_macs[port]` is used as the response's source when the request went to a
// broadcast/multicast address. `checksums`: how requests' IPv4 header and UDP checksums are
// checked (--no-verify-checksums, --strict-checksums); the port's verdicts are filled in per
// frame. With `key` (--key) a request is answered only when its trailer verifies (else
// bad_auth), and every answer is signed.
void master_loop(WorkerContext& ctx, const MasterClock& clock, uint16_t udp_port,
                 const std::vector<pkt::MacAddr>& port_macs, pkt::ChecksumCheck checksums = {},
                 const std::optional<auth::Key>& key = std::nullopt, bool rx_stamps = false);

// Frees whatever arrives on a client worker other than worker 0 (counted as other_worker_frames;
// with --exception-path, what is not clocksync's goes to the host's kernel).
void drain_loop(WorkerContext& ctx, uint16_t udp_port);

struct ClientIo {
    pkt::UdpFrameSpec spec;  // src MAC/IP, master IP, port; dst MAC = the master's or broadcast
    bool learn_master_mac = false;
    rte_mempool* pool = nullptr;
    BackgroundLoad background;  // off unless --background-pps
    // The steering program stamps each answer on receive (SteerFilter::rx_stamp): t4 from there.
    bool rx_stamps = false;
    // --xdp-tx: requests and warm-ups leave by the XDP layer's XDP_TX (null: through the port).
    xdp::XdpTransmitter* xdp_tx = nullptr;
    // --xdp-turn: each probe goes as a trigger (build_turn_trigger) whose echo the steering
    // program turns into the request; the answer's stamp carries its t1.
    bool turn = false;
};

// Where worker 0 also publishes each sync besides the in-process SyncedClock (none by default).
struct TimeSinks {
    TimeExport* page = nullptr;              // --export
    ChronyShm* chrony = nullptr;             // --chrony-shm
    ClockBoundWriter* clockbound = nullptr;  // --clockbound
};

// Worker 0 of the client. The session and the published clock outlive run(); main reads the
// session after the workers stopped.
class ClientWorker {
  public:
    ClientWorker(ClientSession& session, SyncedClock& synced, ClientIo io, TimeSinks sinks = {});

    void run(WorkerContext& ctx);
    // The master's MAC in use at the end: given, learned, or none (still broadcasting).
    std::optional<pkt::MacAddr> master_mac() const;

  private:
    // One round of the RX step: responses to the session, the rest freed.
    void receive(WorkerContext& ctx, RxStep& rx_step);
    void learn_master_mac(const uint8_t* response);
    HookStamps hook_stamps(rte_mbuf* m, const LocalClock::Reading& at) const;
    void send_probes(WorkerContext& ctx);
    void send_warmup(WorkerContext& ctx, const ProbeToSend& warmup);
    void build_frame(uint8_t* frame, const ProbeToSend& probe);
    bool send_by_xdp_tx(WorkerContext& ctx, const ProbeToSend& probe);
    void stop_xdp_tx(const std::string& why);
    void count_unanswered();
    void report(stats::WorkerCounters& c);
    void publish_to_sinks();

    ClientSession& session_;
    SyncedClock& synced_;
    ClientIo io_;
    LinearFrame linear_;  // chained responses, parsed in one piece
    TimeSinks sinks_;
    bool mac_known_;
    rte_mbuf* spare_ = nullptr;  // allocated ahead so no alloc sits between t1 and TX
    // The session's counters (it is a kernel, with counters of its own), as far as the board
    // has them.
    struct {
        std::array<stats::CarriedTotal, kDropCount> drops;
        stats::CarriedTotal timeouts, offloaded, rx_stamps, rx_stamps_refused, turn_stamps,
            turn_stamps_refused;
    } carried_;
    uint64_t published_syncs_ = 0;
    uint64_t published_violations_ = 0;
    // --xdp-tx, --xdp-turn: requests sent before any answer came, and whether one has come (none
    // to the first kUnansweredLimit: the receiver drops XDP frames, or the master echoes no
    // warm-up; --xdp-turn goes first, then --xdp-tx).
    unsigned unanswered_ = 0;
    bool answered_ = false;
};

}  // namespace linerate::clocksync
