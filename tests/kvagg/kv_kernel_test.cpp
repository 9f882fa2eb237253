#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kvagg/agg_merge.hpp"
#include "kvagg/kv_kernel.hpp"
#include "support/checksum.hpp"

using namespace linerate::kvagg;
using namespace linerate::pkt;

namespace {

UdpFrameSpec kv_spec() {
    UdpFrameSpec s;
    s.dst_port = kKvDefaultPort;
    return s;
}

struct Trace {
    std::vector<std::vector<uint8_t>> frames;
    std::map<uint64_t, uint64_t> expected;  // sums of the tuples of the good, first-seen frames
    uint64_t good = 0, dups = 0, bad = 0, tuples = 0;
};

// Random kvagg streams with duplicated and malformed frames mixed in.
Trace make_trace(unsigned seed, uint32_t streams, int packets, uint64_t keys) {
    std::mt19937_64 rng(seed);
    Trace t;
    std::vector<uint64_t> next_seq(streams);
    for (int i = 0; i < packets; ++i) {
        const uint32_t stream = uint32_t(rng() % streams);
        std::vector<KvTuple> tuples(rng() % 40);
        for (auto& tp : tuples) tp = {rng() % keys, rng()};
        auto f = make_kv_frame(kv_spec(), stream, next_seq[stream]++, tuples);
        const unsigned kind = unsigned(rng() % 10);
        if (kind == 0) {  // malformed: claims one tuple more than it carries
            store_be16(&f[46], uint16_t(tuples.size() + 1));
            ++t.bad;
            t.frames.push_back(std::move(f));
            continue;
        }
        for (auto& tp : tuples) t.expected[tp.key] += tp.value;
        t.tuples += tuples.size();
        ++t.good;
        t.frames.push_back(f);
        if (kind == 1) {  // retransmitted copy
            ++t.dups;
            t.frames.push_back(std::move(f));
        }
    }
    return t;
}

std::vector<KeySum> to_vector(const std::map<uint64_t, uint64_t>& m) {
    std::vector<KeySum> v;
    for (auto [k, s] : m) v.push_back({k, s});
    return v;
}

}  // namespace

TEST(KvKernel, AggregatesATraceExactly) {
    for (unsigned ahead : {0u, 1u, 4u, 16u, 64u, 256u}) {
        const Trace t = make_trace(11, 5, 3000, 2000);
        const AggConfig cfg{.mode = IndexMode::hash, .max_keys = 2000};
        std::vector<AggSlot> mem(AggTable::slots_for(cfg));
        AggTable table(mem, cfg);
        KvKernel<AggTable> k(table, {.prefetch_ahead = ahead});
        for (const auto& f : t.frames) k.aggregate_frame(f.data(), f.size());

        const KvCounters& c = k.counters();
        EXPECT_EQ(c.packets(), t.frames.size());
        EXPECT_EQ(c.packets_ok(), t.good);
        EXPECT_EQ(c[KvVerdict::duplicate], t.dups);
        EXPECT_EQ(c[KvVerdict::malformed], t.bad);
        EXPECT_EQ(c.tuples_aggregated, t.tuples);
        EXPECT_EQ(c.tuples_overflowed(), 0u);
        const AggView v = table.view();
        EXPECT_EQ(merge_tables({&v, 1}).sums, to_vector(t.expected)) << ahead;
    }
}

