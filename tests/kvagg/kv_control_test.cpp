// The service ops without EAL: request parsing, the per-worker parts, merging, response frames
// (addresses swapped, valid checksums, split over frames), and flush-reset exactness while
// worker threads keep adding.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "kvagg/kv_control.hpp"
#include "kvagg/kv_kernel.hpp"
#include "pkt/checksum.hpp"
#include "support/doc_table.hpp"
#include "support/scratch.hpp"

using namespace linerate::kvagg;
using namespace linerate::pkt;

namespace {

UdpFrameSpec client_spec() {
    UdpFrameSpec s;
    s.src_mac = {0x02, 0, 0, 0, 0, 0xC1};
    s.dst_mac = {0x02, 0, 0, 0, 0, 0x5E};
    s.src_ip = ipv4_addr(10, 1, 0, 2);
    s.dst_ip = ipv4_addr(10, 1, 0, 1);
    s.src_port = 40000;
    s.dst_port = kKvDefaultPort;
    return s;
}

// A request frame: header with `count`, `flags` in the reserved field, then `body` (u64s).
std::vector<uint8_t> request(uint8_t op, uint16_t count, uint32_t stream, uint64_t seq,
                             uint32_t flags, const std::vector<uint64_t>& body) {
    std::vector<uint8_t> f(kKvTuplesOffset + 8 * body.size());
    write_udp_headers(f.data(), f.size(), client_spec());
    write_kv_header(&f[kKvHeaderOffset],
                    {.tuple_count = count, .stream = stream, .seq = seq, .op = op});
    store_be32(&f[kKvHeaderOffset + kKvReservedOff], flags);
    for (size_t i = 0; i < body.size(); ++i) store_be64(&f[kKvTuplesOffset + 8 * i], body[i]);
    return f;
}

KvVerdict request_verdict(const std::vector<uint8_t>& f) {
    return parse_kv_request(f.data(), f.size(), kKvDefaultPort).verdict;
}

// Checks a response's headers against the request that asked for it; returns its app header.
const uint8_t* check_response(const std::vector<uint8_t>& resp, uint8_t op, uint64_t seq) {
    const UdpFrameSpec c = client_spec();
    EXPECT_TRUE(std::equal(c.src_mac.begin(), c.src_mac.end(), resp.begin()));  // to the client
    EXPECT_TRUE(std::equal(c.dst_mac.begin(), c.dst_mac.end(), resp.begin() + 6));
    const Ipv4View ip{&resp[14]};
    EXPECT_TRUE(checksum_ok(&resp[14], 20));
    EXPECT_EQ(ip.total_len(), resp.size() - 14);
    EXPECT_EQ(load_be32(&resp[26]), c.dst_ip);
    EXPECT_EQ(load_be32(&resp[30]), c.src_ip);
    const UdpView udp{&resp[34]};
    EXPECT_EQ(load_be16(&resp[34]), kKvDefaultPort);
    EXPECT_EQ(udp.dst_port(), c.src_port);
    EXPECT_EQ(udp.length(), resp.size() - 34);
    // UDP checksum over the pseudo-header and the datagram verifies to 0xFFFF.
    const uint32_t seed = ones_complement_sum(&resp[26], 8) + kIpProtoUdp + udp.length();
    EXPECT_NE(load_be16(&resp[40]), 0);
    EXPECT_EQ(ones_complement_sum(&resp[34], udp.length(), seed), 0xFFFF);
    const uint8_t* app = &resp[kKvHeaderOffset];
    EXPECT_EQ(load_be16(app), kKvMagic);
    EXPECT_EQ(app[kKvOpOff], op | kKvOpResponse);
    EXPECT_EQ(load_be64(app + kKvSeqOff), seq);
    return app;
}

std::map<uint64_t, uint64_t> response_tuples(const std::vector<std::vector<uint8_t>>& frames) {
    std::map<uint64_t, uint64_t> m;
    for (size_t i = 0; i < frames.size(); ++i) {
        const uint8_t* app = &frames[i][kKvHeaderOffset];
        EXPECT_EQ(load_be32(app + kKvReservedOff),
                  uint32_t(i) | (i + 1 == frames.size() ? kKvLastFrame : 0));
        const uint16_t n = load_be16(app + kKvCountOff);
        EXPECT_EQ(frames[i].size(), kv_frame_len(n));
        for (uint16_t k = 0; k < n; ++k)
            m[load_be64(app + kKvHeaderLen + 16 * k)] += load_be64(app + kKvHeaderLen + 16 * k + 8);
    }
    return m;
}

// A keyed request's answer (as large as it takes): each frame's trailer checked and taken off,
// so the frames are what an unkeyed answer of before --key was.
template <class Table>
std::vector<std::vector<uint8_t>> ask_keyed(KvControl<Table>& control,
                                            linerate::auth::MessageMac& mac, size_t mtu,
                                            const std::vector<uint8_t>& f) {
    std::vector<std::vector<uint8_t>> frames = control.answer(f.data(), f.size(), 0);
    const KvRequest r = parse_kv_request(f.data(), f.size(), kKvDefaultPort);
    for (std::vector<uint8_t>& frame : frames) {
        EXPECT_LE(frame.size(), r.l3_offset + mtu);
        EXPECT_TRUE(mac.verify(frame.data() + r.app_offset, frame.size() - r.app_offset));
        frame.resize(frame.size() - linerate::auth::kTrailerLen);
        finish_kv_response(frame.data(), r, frame.size());
    }
    return frames;
}

// Two per-worker tables and windows; the workers are "stopped" (no loop), so the control reads
// their parts directly, as it does after a run.
struct TwoWorkers {
    AggConfig cfg{.mode = IndexMode::hash, .max_keys = 4096};
    std::vector<AggSlot> mem0 = std::vector<AggSlot>(AggGeometry::slots_for(cfg));
    std::vector<AggSlot> mem1 = mem0;
    AggTable t0{mem0, cfg}, t1{mem1, cfg};
    KvKernel<AggTable> k0{t0, {}}, k1{t1, {}};
    WorkerLink links[2];
    size_t mtu = 1500;
    KvControl<AggTable> control{
        {{&t0, &k0.dup_filter(), &links[0]}, {&t1, &k1.dup_filter(), &links[1]}},
        [this](uint16_t, size_t l3) { return l3 + mtu; },
        kKvDefaultPort};
    // Keyed (the answers as large as they take): ask() checks each frame's trailer and
    // takes it off, so the frames are what an unkeyed answer of before --key was.
    linerate::auth::Key key{{7, 7, 7}};
    linerate::auth::MessageMac mac{key};
    TwoWorkers() {
        links[0].stopped = true;
        links[1].stopped = true;
        control.enable_key(key);
    }
    std::vector<std::vector<uint8_t>> ask(const std::vector<uint8_t>& f) {
        return ask_keyed(control, mac, mtu, f);
    }
};

// The shared table with `writers` workers (each adding to its own column of sums, resets made by
// the worker), each a kernel and a window; "stopped" until a test runs their loops.
struct SharedWorkers {
    AggConfig cfg{.mode = IndexMode::hash, .max_keys = 4096};
    std::vector<AggSlot> mem = std::vector<AggSlot>(AggGeometry::slots_for(cfg));
    SharedAggTable table;
    KvKernel<SharedAggTable> k0{table, {}, 0}, k1{table, {}, table.writers() - 1};
    WorkerLink links[2];
    size_t mtu = 1500;
    KvControl<SharedAggTable> control;
    linerate::auth::Key key{{7, 7, 7}};
    linerate::auth::MessageMac mac{key};
    explicit SharedWorkers(unsigned writers)
        : table(mem, cfg, writers),
          control(
              workers(writers), [this](uint16_t, size_t l3) { return l3 + mtu; }, kKvDefaultPort) {
        links[0].stopped = true;
        links[1].stopped = true;
        control.enable_key(key);
    }
    std::vector<KvControl<SharedAggTable>::Worker> workers(unsigned n) {
        std::vector<KvControl<SharedAggTable>::Worker> w = {{&table, &k0.dup_filter(), &links[0]}};
        if (n == 2) w.push_back({&table, &k1.dup_filter(), &links[1]});
        return w;
    }
    std::vector<std::vector<uint8_t>> ask(const std::vector<uint8_t>& f) {
        return ask_keyed(control, mac, mtu, f);
    }
};

void send(KvKernel<AggTable>& k, uint32_t stream, uint64_t seq, std::vector<KvTuple> t) {
    UdpFrameSpec s = client_spec();
    const auto f = make_kv_frame(s, stream, seq, t);
    EXPECT_EQ(k.aggregate_frame(f.data(), f.size()), KvVerdict::ok);
}

}  // namespace

