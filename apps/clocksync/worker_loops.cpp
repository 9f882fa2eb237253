#include "clocksync/worker_loops.hpp"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <fmt/core.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "clocksync/master.hpp"
#include "pkt/udp_payload.hpp"
#include "runtime/mbuf_frame.hpp"
#include "runtime/rx_step.hpp"
#include "runtime/tx.hpp"
#include "worker/quiescence.hpp"
#include "xdp/steer/rx_stamp.hpp"

namespace linerate::clocksync {

namespace {

constexpr unsigned kAwaitSpins = 64;  // RX polls, ~2 µs, between ticks while an answer is due
// --xdp-tx, --xdp-turn: requests sent so with none ever answered before the client sends them
// the plain way again (a veth peer without NAPI drops XDP frames unseen, an old master echoes no
// warm-up, and nothing else says so).
constexpr unsigned kUnansweredLimit = 8;

// make_response swapped the MACs; a request sent to broadcast (a client that has not learned
// the master's MAC yet) would get a broadcast source back, so the port's own MAC goes there.
void own_source_mac(uint8_t* frame, const std::vector<pkt::MacAddr>& port_macs, uint16_t port) {
    const bool group = (frame[pkt::kMacLen] & 1) != 0;
    if (group && port < port_macs.size())
        std::memcpy(frame + pkt::kMacLen, port_macs[port].data(), pkt::kMacLen);
}

// A request on a chain of segments (a jumbo frame): parsed (and with `mac` verified) from a linear
// copy, answered in place in its first segment, which holds the headers and the message on every
// PMD's chains. With a key the answer's trailer is written there too: the first segment must hold
// the whole datagram (a keyed request is 112 bytes).
CsPacket answer_chained(rte_mbuf* m, LinearFrame& linear, uint64_t t2, uint16_t udp_port,
                        pkt::ChecksumCheck checksums, auth::MessageMac* mac) {
    const LinearFrame::Bytes b = linear.of(m);
    CsPacket p = parse_cs_packet(b.data, b.len, udp_port, checksums, mac);
    const size_t needed = mac ? p.payload_len : kCsHeaderLen;
    if (p.ok && p.payload_offset + needed > rte_pktmbuf_data_len(m)) {
        p.ok = false;
        p.drop = Drop::split_header;
    }
    return answer_parsed(rte_pktmbuf_mtod(m, uint8_t*), p, t2, t2);
}

// The master's worker: every request answered on the queue it came in on, t2 read once per
// burst right after RX (or each frame's receive stamp, see t2_of), t3 once per burst right
// before TX.
class MasterLoop {
  public:
    MasterLoop(WorkerContext& ctx, const MasterClock& clock, uint16_t udp_port,
               const std::vector<pkt::MacAddr>& port_macs, pkt::ChecksumCheck checksums,
               const std::optional<auth::Key>& key, bool rx_stamps)
        : ctx_(ctx),
          c_(ctx.counters),
          clock_(clock),
          stamp_clock_(rx_stamps ? clock.stamp_clock() : std::nullopt),
          udp_port_(udp_port),
          port_macs_(port_macs),
          checksums_(checksums) {
        if (key) mac_.emplace(*key);  // this worker's own: made on its thread
    }

    void run() {
        RxStep rx_step(ctx_);
        rte_mbuf* pkts[kMaxBurst];
        const pkt::UdpPortFilter clocksync_frames{udp_port_};
        auto answer = [this](worker::QueueRef q, rte_mbuf** got, const RxBurst& b) {
            return answer_burst(q, got, b.kept);
        };
        while (worker::keep_polling()) rx_step.round(pkts, clocksync_frames, answer);
    }

  private:
    // Answers the burst's requests in place (kept at the front of pkts), frees the rest;
    // returns the burst's bytes.
    uint64_t answer_burst(worker::QueueRef q, rte_mbuf** pkts, uint16_t n) {
        const LocalClock::Reading at = read_t2(q.port);
        uint64_t rx_bytes = 0;
        uint16_t keep = 0, dropped = 0;
        for (uint16_t i = 0; i < n; ++i) {
            rte_mbuf* m = pkts[i];
            rx_bytes += rte_pktmbuf_pkt_len(m);
            // t3 is stamped in send(), once the burst is ready to go.
            if (const CsPacket p = answer_in_place(m, t2_of(m, at), q.port); p.ok) {
                answers_[keep] = p;
                pkts[keep++] = m;
            } else {
                c_.drop(p.drop).add(1);
                drop_[dropped++] = m;
            }
        }
        if (keep > 0) send(q, pkts, keep);
        if (dropped) rte_pktmbuf_free_bulk(drop_, dropped);
        return rx_bytes;
    }