TEST(KvKernel, VerdictsPerFrame) {
    const AggConfig cfg{.mode = IndexMode::direct, .max_keys = 10};
    std::vector<AggSlot> mem(AggTable::slots_for(cfg));
    AggTable table(mem, cfg);
    KvKernel<AggTable> k(table, {.dup_window = 64, .max_streams = 1});
    const std::vector<KvTuple> tuples = {{1, 5}, {20, 6}, {2, 7}};
    auto f = make_kv_frame(kv_spec(), 9, 1000, tuples);
    EXPECT_EQ(k.aggregate_frame(f.data(), f.size()), KvVerdict::ok);  // key 20 -> overflow
    EXPECT_EQ(k.aggregate_frame(f.data(), f.size()), KvVerdict::duplicate);
    auto old = make_kv_frame(kv_spec(), 9, 1000 - 64, tuples);
    EXPECT_EQ(k.aggregate_frame(old.data(), old.size()), KvVerdict::stale);
    auto other = make_kv_frame(kv_spec(), 10, 0, tuples);
    EXPECT_EQ(k.aggregate_frame(other.data(), other.size()), KvVerdict::too_many_streams);
    auto u = make_udp_frame(UdpFrameSpec{}, 64);
    EXPECT_EQ(k.aggregate_frame(u.data(), u.size()), KvVerdict::not_kvagg);
    f[44] = 9;
    EXPECT_EQ(k.aggregate_frame(f.data(), f.size()), KvVerdict::bad_version);

    const KvCounters& c = k.counters();
    EXPECT_EQ(c.packets(), 6u);
    EXPECT_EQ(c.tuples_aggregated, 2u);
    EXPECT_EQ(c.tuples_overflowed(), 1u);
    EXPECT_EQ(c.overflow_sum, 6u);
    EXPECT_EQ(table.find(1), 5u);
    EXPECT_EQ(table.find(2), 7u);
}

TEST(KvKernel, OverflowConservation) {
    const Trace t = make_trace(5, 3, 2000, 100000);
    const AggConfig cfg{.mode = IndexMode::hash, .max_keys = 1000, .probe_limit = 8};
    std::vector<AggSlot> mem(AggTable::slots_for(cfg));
    AggTable table(mem, cfg);
    KvKernel<AggTable> k(table, {});
    for (const auto& f : t.frames) k.aggregate_frame(f.data(), f.size());
    uint64_t sent = 0;
    for (auto [key, s] : t.expected) sent += s;
    const AggView v = table.view();
    const AggResult r = merge_tables({&v, 1});
    const KvCounters& c = k.counters();
    EXPECT_GT(c.tuples_overflowed(), 0u);
    EXPECT_EQ(c.tuples_aggregated + c.tuples_overflowed(), t.tuples);
    EXPECT_EQ(r.total + c.overflow_sum, sent);
    EXPECT_EQ(c.value_sum, r.total);  // the live total the app reports without a merge
    EXPECT_EQ(r.sums.size(), 1000u);
}

// Streams pinned to workers (as RSS does): per-worker tables merged, and one shared table,
// both equal the reference.
TEST(KvKernel, TwoWorkersPerWorkerAndShared) {
    const Trace t = make_trace(23, 8, 4000, 5000);
    const AggConfig cfg{.mode = IndexMode::hash, .max_keys = 5000};
    auto worker_of = [](const std::vector<uint8_t>& f) { return load_be32(&f[48]) % 2; };

    std::vector<AggSlot> m0(AggTable::slots_for(cfg)), m1(m0.size()), ms(m0.size());
    AggTable t0(m0, cfg), t1(m1, cfg);
    KvKernel<AggTable> k0(t0, {}), k1(t1, {});
    SharedAggTable shared(ms, cfg, 2);
    KvKernel<SharedAggTable> s0(shared, {}, 0), s1(shared, {}, 1);
    auto run = [&](auto& kernel, unsigned w) {
        for (const auto& f : t.frames)
            if (worker_of(f) == w) kernel.aggregate_frame(f.data(), f.size());
    };
    std::thread a([&] { run(k0, 0), run(s0, 0); });
    std::thread b([&] { run(k1, 1), run(s1, 1); });
    a.join();
    b.join();

    const std::vector<AggView> per_worker = {t0.view(), t1.view()};
    EXPECT_EQ(merge_tables(per_worker).sums, to_vector(t.expected));
    const AggView sv = shared.view();
    EXPECT_EQ(merge_tables({&sv, 1}).sums, to_vector(t.expected));
    KvCounters total = k0.counters();
    total += k1.counters();
    EXPECT_EQ(total.packets(), t.frames.size());
    EXPECT_EQ(total.tuples_aggregated, t.tuples);
    EXPECT_EQ(total[KvVerdict::duplicate], t.dups);
}