// docs/wire-formats.md's status response table is the layout status_response() writes.
// The error replies' budget: a burst of 10, then 10 a second, shared by threads without a lock.
TEST(KvControl, ErrorReplyBudgetIsABurstOfTenThenTenASecondInAll) {
    ReplyBudget budget;
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<int> allowed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 2000; ++i) allowed += budget.take();
        });
    for (std::thread& t : threads) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(allowed.load(), 10);
    EXPECT_LE(allowed.load(), 10 + int(s * 10) + 1) << "in " << s << " s";
}

TEST(KvControl, DocumentedStatusTableMatchesTheCode) {
    using linerate::test::DocField;
    std::map<std::string, DocField> code;
    const char* names[] = {"flags", "top", "gaps", "duplicates", "stale", "window_low", "missing"};
    for (size_t i = 0; i < 7; ++i) code[names[i]] = {kKvTuplesOffset + 8 * i, 8};
    static_assert(kKvStatusBodyLen == 6 * 8);
    linerate::test::expect_wire_table("### kvagg service ops: read, stream status, flush", code);
}

TEST(KvControl, RequestChecks) {
    EXPECT_EQ(request_verdict(request(kKvOpRead, 2, 1, 1, 0, {5, 6})), KvVerdict::request);
    EXPECT_EQ(request_verdict(request(kKvOpRead, 0, 1, 1, 0, {})), KvVerdict::bad_request);
    EXPECT_EQ(request_verdict(request(kKvOpRead, 3, 1, 1, 0, {5, 6})), KvVerdict::bad_request);
    EXPECT_EQ(request_verdict(request(kKvOpRead, 1, 1, 1, 1, {5})), KvVerdict::bad_request);
    EXPECT_EQ(request_verdict(request(kKvOpStatus, 0, 1, 1, 0, {})), KvVerdict::request);
    EXPECT_EQ(request_verdict(request(kKvOpStatus, 1, 1, 1, 0, {0, 0})), KvVerdict::bad_request);
    EXPECT_EQ(request_verdict(request(kKvOpFlush, 0, 1, 1, kKvFlushReset, {})), KvVerdict::request);
    EXPECT_EQ(request_verdict(request(kKvOpFlush, 1, 1, 1, 0, {3, 9})), KvVerdict::request);
    EXPECT_EQ(request_verdict(request(kKvOpFlush, 1, 1, 1, 0, {9, 3})), KvVerdict::bad_request);
    EXPECT_EQ(request_verdict(request(kKvOpFlush, 1, 1, 1, 0, {3})), KvVerdict::bad_request);
    EXPECT_EQ(request_verdict(request(kKvOpFlush, 0, 1, 1, 2, {})), KvVerdict::bad_request);
    EXPECT_EQ(request_verdict(request(kKvOpFlush, 2, 1, 1, 0, {1, 2, 3, 4})),
              KvVerdict::bad_request);
    EXPECT_EQ(request_verdict(request(9, 0, 1, 1, 0, {})), KvVerdict::bad_op);
    // The kernel's verdicts are the same: a request is never aggregated.
    const auto f = request(kKvOpRead, 1, 1, 1, 0, {5});
    EXPECT_EQ(parse_kv_packet(f.data(), f.size(), kKvDefaultPort).verdict, KvVerdict::request);
    const auto g = request(kKvOpRead, 0, 1, 1, 0, {});
    EXPECT_EQ(parse_kv_packet(g.data(), g.size(), kKvDefaultPort).verdict, KvVerdict::bad_request);
    // A sum packet seen by the request parser keeps its verdict.
    const auto s = make_kv_frame(client_spec(), 1, 1, std::vector<KvTuple>{{1, 2}});
    EXPECT_EQ(parse_kv_request(s.data(), s.size(), kKvDefaultPort).verdict, KvVerdict::ok);
}