    // The burst's own t2, read right after RX; with the receive stamps also CLOCK_MONOTONIC
    // right before it, which converts them (LocalClock::read).
    LocalClock::Reading read_t2(uint16_t port) const {
        if (stamp_clock_) return stamp_clock_->read(true);
        return {.local = clock_.now(port)};
    }

    // A request's t2: the steering program's receive stamp in the master's clock, the instant
    // the frame reached the host rather than the instant this loop got to it (the master's
    // queueing and scheduling, which the client's t4 stamp leaves out of the way down, left
    // out of the way up too). Converted late, never early (LocalClock::local_of_monotonic):
    // still after the request left and before its answer does, so the bound stays sound. Taken
    // (and cleared) from every frame, used or not, so that none stays in its umem chunk.
    uint64_t t2_of(rte_mbuf* m, const LocalClock::Reading& at) {
        if (!stamp_clock_) return at.local;
        const std::optional<xdp::RxStamp> s =
            xdp::take_rx_stamp(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_headroom(m));
        if (!s) return at.local;
        const std::optional<uint64_t> t2 = stamp_clock_->local_of_monotonic(s->rx_ns, at);
        c_.app_counter(t2 ? MasterCounter::rx_stamps : MasterCounter::rx_stamps_refused).add(1);
        return t2.value_or(at.local);
    }

    CsPacket answer_in_place(rte_mbuf* m, uint64_t t2, uint16_t port) {
        uint8_t* frame = rte_pktmbuf_mtod(m, uint8_t*);
        pkt::ChecksumCheck check = checksums_;
        check.port = rx_checksums(m);
        auth::MessageMac* mac = mac_ ? &*mac_ : nullptr;
        const CsPacket p = m->nb_segs == 1 ? answer_request(frame, rte_pktmbuf_data_len(m), t2, t2,
                                                            udp_port_, check, mac)
                                           : answer_chained(m, linear_, t2, udp_port_, check, mac);
        if (!p.ok) return p;
        if (p.udp_checksum_offloaded) [[unlikely]]
            c_.app_counter(MasterCounter::udp_checksum_offloaded).add(1);
        own_source_mac(frame, port_macs_, port);
        return p;
    }

    void send(worker::QueueRef q, rte_mbuf** pkts, uint16_t n) {
        const uint64_t t3 = clock_.now(q.port);
        for (uint16_t i = 0; i < n; ++i)
            if (answers_[i].type == CsType::response)  // a warm-up's echo is not stamped
                set_t3(rte_pktmbuf_mtod(pkts[i], uint8_t*), answers_[i], t3);
        // With a key, each answer is signed after t3 was read, so the tag covers t3: the time the
        // MAC takes lies after t3, inside the round trip that bounds epsilon.
        if (mac_) [[unlikely]]
            for (uint16_t i = 0; i < n; ++i)
                sign_answer(*mac_, rte_pktmbuf_mtod(pkts[i], uint8_t*), answers_[i]);
        TxStep(c_, ctx_.tx_retries).send(q, pkts, n);
    }