// A burst gives what the same frames one by one give: counters, sums and the tables' contents,
// whatever the look-ahead (it runs across frame boundaries) and the burst size.
TEST(KvKernel, BurstEqualsFrameByFrame) {
    const Trace t = make_trace(31, 6, 3000, 700);
    for (IndexMode mode : {IndexMode::hash, IndexMode::direct}) {
        // 500 keys: some tuples overflow, so refusals travel through the burst path too.
        const AggConfig cfg{.mode = mode, .max_keys = 500, .probe_limit = 8};
        std::vector<AggSlot> ref_mem(AggTable::slots_for(cfg));
        AggTable ref_table(ref_mem, cfg);
        KvKernel<AggTable> ref(ref_table, {});
        for (const auto& f : t.frames) ref.aggregate_frame(f.data(), f.size());
        const AggView rv = ref_table.view();
        const AggResult want = merge_tables({&rv, 1});
        for (unsigned ahead : {0u, 1u, 5u, 16u, 256u, 1000u}) {
            for (size_t burst : {size_t(1), size_t(7), size_t(64), size_t(200)}) {
                std::vector<AggSlot> mem(AggTable::slots_for(cfg));
                AggTable table(mem, cfg);
                KvKernel<AggTable> k(table, {.prefetch_ahead = ahead});
                std::vector<FrameRef> refs;
                for (const auto& f : t.frames) refs.push_back({f.data(), f.size()});
                for (size_t i = 0; i < refs.size(); i += burst)
                    k.aggregate_burst(std::span(refs).subspan(i, std::min(burst, refs.size() - i)));
                const KvCounters& a = k.counters();
                const KvCounters& b = ref.counters();
                EXPECT_EQ(a.by_verdict, b.by_verdict) << ahead << " " << burst;
                EXPECT_EQ(a.tuples_aggregated, b.tuples_aggregated);
                EXPECT_EQ(a.value_sum, b.value_sum);
                EXPECT_EQ(a.overflow_sum, b.overflow_sum);
                const AggView v = table.view();
                EXPECT_EQ(merge_tables({&v, 1}).sums, want.sums) << ahead << " " << burst;
            }
        }
        EXPECT_GT(ref.counters().tuples_overflowed(), 0u);
    }
}

TEST(KvKernel, SharedTableBurst) {
    const Trace t = make_trace(32, 4, 1000, 300);
    const AggConfig cfg{.mode = IndexMode::hash, .max_keys = 300};
    std::vector<AggSlot> mem(AggTable::slots_for(cfg));
    SharedAggTable table(mem, cfg);
    KvKernel<SharedAggTable> k(table, {});
    std::vector<FrameRef> refs;
    for (const auto& f : t.frames) refs.push_back({f.data(), f.size()});
    k.aggregate_burst(refs);
    const AggView v = table.view();
    EXPECT_EQ(merge_tables({&v, 1}).sums, to_vector(t.expected));
    EXPECT_EQ(k.counters().packets(), t.frames.size());
}