TEST(KvControl, ReadSumsEveryWorkersTableInAsManyFramesAsNeeded) {
    TwoWorkers w;
    std::vector<uint64_t> keys;
    std::map<uint64_t, uint64_t> want;
    for (uint64_t k = 0; k < 300; ++k) {
        keys.push_back(k * 7919);
        send(w.k0, 1, k + 1, {{k * 7919, k + 1}});
        if (k % 2) send(w.k1, 2, k + 1, {{k * 7919, 1000}});
        want[k * 7919] = k + 1 + (k % 2 ? 1000 : 0);
    }
    keys.push_back(123456789);  // never sent: 0
    want[123456789] = 0;
    const auto frames = w.ask(request(kKvOpRead, uint16_t(keys.size()), 77, 5, 0, keys));
    // MTU 1500: (1500 - 20 - 8 - 22) / 16 = 90 tuples a frame -> 301 keys in 4 frames.
    ASSERT_EQ(frames.size(), 4u);
    for (const auto& f : frames) {
        const uint8_t* app = check_response(f, kKvOpRead, 5);
        EXPECT_EQ(load_be32(app + kKvStreamOff), 77u);
        EXPECT_LE(f.size(), 1514u);
    }
    EXPECT_EQ(response_tuples(frames), want);
    EXPECT_EQ(w.control.counters().reads.load(), 1u);
}