    WorkerContext& ctx_;
    stats::WorkerCounters& c_;
    const MasterClock& clock_;
    const std::optional<LocalClock> stamp_clock_;  // the receive stamps' conversion, when used
    const uint16_t udp_port_;
    const std::vector<pkt::MacAddr>& port_macs_;
    const pkt::ChecksumCheck checksums_;
    LinearFrame linear_;
    std::optional<auth::MessageMac> mac_;  // --key
    rte_mbuf* drop_[kMaxBurst];
    CsPacket answers_[kMaxBurst];
};

}  // namespace

void master_loop(WorkerContext& ctx, const MasterClock& clock, uint16_t udp_port,
                 const std::vector<pkt::MacAddr>& port_macs, pkt::ChecksumCheck checksums,
                 const std::optional<auth::Key>& key, bool rx_stamps) {
    MasterLoop(ctx, clock, udp_port, port_macs, checksums, key, rx_stamps).run();
}

void drain_loop(WorkerContext& ctx, uint16_t udp_port) {
    RxStep rx_step(ctx);
    rte_mbuf* pkts[kMaxBurst];
    const pkt::UdpPortFilter clocksync_frames{udp_port};
    auto drain = [&ctx](worker::QueueRef, rte_mbuf** got, const RxBurst& b) {
        uint64_t bytes = 0;
        for (uint16_t i = 0; i < b.kept; ++i) bytes += rte_pktmbuf_pkt_len(got[i]);
        rte_pktmbuf_free_bulk(got, b.kept);
        ctx.counters.app_counter(ClientCounter::other_worker_frames).add(b.kept);
        return bytes;
    };
    while (worker::keep_polling()) rx_step.round(pkts, clocksync_frames, drain);
}

ClientWorker::ClientWorker(ClientSession& session, SyncedClock& synced, ClientIo io,
                           TimeSinks sinks)
    : session_(session),
      synced_(synced),
      io_(io),
      sinks_(sinks),
      mac_known_(!io.learn_master_mac) {}

std::optional<pkt::MacAddr> ClientWorker::master_mac() const {
    if (!mac_known_) return std::nullopt;
    return io_.spec.dst_mac;
}

void ClientWorker::run(WorkerContext& ctx) {
    spare_ = rte_pktmbuf_alloc(io_.pool);
    const worker::QueueRef out = ctx.slot.queues.front();
    unsigned spins = 0;
    RxStep rx_step(ctx);
    while (worker::keep_polling()) {
        receive(ctx, rx_step);
        // While an answer is due, poll RX alone: the rest of the loop would delay t4 by up to
        // its own length. Every kAwaitSpins polls the loop runs whole, for timeouts (ε samples
        // are taken on their grid times whenever tick runs, so they do not move).
        if (session_.awaiting_answer() && ++spins % kAwaitSpins != 0) continue;
        const uint64_t now = synced_.local().now();
        session_.tick(now);
        if (sinks_.page) sinks_.page->expire(now);
        if (sinks_.clockbound) sinks_.clockbound->poll(now, synced_.local());
        send_probes(ctx);
        // The background frames load the master's port; sending them while an answer is due
        // would also delay this loop's next RX poll, and so t4: a cost of generating the load
        // on the client's core, not of the load on the master's port.
        if (!session_.awaiting_answer())
            io_.background.poll(out.port, out.queue, rte_rdtsc(), ctx.counters,
                                unsigned(ClientCounter::background_frames),
                                unsigned(ClientCounter::background_refused));
        report(ctx.counters);
    }
    if (spare_) rte_pktmbuf_free(spare_);
    spare_ = nullptr;
    report(ctx.counters);
    if (sinks_.page) sinks_.page->invalidate(synced_.local().now());  // readers: "stopped"
    if (sinks_.clockbound) sinks_.clockbound->stop();                 // readers: Unknown
}

void ClientWorker::receive(WorkerContext& ctx, RxStep& rx_step) {
    rte_mbuf* pkts[kMaxBurst];
    const pkt::UdpPortFilter clocksync_frames{session_.udp_port()};
    rx_step.round(pkts, clocksync_frames, [&](worker::QueueRef, rte_mbuf** got, const RxBurst& b) {
        const LocalClock::Reading at = synced_.local().read(io_.rx_stamps);
        const uint64_t t4 = at.local;
        uint64_t bytes = 0, accepted = 0;
        for (uint16_t i = 0; i < b.kept; ++i) {
            rte_mbuf* m = got[i];
            bytes += rte_pktmbuf_pkt_len(m);
            const HookStamps hook = hook_stamps(m, at);
            const LinearFrame::Bytes f = linear_.of(m);  // the frame itself unless a chain
            if (!session_.on_frame(f.data, f.len, t4, rx_checksums(m), hook)) continue;
            ++accepted;
            if (!mac_known_) learn_master_mac(rte_pktmbuf_mtod(m, const uint8_t*));
        }
        rte_pktmbuf_free_bulk(got, b.kept);
        ctx.counters.app_counter(ClientCounter::responses).add(accepted);
        if (accepted > 0) answered_ = true;
        return bytes;
    });
}

// The steering program's stamps of `m` (CLOCK_MONOTONIC) in local time, converted with the
// burst's reading `at`: its receive time, and (--xdp-turn) its request's t1, exact on the
// CLOCK_MONOTONIC client clock --xdp-turn needs. Taken from every frame, used or not, so that
// none stays.
HookStamps ClientWorker::hook_stamps(rte_mbuf* m, const LocalClock::Reading& at) const {
    if (!io_.rx_stamps) return {};
    const std::optional<xdp::RxStamp> ns =
        xdp::take_rx_stamp(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_headroom(m));
    if (!ns) return {};
    HookStamps h{synced_.local().local_of_monotonic(ns->rx_ns, at), std::nullopt};
    if (io_.turn && ns->hook_ns) h.t1 = synced_.local().local_of_monotonic(*ns->hook_ns, at);
    return h;
}

// The first response's source MAC is the master's: probes and background frames go there.
void ClientWorker::learn_master_mac(const uint8_t* response) {
    std::memcpy(io_.spec.dst_mac.data(), response + pkt::kMacLen, pkt::kMacLen);
    io_.background.set_dst_mac(io_.spec.dst_mac);
    mac_known_ = true;
}

void ClientWorker::send_probes(WorkerContext& ctx) {
    const worker::QueueRef out = ctx.slot.queues.front();
    stats::WorkerCounters& c = ctx.counters;
    for (;;) {
        const std::optional<ProbeToSend> probe = session_.next_probe(synced_.local().now());
        if (!probe) return;
        if (probe->warmup) {
            send_warmup(ctx, *probe);
            continue;
        }
        if (io_.xdp_tx && send_by_xdp_tx(ctx, *probe)) continue;
        rte_mbuf* m = spare_ ? spare_ : rte_pktmbuf_alloc(io_.pool);
        spare_ = nullptr;
        if (!m) {
            c.app_counter(ClientCounter::probe_alloc_failed)
                .add(1);  // the probe times out: it was never sent
            continue;
        }
        auto* frame =
            reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(session_.frame_len())));
        if (!frame) {  // an mbuf data room below 112 bytes: a pool misconfiguration
            rte_pktmbuf_free(m);
            c.app_counter(ClientCounter::probe_alloc_failed).add(1);
            continue;
        }
        build_frame(frame, *probe);
        // t1 once the frame is built: building it is no part of the round trip.
        const uint64_t t1 = synced_.local().now();
        if (!io_.turn && !session_.keyed()) set_request_t1(frame, t1);
        TxStep(c, ctx.tx_retries).send(out, &m, 1);
        session_.sent(t1);
        if (io_.turn) count_unanswered();
        spare_ = rte_pktmbuf_alloc(io_.pool);
    }
}