// --listen-ip: a datagram to kvagg's port at another address is other_address (its sequence
// number not recorded, nothing added), one to a listed address is aggregated, also behind a VLAN
// tag and at the second address; frame by frame and by the burst the same.
TEST(KvKernel, OnlyTheListenAddressesAreAggregated) {
    const uint32_t mine = 0x0A4D0001, second = 0x0A4D0003, other = 0x0A4D0002;
    KvKernelConfig cfg;
    cfg.listen.addrs[0] = mine;
    cfg.listen.addrs[1] = second;
    cfg.listen.count = 2;
    auto frame_to = [](uint32_t dst, uint64_t seq, bool vlan) {
        UdpFrameSpec s = kv_spec();
        s.dst_ip = dst;
        const std::vector<KvTuple> tuples = {{3, 100 + seq}};
        std::vector<uint8_t> f = make_kv_frame(s, 1, seq, tuples);
        if (vlan) f.insert(f.begin() + 12, {0x81, 0x00, 0x00, 0x05});
        return f;
    };
    const std::vector<std::vector<uint8_t>> frames = {
        frame_to(other, 1, false), frame_to(mine, 1, false),  frame_to(other, 2, true),
        frame_to(second, 2, true), frame_to(other, 3, false), frame_to(second, 3, false)};
    for (bool burst : {false, true}) {
        const AggConfig agg{.mode = IndexMode::direct, .max_keys = 10};
        std::vector<AggSlot> mem(AggTable::slots_for(agg));
        AggTable table(mem, agg);
        KvKernel<AggTable> k(table, cfg);
        std::vector<FrameRef> refs;
        for (const auto& f : frames) refs.push_back({f.data(), f.size()});
        if (burst) {
            k.aggregate_burst(refs);
        } else {
            for (const FrameRef& r : refs) k.aggregate_frame(r.data, r.len);
        }
        const KvCounters& c = k.counters();
        EXPECT_EQ(c[KvVerdict::other_address], 3u) << burst;
        EXPECT_EQ(c.packets_ok(), 3u) << burst;
        EXPECT_EQ(c[KvVerdict::duplicate], 0u) << "seqs to other addresses are not recorded";
        EXPECT_EQ(table.find(3), 101u + 102u + 103u) << burst;
    }
    // Without a list every address is served.
    const AggConfig agg{.mode = IndexMode::direct, .max_keys = 10};
    std::vector<AggSlot> mem(AggTable::slots_for(agg));
    AggTable table(mem, agg);
    KvKernel<AggTable> every(table, KvKernelConfig{});
    for (const auto& f : frames) every.aggregate_frame(f.data(), f.size());
    EXPECT_EQ(every.counters()[KvVerdict::other_address], 0u);
    EXPECT_EQ(every.counters().packets_ok(), 3u);  // seqs 1, 2, 3 once each; the rest duplicates
}

namespace {

// A sum datagram with the trailer of `mac` (docs/wire-formats.md "Keyed datagrams").
std::vector<uint8_t> keyed_frame(linerate::auth::MessageMac& mac, uint32_t stream, uint64_t seq,
                                 const std::vector<KvTuple>& tuples, uint32_t src = 0xC0A80001) {
    UdpFrameSpec s = kv_spec();
    s.src_ip = src;
    const std::vector<uint8_t> plain = make_kv_frame(s, stream, seq, tuples);
    std::vector<uint8_t> payload(plain.begin() + kKvHeaderOffset, plain.end());
    payload.resize(payload.size() + linerate::auth::kTrailerLen);
    mac.sign(payload.data(), payload.size() - linerate::auth::kTrailerLen);
    return make_udp_frame(s, kKvHeaderOffset + payload.size(), payload);
}

}  // namespace

// --key: a sum datagram counts only with a valid trailer; a bad one is bad_auth before the
// duplicate window sees its seq (the good copy after it is accepted), burst and frame alike.
TEST(KvKernel, KeyedSumsNeedAValidTrailer) {
    const linerate::auth::Key key{{1, 2, 3}}, other{{9, 9, 9}};
    linerate::auth::MessageMac owner(key), stranger(other);
    std::vector<std::vector<uint8_t>> frames;
    frames.push_back(keyed_frame(owner, 1, 1, {{5, 10}, {6, 20}}));  // good
    frames.push_back(keyed_frame(stranger, 1, 2, {{5, 1000}}));      // wrong key
    std::vector<uint8_t> tampered = keyed_frame(owner, 1, 3, {{5, 7}});
    tampered[kKvTuplesOffset + 15] ^= 1;  // value changed
    frames.push_back(tampered);
    frames.push_back(make_kv_frame(kv_spec(), 1, 4, std::vector<KvTuple>{{5, 100}}));  // none
    frames.push_back(keyed_frame(owner, 1, 2, {{5, 3}}));  // seq 2 again: the bad one left no trace
    frames.push_back(keyed_frame(owner, 1, 1, {{5, 10}}));  // a replay of seq 1: duplicate
    // A tuple count that runs into the trailer: the MAC is good, the datagram malformed.
    std::vector<uint8_t> overlong = keyed_frame(owner, 1, 5, {{5, 1}});
    std::vector<uint8_t> payload(overlong.begin() + kKvHeaderOffset, overlong.end() - 28);
    store_be16(&payload[kKvCountOff], 2);
    payload.resize(payload.size() + 28);
    owner.sign(payload.data(), payload.size() - 28);
    frames.push_back(make_udp_frame(kv_spec(), kKvHeaderOffset + payload.size(), payload));
    for (bool burst : {false, true}) {
        const AggConfig agg{.mode = IndexMode::hash, .max_keys = 64};
        std::vector<AggSlot> mem(AggTable::slots_for(agg));
        AggTable table(mem, agg);
        KvKernelConfig cfg;
        cfg.key = key;
        KvKernel<AggTable> k(table, cfg);
        std::vector<FrameRef> refs;
        for (const auto& f : frames) refs.push_back({f.data(), f.size()});
        if (burst)
            k.aggregate_burst(refs);
        else
            for (const FrameRef& r : refs) k.aggregate_frame(r.data, r.len);
        const KvCounters& c = k.counters();
        EXPECT_EQ(c[KvVerdict::bad_auth], 3u) << burst;
        EXPECT_EQ(c.packets_ok(), 2u) << burst;
        EXPECT_EQ(c[KvVerdict::duplicate], 1u) << burst;
        EXPECT_EQ(c[KvVerdict::malformed], 1u) << burst;
        EXPECT_EQ(c.packets(), frames.size()) << burst;
        EXPECT_EQ(table.find(5), 13u) << burst;
        EXPECT_EQ(table.find(6), 20u) << burst;
    }
}