TEST(KvControl, FlushWithResetTakesEachAmountOnce) {
    TwoWorkers w;
    send(w.k0, 1, 1, {{10, 1}, {20, 2}, {0, 3}});
    send(w.k1, 2, 1, {{10, 100}, {30, 300}});
    // A range first, without reset: only keys 10..20.
    auto frames = w.ask(request(kKvOpFlush, 1, 0, 1, 0, {10, 20}));
    ASSERT_EQ(frames.size(), 1u);
    check_response(frames[0], kKvOpFlush, 1);
    EXPECT_EQ(response_tuples(frames), (std::map<uint64_t, uint64_t>{{10, 101}, {20, 2}}));
    // Everything, with reset.
    frames = w.ask(request(kKvOpFlush, 0, 0, 2, kKvFlushReset, {}));
    EXPECT_EQ(response_tuples(frames),
              (std::map<uint64_t, uint64_t>{{0, 3}, {10, 101}, {20, 2}, {30, 300}}));
    EXPECT_EQ(w.control.counters().flushed_sum.load(), 406u);
    // The client resends it (its answer was lost): the same frames, nothing flushed again.
    send(w.k0, 1, 2, {{10, 9}});
    EXPECT_EQ(w.ask(request(kKvOpFlush, 0, 0, 2, kKvFlushReset, {})), frames);
    EXPECT_EQ(w.control.counters().flush_repeats.load(), 1u);
    EXPECT_EQ(w.control.counters().flushed_sum.load(), 406u);
    // A new request id flushes what came since.
    EXPECT_EQ(response_tuples(w.ask(request(kKvOpFlush, 0, 0, 7, kKvFlushReset, {}))),
              (std::map<uint64_t, uint64_t>{{10, 9}}));
    EXPECT_EQ(w.control.counters().flushed_sum.load(), 415u);
    EXPECT_EQ(w.t0.size(), 0u);  // a full reset frees the places
    // The next epoch holds only what came after.
    send(w.k1, 2, 2, {{30, 5}});
    frames = w.ask(request(kKvOpFlush, 0, 0, 3, 0, {}));
    EXPECT_EQ(response_tuples(frames), (std::map<uint64_t, uint64_t>{{30, 5}}));
    // A range reset zeroes in place: an empty flush is one frame with no tuples, marked last.
    w.ask(request(kKvOpFlush, 1, 0, 8, kKvFlushReset, {30, 30}));
    // An older reset flush of the stream (a replay) is never executed, nor answered.
    EXPECT_TRUE(w.ask(request(kKvOpFlush, 0, 0, 6, kKvFlushReset, {})).empty());
    EXPECT_EQ(w.control.counters().flush_replayed.load(), 1u);
    frames = w.ask(request(kKvOpFlush, 0, 0, 5, 0, {}));
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_TRUE(response_tuples(frames).empty());
    EXPECT_EQ(w.control.counters().flushed_sum.load(), 420u);
}