// The frame of `probe` (session_.frame_len() bytes): a warm-up, a request whose t1 is written
// once the frame is built (set_request_t1), right before it leaves, or with --xdp-turn the
// request's trigger (its t1 field is only echoed: the steering program stamps the request's).
// With a key the frame is signed here, a request with a t1 read now: the MAC is no part of the
// round trip, and the t1 in the frame is only echoed (the session keeps the one read after it).
void ClientWorker::build_frame(uint8_t* frame, const ProbeToSend& probe) {
    const size_t trailer = session_.trailer_len();
    if (probe.warmup) {
        build_warmup(frame, kCsFrameLen + trailer, io_.spec, probe.client_id, probe.echo, trailer);
    } else {
        io_.spec.ip_id = uint16_t(probe.seq);
        if (io_.turn)
            build_turn_trigger(frame, kCsFrameLen, io_.spec, probe.client_id, probe.seq);
        else
            build_request(frame, kCsFrameLen + trailer, io_.spec, probe.client_id, probe.seq, 0,
                          trailer);
    }
    if (!session_.keyed()) return;
    if (!probe.warmup) set_request_t1(frame, synced_.local().now());
    session_.sign(frame);
}

// --xdp-tx: the request (or warm-up) leaves by XDP_TX, built on the stack; a request's t1 is the
// program's stamp (CLOCK_MONOTONIC, the client's clock with --xdp-tx), the one in the frame only
// echoed. False when the kernel refused the run: --xdp-tx is off, the caller sends it by port.
bool ClientWorker::send_by_xdp_tx(WorkerContext& ctx, const ProbeToSend& probe) {
    std::array<uint8_t, kCsKeyedFrameLen> frame;
    const uint32_t len = uint32_t(session_.frame_len());
    build_frame(frame.data(), probe);
    if (!probe.warmup && !io_.turn && !session_.keyed())
        set_request_t1(frame.data(), synced_.local().now());
    const std::optional<uint64_t> stamp = io_.xdp_tx->send(frame.data(), len);
    if (!stamp) {
        stop_xdp_tx(fmt::format("the kernel refused the test run ({})",
                                std::strerror(io_.xdp_tx->last_error())));
        return false;
    }
    ctx.counters.tx_packets.add(1);
    ctx.counters.tx_bytes.add(len);
    if (probe.warmup) return true;
    session_.sent(synced_.local().local_of(*stamp));
    ctx.counters.app_counter(ClientCounter::xdp_tx_requests).add(1);
    count_unanswered();
    return true;
}