// --allow without --key: sums only from the listed sources (not_allowed otherwise); requests
// gated the same way, and refused by default when neither is given.
TEST(KvKernel, AllowListGatesSumsAndRequests) {
    KvKernelConfig cfg;
    cfg.allow.nets.push_back({0x0A000000, 0xFF000000});  // 10.0.0.0/8
    const AggConfig agg{.mode = IndexMode::direct, .max_keys = 10};
    std::vector<AggSlot> mem(AggTable::slots_for(agg));
    AggTable table(mem, agg);
    KvKernel<AggTable> k(table, cfg);
    UdpFrameSpec in = kv_spec(), out = kv_spec();
    in.src_ip = 0x0A000002;
    out.src_ip = 0x0B000002;
    std::vector<std::vector<uint8_t>> frames = {
        make_kv_frame(in, 1, 1, std::vector<KvTuple>{{1, 5}}),
        make_kv_frame(out, 2, 1, std::vector<KvTuple>{{1, 50}}),
        make_kv_frame(out, 1, 2, std::vector<KvTuple>{{1, 500}})};
    std::vector<FrameRef> refs;
    for (const auto& f : frames) refs.push_back({f.data(), f.size()});
    k.aggregate_burst(refs);
    EXPECT_EQ(k.counters()[KvVerdict::not_allowed], 2u);
    EXPECT_EQ(table.find(1), 5u);
    // Requests: the same list; a key, when given, must verify as well.
    auto status_from = [](const UdpFrameSpec& s) {
        std::vector<uint8_t> f = make_kv_frame(s, 7, 1, {});
        f[kKvHeaderOffset + kKvOpOff] = kKvOpStatus;
        return f;
    };
    const std::vector<uint8_t> ok = status_from(in), stranger = status_from(out);
    const KvRequest r_in = parse_kv_request(ok.data(), ok.size(), kKvDefaultPort);
    const KvRequest r_out = parse_kv_request(stranger.data(), stranger.size(), kKvDefaultPort);
    ASSERT_EQ(r_in.verdict, KvVerdict::request);
    EXPECT_EQ(k.request_gate(ok.data(), r_in), KvVerdict::request);
    EXPECT_EQ(k.request_gate(stranger.data(), r_out), KvVerdict::not_allowed);
    KvKernel<AggTable> closed(table, KvKernelConfig{});
    EXPECT_EQ(closed.request_gate(ok.data(), r_in), KvVerdict::not_allowed);
    cfg.key = linerate::auth::Key{{4}};
    KvKernel<AggTable> keyed(table, cfg);
    EXPECT_EQ(keyed.request_gate(ok.data(), r_in), KvVerdict::bad_auth);  // no trailer
    EXPECT_EQ(keyed.request_gate(stranger.data(), r_out), KvVerdict::not_allowed);
}