TEST(KvControl, StatusListsTheGapsOfTheStreamsWindow) {
    TwoWorkers w;
    for (uint64_t seq : {1, 2, 4, 7, 7, 8}) {
        const auto f = make_kv_frame(client_spec(), 42, seq, std::vector<KvTuple>{{1, 1}});
        w.k0.aggregate_frame(f.data(), f.size());
    }
    auto frames = w.ask(request(kKvOpStatus, 0, 42, 9, 0, {}));
    ASSERT_EQ(frames.size(), 1u);
    const uint8_t* app = check_response(frames[0], kKvOpStatus, 9);
    const uint8_t* b = app + kKvHeaderLen;
    EXPECT_EQ(load_be64(b), kKvStatusKnown);
    EXPECT_EQ(load_be64(b + 8), 8u);   // top
    EXPECT_EQ(load_be64(b + 16), 3u);  // gaps 3, 5, 6
    EXPECT_EQ(load_be64(b + 24), 1u);  // one duplicate
    EXPECT_EQ(load_be64(b + 32), 0u);
    EXPECT_EQ(load_be64(b + 40), 1u);  // window low
    ASSERT_EQ(load_be16(app + kKvCountOff), 3);
    EXPECT_EQ(load_be64(b + 48), 3u);
    EXPECT_EQ(load_be64(b + 56), 5u);
    EXPECT_EQ(load_be64(b + 64), 6u);
    // An unknown stream: flags 0.
    frames = w.ask(request(kKvOpStatus, 0, 43, 10, 0, {}));
    EXPECT_EQ(load_be64(&frames[0][kKvTuplesOffset]), 0u);
    // Known on both workers: split flagged.
    const auto f = make_kv_frame(client_spec(), 42, 1, std::vector<KvTuple>{{1, 1}});
    w.k1.aggregate_frame(f.data(), f.size());
    frames = w.ask(request(kKvOpStatus, 0, 42, 11, 0, {}));
    EXPECT_EQ(load_be64(&frames[0][kKvTuplesOffset]), kKvStatusKnown | kKvStatusSplit);
}

TEST(KvControl, StatusListsOnlyWhatFitsAFrame) {
    TwoWorkers w;
    w.mtu = 200;  // (200 - 20 - 8 - 22 - 48 - 16 - 28 (trailer)) / 8 = 7 numbers, the tail
    for (uint64_t seq = 2; seq <= 100; seq += 2) {
        const auto f = make_kv_frame(client_spec(), 1, seq, std::vector<KvTuple>{{1, 1}});
        w.k0.aggregate_frame(f.data(), f.size());
    }
    const auto frames = w.ask(request(kKvOpStatus, 0, 1, 1, 0, {}));
    const uint8_t* app = check_response(frames[0], kKvOpStatus, 1);
    EXPECT_EQ(load_be64(app + kKvHeaderLen + 16), 50u);  // gaps: every odd number
    ASSERT_EQ(load_be16(app + kKvCountOff), 7);
    EXPECT_EQ(load_be64(app + kKvHeaderLen + 48 + 8 * 6), 13u);
    // The tail after the list: durable_through 0 without --state, the instance id.
    EXPECT_EQ(frames[0].size(), kKvTuplesOffset + 48 + 8 * 7 + 16);
    EXPECT_EQ(load_be64(app + kKvHeaderLen + 48 + 8 * 7), 0u);
    EXPECT_EQ(load_be64(app + kKvHeaderLen + 48 + 8 * 8), w.control.instance());
}

// A reset flush's answer is kept per stream for its last sequence number only; past kStreams
// streams the lowest stream number is forgotten first.
TEST(KvControl, FlushMemoryKeepsEachStreamsLastResetFlush) {
    FlushMemory memory;
    const FlushMemory::Frames a = {{1, 2}}, b = {{3}};
    memory.remember(7, 1, a);
    ASSERT_NE(memory.repeat_of(7, 1), nullptr);
    EXPECT_EQ(*memory.repeat_of(7, 1), a);
    memory.remember(7, 2, b);
    EXPECT_EQ(memory.repeat_of(7, 1), nullptr);  // an older request is no repeat
    EXPECT_EQ(*memory.repeat_of(7, 2), b);
    EXPECT_EQ(memory.repeat_of(8, 2), nullptr);  // nor the same number on another stream
    for (uint32_t stream = 100; memory.saved().size() < FlushMemory::kStreams; ++stream)
        memory.remember(stream, 1, a);
    memory.remember(5000, 1, a);
    EXPECT_EQ(memory.saved().size(), FlushMemory::kStreams);
    EXPECT_EQ(memory.repeat_of(7, 2), nullptr);  // the lowest stream number went
    EXPECT_NE(memory.repeat_of(5000, 1), nullptr);
}