// One more request sent the --xdp-turn or --xdp-tx way; the first kUnansweredLimit without an
// answer turn that way off (--xdp-turn first).
void ClientWorker::count_unanswered() {
    if (answered_ || ++unanswered_ < kUnansweredLimit) return;
    unanswered_ = 0;
    if (io_.turn) {
        io_.turn = false;
        fmt::print(
            "clocksync: --xdp-turn: no answer to the first {} requests (a master that echoes no "
            "warm-up, or a peer that drops XDP frames); the client sends its requests itself "
            "from now on\n",
            kUnansweredLimit);
        std::fflush(stdout);
        return;
    }
    if (io_.xdp_tx)
        stop_xdp_tx(
            fmt::format("no answer to the first {} requests (a veth peer without an XDP "
                        "program in native mode drops XDP frames)",
                        kUnansweredLimit));
}

void ClientWorker::stop_xdp_tx(const std::string& why) {
    fmt::print("clocksync: --xdp-tx: {}; requests go through the port from now on\n", why);
    std::fflush(stdout);
    io_.xdp_tx = nullptr;
}

// A warm-up frame ahead of a round (ClientConfig::warmup_ns), from a pool mbuf (the spare stays
// for the probe). One the pool or the TX ring refuses is counted (warmups_refused), not retried.
void ClientWorker::send_warmup(WorkerContext& ctx, const ProbeToSend& warmup) {
    if (io_.xdp_tx && send_by_xdp_tx(ctx, warmup)) return;
    const worker::QueueRef out = ctx.slot.queues.front();
    stats::WorkerCounters& c = ctx.counters;
    rte_mbuf* m = rte_pktmbuf_alloc(io_.pool);
    auto* frame =
        m ? reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(session_.frame_len())))
          : nullptr;
    if (!frame) {
        if (m) rte_pktmbuf_free(m);
        c.app_counter(ClientCounter::warmups_refused).add(1);
        return;
    }
    build_frame(frame, warmup);
    TxStep(c, 0).send(out, &m, 1, rte_pktmbuf_pkt_len(m),
                      c.app_counter(ClientCounter::warmups_refused));
}

// Carries what the session counted onto the board, and publishes a new sync (or violation count)
// for readers of the synchronized clock.
void ClientWorker::report(stats::WorkerCounters& c) {
    const DropCounters& d = session_.drops();
    for (size_t i = 0; i < kDropCount; ++i) carried_.drops[i].carry(d.count[i], c.drops[i]);
    carried_.timeouts.carry(session_.timeouts(), c.app_counter(ClientCounter::timeouts));
    carried_.offloaded.carry(session_.udp_checksum_offloaded(),
                             c.app_counter(ClientCounter::udp_checksum_offloaded));
    carried_.rx_stamps.carry(session_.rx_stamps(), c.app_counter(ClientCounter::rx_stamps));
    carried_.rx_stamps_refused.carry(session_.rx_stamps_refused(),
                                     c.app_counter(ClientCounter::rx_stamps_refused));
    carried_.turn_stamps.carry(session_.turn_stamps(), c.app_counter(ClientCounter::turn_stamps));
    carried_.turn_stamps_refused.carry(session_.turn_stamps_refused(),
                                       c.app_counter(ClientCounter::turn_stamps_refused));
    if (session_.syncs() != published_syncs_ || session_.violations() != published_violations_) {
        const bool new_sync = session_.syncs() != published_syncs_;
        published_syncs_ = session_.syncs();
        published_violations_ = session_.violations();
        synced_.publish({session_.sync(), published_syncs_, published_violations_});
        if (new_sync) publish_to_sinks();
        synced_.epsilon_ns.offer(session_.epsilon_histogram());
        synced_.rtt_ns.offer(session_.rtt_histogram());
    }
}

void ClientWorker::publish_to_sinks() {
    const SyncState& s = session_.sync();
    if (sinks_.page) sinks_.page->publish(s, published_syncs_, synced_.local().now());
    if (sinks_.clockbound) sinks_.clockbound->publish(s, synced_.local());
    if (sinks_.chrony) {
        // The master's time at the instant the system clock is read.
        const RealtimePair p = read_realtime_pair(synced_.local());
        const timespec system{time_t(p.realtime_ns / 1'000'000'000u),
                              long(p.realtime_ns % 1'000'000'000u)};
        sinks_.chrony->update(s.to_master(p.local_ns), system,
                              precision_log2(s.epsilon_at(p.local_ns)));
    }
}

}  // namespace linerate::clocksync