// Frames of one tuple (the kernel's one-tuple shape, admit_one_tuple_frames) among damaged ones,
// ones with a UDP checksum or trailing bytes, duplicates and the port's checksum words: the burst
// path gives the verdicts, counters and sums of frame by frame, with and without the duplicate
// window, software checksums and --listen-ip.
TEST(KvKernel, OneTupleFramesBurstEqualsFrameByFrame) {
    std::mt19937_64 rng(47);
    std::vector<std::vector<uint8_t>> frames;
    std::vector<RxChecksums> ports;
    const RxCheck checks[] = {RxCheck::unknown, RxCheck::good, RxCheck::bad};
    uint64_t next_seq[4] = {1, 1, 1, 1};
    for (int i = 0; i < 6000; ++i) {
        const std::vector<KvTuple> tuples(rng() % 8 ? 1 : rng() % 3, KvTuple{rng() % 300, rng()});
        const uint32_t stream = uint32_t(rng() % 4);
        const uint64_t seq = rng() % 16 ? next_seq[stream]++ : next_seq[stream] - 1;  // a dup
        std::vector<uint8_t> f = make_kv_frame(kv_spec(), stream, seq, tuples);
        if (rng() % 16 == 0) linerate::test::set_udp_checksum(f);
        if (rng() % 16 == 0) f.resize(f.size() + 1 + rng() % 8);
        // Up to the count: a flipped seq would leave its stream's later ones stale.
        if (rng() % 8 == 0) f[rng() % 48] ^= uint8_t(1u << (rng() % 8));
        if (rng() % 32 == 0) f.resize(rng() % f.size());
        frames.push_back(std::move(f));
        ports.push_back(rng() % 4 ? RxChecksums{}
                                  : RxChecksums{checks[rng() % 3], checks[rng() % 3]});
    }
    for (uint64_t window : {uint64_t(0), uint64_t(64)})
        for (bool verify : {true, false})
            for (bool listen : {false, true}) {
                KvKernelConfig cfg{.dup_window = window, .verify_checksums = verify};
                if (listen) {
                    cfg.listen.addrs[0] = kv_spec().dst_ip;
                    cfg.listen.count = 1;
                }
                const AggConfig agg{.mode = IndexMode::hash, .max_keys = 250};
                std::vector<AggSlot> m1(AggTable::slots_for(agg)), m2 = m1;
                AggTable t1(m1, agg), t2(m2, agg);
                KvKernel<AggTable> one(t1, cfg), burst(t2, cfg);
                std::vector<FrameRef> refs;
                for (size_t i = 0; i < frames.size(); ++i) {
                    one.aggregate_frame(frames[i].data(), frames[i].size(), ports[i]);
                    refs.push_back({frames[i].data(), frames[i].size(), ports[i]});
                }
                for (size_t i = 0; i < refs.size(); i += 32)
                    burst.aggregate_burst(
                        std::span(refs).subspan(i, std::min<size_t>(32, refs.size() - i)));
                const KvCounters& a = burst.counters();
                const KvCounters& b = one.counters();
                const std::string what = std::to_string(window) + " " + std::to_string(verify) +
                                         " " + std::to_string(listen);
                EXPECT_EQ(a.by_verdict, b.by_verdict) << what;
                EXPECT_EQ(a.tuples_aggregated, b.tuples_aggregated) << what;
                EXPECT_EQ(a.value_sum, b.value_sum) << what;
                EXPECT_EQ(a.overflow_sum, b.overflow_sum) << what;
                EXPECT_EQ(a.udp_checksum_offloaded, b.udp_checksum_offloaded) << what;
                EXPECT_EQ(a.packets(), frames.size()) << what;
                EXPECT_GT(a.packets_ok(), 3000u) << what;
                EXPECT_GT(a.tuples_overflowed(), 0u) << what;  // 300 keys into 250
                const AggView v1 = t1.view(), v2 = t2.view();
                EXPECT_EQ(merge_tables({&v2, 1}).sums, merge_tables({&v1, 1}).sums) << what;
                if (verify) {
                    EXPECT_GT(a[KvVerdict::bad_ip_checksum], 0u) << what;
                }
                if (window) {
                    EXPECT_GT(a[KvVerdict::duplicate] + a[KvVerdict::stale], 0u) << what;
                }
            }
}