// The worker's one slot: each kind of request posted sets its bit; the worker's poll sees it,
// serves a query and a job in one take, and gets response frames a burst at a time.
TEST(KvControl, RequestSlotServesEveryKindPosted) {
    TwoWorkers w;
    RequestSlot& slot = w.links[0];
    slot.stopped = false;
    send(w.k0, 1, 1, {{5, 50}});
    EXPECT_FALSE(slot.has_pending());
    post_frames(slot, 3, {{1}, {2}, {3}});
    ASSERT_TRUE(slot.has_pending());
    EXPECT_TRUE(serve_requests(slot, w.t0, w.k0.dup_filter()));
    const auto first = take_frames(slot, 2);
    ASSERT_EQ(first.size(), 2u);
    EXPECT_EQ(first[1].port, 3u);
    EXPECT_EQ(first[1].frame, std::vector<uint8_t>{2});
    ASSERT_TRUE(slot.has_pending());  // the third frame: the next round's
    EXPECT_TRUE(serve_requests(slot, w.t0, w.k0.dup_filter()));
    EXPECT_EQ(take_frames(slot, 2).size(), 1u);
    EXPECT_FALSE(slot.has_pending());
    // A worker thread polling as the sink loop does answers a query and a read job.
    std::atomic<bool> stop{false};
    std::thread worker([&] {
        while (!stop.load(std::memory_order_relaxed))
            if (slot.has_pending()) serve_requests(slot, w.t0, w.k0.dup_filter());
    });
    const auto present = ask(slot, w.t0, 5, std::chrono::seconds(10));
    const auto absent = ask(slot, w.t0, 6, std::chrono::seconds(10));
    ASSERT_TRUE(present && absent);  // answered
    EXPECT_EQ(*present, std::optional<uint64_t>(50));
    EXPECT_EQ(*absent, std::optional<uint64_t>());
    const auto f = request(kKvOpRead, 1, 0, 1, 0, {5});
    const KvRequest r = parse_kv_request(f.data(), f.size(), kKvDefaultPort);
    ControlJob job{.request = &r};
    post_job(slot, &job);
    wait_job(slot, [] { FAIL() << "the running worker does its job"; });
    EXPECT_EQ(job.values, std::vector<uint64_t>{50});
    stop = true;
    worker.join();
    EXPECT_FALSE(slot.has_pending());
}

// `workers` worker threads add to their tables (kernels k0, k1) and serve their jobs between
// "bursts", as the sink loop does; the control thread flush-resets meanwhile. Every amount is
// flushed exactly once or still in a table at the end.
template <class Fixture, class Table>
void expect_flush_reset_while_adding_exact(Fixture& w, unsigned workers,
                                           Table& (*table_of)(Fixture&, unsigned)) {
    for (unsigned i = 0; i < workers; ++i) w.links[i].stopped = false;
    std::atomic<bool> stop{false};
    uint64_t added[2] = {0, 0};
    auto worker = [&](unsigned i) {
        KvKernel<Table>& k = i ? w.k1 : w.k0;
        Table& t = table_of(w, i);
        std::mt19937_64 rng(i);
        uint64_t seq = 0;
        while (!stop.load(std::memory_order_relaxed)) {
            if (w.links[i].has_pending()) serve_requests(w.links[i], t, k.dup_filter());
            std::vector<KvTuple> tuples(8);
            for (auto& tp : tuples) {
                tp = {rng() % 64, rng() % 1000};
                added[i] += tp.value;
            }
            const auto f = make_kv_frame(client_spec(), i, ++seq, tuples);
            k.aggregate_frame(f.data(), f.size());
        }
        w.links[i].stopped.store(true, std::memory_order_release);
    };
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < workers; ++i) threads.emplace_back(worker, i);
    uint64_t flushed = 0;
    for (int n = 0; n < 50; ++n) {
        const auto f = request(kKvOpFlush, 0, 0, uint64_t(n), kKvFlushReset, {});
        for (const auto& [k, v] : response_tuples(w.ask(f))) flushed += v;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    stop = true;
    for (std::thread& t : threads) t.join();
    const auto rest = response_tuples(w.ask(request(kKvOpFlush, 0, 0, 99, 0, {})));
    uint64_t left = 0;
    for (const auto& [k, v] : rest) left += v;
    EXPECT_GT(flushed, 0u);
    EXPECT_EQ(flushed + left, added[0] + added[1]);
    EXPECT_EQ(w.control.counters().flushed_sum.load(), flushed);
}

TEST(KvControl, FlushResetWhileWorkersAddIsExact) {
    TwoWorkers w;
    expect_flush_reset_while_adding_exact<TwoWorkers, AggTable>(
        w, 2, [](TwoWorkers& f, unsigned i) -> AggTable& { return i ? f.t1 : f.t0; });
}

// The shared table with one and two writers, each adding with plain loads and stores to its
// column (the flushes' resets are posted to every writer, each resetting its own).
TEST(KvControl, SharedTableFlushResetWhileWorkersAddIsExact) {
    for (unsigned writers : {1u, 2u}) {
        SharedWorkers w(writers);
        EXPECT_EQ(w.table.writers(), writers);
        expect_flush_reset_while_adding_exact<SharedWorkers, SharedAggTable>(
            w, writers, [](SharedWorkers& f, unsigned) -> SharedAggTable& { return f.table; });
    }
}

// --state through the control: a checkpoint holds each worker's sums and windows; a flush with
// reset is in the file before it is answered (sums taken out, the answer kept for a repeat);
// status says through which sequence number a stream is durable, and the instance.
TEST(KvControl, CheckpointsAndDurableStatus) {
    TwoWorkers w;
    const std::string path = linerate::test::scratch("control.state");
    const StateLayout layout{.keys = 4096,
                             .index = IndexMode::hash,
                             .probe_limit = w.cfg.probe_limit,
                             .dup_window = DupFilter::kDefaultWindow,
                             .max_streams = DupFilter::kDefaultMaxStreams,
                             .workers = 2,
                             .slots = AggGeometry::slots_for(w.cfg)};
    w.control.enable_state({.path = path, .layout = layout});
    for (uint64_t seq : {1, 2, 3, 5}) send(w.k0, 7, seq, {{seq, 10 * seq}});
    send(w.k1, 8, 1, {{1, 1}});
    auto durable = [&](uint32_t stream) {
        const auto frames = w.ask(request(kKvOpStatus, 0, stream, 99, 0, {}));
        const uint8_t* app = check_response(frames[0], kKvOpStatus, 99);
        const uint8_t* tail = app + kKvHeaderLen + 48 + 8 * load_be16(app + kKvCountOff);
        EXPECT_EQ(load_be64(app + kKvHeaderLen) & kKvStatusDurable, kKvStatusDurable);
        EXPECT_EQ(load_be64(tail + 8), w.control.instance());
        return load_be64(tail);
    };
    EXPECT_EQ(durable(7), 0u);  // received, no checkpoint yet
    ASSERT_TRUE(w.control.checkpoint_now());
    EXPECT_EQ(durable(7), 3u);  // 4 is missing
    EXPECT_EQ(durable(8), 1u);
    StateImage saved = *load_state_file(path, layout);
    EXPECT_EQ(saved.checkpoint, 1u);
    EXPECT_EQ(saved.workers[0].table.size, 4u);
    EXPECT_EQ(saved.workers[1].dup.state(8, 0)->top, 1u);
    // A flush with reset: written before it is answered, the answer remembered in the file.
    const auto flush = request(kKvOpFlush, 0, 7, 5, kKvFlushReset, {});
    const auto answer = w.ask(flush);
    EXPECT_EQ(response_tuples(answer).at(5), 50u);
    saved = *load_state_file(path, layout);
    EXPECT_EQ(saved.checkpoint, 2u);
    EXPECT_EQ(saved.workers[0].table.size, 0u);  // the full-range reset cleared it
    EXPECT_EQ(saved.control.flushed_sum, 10u + 20 + 30 + 50 + 1);
    EXPECT_EQ(saved.control.last_reset.at(7).first, 5u);
    EXPECT_EQ(saved.control.last_reset.at(7).second, answer);
    // A new control restored from the file answers the repeat from memory, flushing nothing.
    TwoWorkers again;
    again.control.enable_state({.path = path, .layout = layout});
    again.control.restore(saved);
    EXPECT_EQ(again.ask(flush), answer);
    EXPECT_EQ(again.control.counters().flush_repeats.load(), 1u);
    EXPECT_NE(again.control.instance(), w.control.instance());
}
