// kvagg --state end to end on pcap files: a run resumes the sums and duplicate windows of the one
// before (the same datagrams again aggregate nothing, new ones add), on one and two workers; a
// missing file starts empty and says so; a bad file (other options, truncated, damaged, a newer
// format, not a state file) is one line and exit 2, nothing loaded and the file left as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <regex>

#include <signal.h>

#include "kvagg/kv_state.hpp"
#include "kvagg/kv_wire.hpp"
#include "kvagg_trace.hpp"
#include "support/app_metrics.hpp"
#include "support/doc_table.hpp"
#include "support/process.hpp"

using namespace linerate;
using namespace linerate::test;
using namespace linerate::kvagg;
using namespace linerate::kvagg::test;

namespace {

const std::string kApp = binary("apps/kvagg/kvagg");
const std::vector<std::string> kOptions = {"--dup-window", "256",   "--max-streams",  "16",
                                           "--keys",       "10000", "--stats-period", "0"};

struct StateRun {
    ProcessResult proc;
    Dump dump;
    nlohmann::json json;
};

// The run's dump and JSON, when it ended with exit 0.
StateRun collect(ProcessResult proc, const std::string& dump, const std::string& json) {
    StateRun r{.proc = std::move(proc)};
    if (r.proc.exit_status == 0) {
        r.dump = read_dump(dump);
        r.json = read_json(json);
    }
    return r;
}

// kvagg over `pcaps` (one per worker, each on its own queue of one net_pcap port) with --state,
// kOptions and `extra` (which replaces an option of kOptions it names). A port, not --pcap, for
// the two workers: it does not end by itself, so it gets SIGINT once its workers took every frame
// of the pcaps (its --metrics say so), not after a while.
StateRun run_with_state(const std::vector<std::string>& pcaps, const std::string& state,
                        const std::vector<std::string>& extra = {}) {
    const std::string dump = scratch("state_dump.csv"), json = scratch("state.json");
    std::string vdev = "--vdev=net_pcap0";
    uint64_t frames = 0;
    for (const std::string& p : pcaps) {
        vdev += ",rx_pcap=" + p + ",tx_pcap=/dev/null";
        frames += pcapio::count_frames(p);
    }
    std::vector<std::string> argv = {kApp};
    for (const std::string& a : no_huge_eal(pcaps.size() == 1 ? "0" : "0@0,1@0,2@1"))
        argv.push_back(a);
    argv.insert(argv.end(), {vdev, "--", "--metrics", "127.0.0.1:0", "--state", state, "--dump",
                             dump, "--json", json});
    for (size_t i = 0; i + 1 < kOptions.size(); i += 2)  // pairs; `extra` overrides
        if (std::find(extra.begin(), extra.end(), kOptions[i]) == extra.end())
            argv.insert(argv.end(), {kOptions[i], kOptions[i + 1]});
    argv.insert(argv.end(), extra.begin(), extra.end());
    BackgroundProcess kvagg(argv);
    std::smatch m;
    if (kvagg.wait_for_output(": running", 30)) {  // a bad --state file exits before
        const std::string out = kvagg.output();
        if (std::regex_search(out, m, std::regex("metrics at http://([0-9.:]+)/metrics")))
            wait_for_metric_total(nullptr, m[1], "linerate_rx_packets_total", frames, 30);
        kvagg.signal(SIGINT);
    }
    return collect(kvagg.finish(60), dump, json);
}

std::string write_trace(const std::string& name, const Trace& t) {
    const std::string path = scratch(name);
    pcapio::write_frames(path, t.frames);
    return path;
}

Dump add(Dump a, const Dump& b) {
    for (auto [k, v] : b) a[k] += v;
    return a;
}

std::vector<uint8_t> bytes_of(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

size_t lines_with(const std::string& out, const std::string& what) {
    size_t n = 0;
    for (size_t at = out.find(what); at != std::string::npos; at = out.find(what, at + 1)) ++n;
    return n;
}

}  // namespace

TEST(KvaggState, ResumesSumsAndWindowsOnOneWorker) {
    const Trace a = make_trace({.seed = 21, .frames = 1500, .first_stream = 0, .extras = false});
    const Trace b = make_trace({.seed = 22, .frames = 1500, .first_stream = 4, .extras = false});
    const std::string pa = write_trace("a.pcap", a), pb = write_trace("b.pcap", b);
    const std::string state = scratch("one.state");
    const StateRun first = run_with_state({pa}, state);
    ASSERT_EQ(first.proc.exit_status, 0) << first.proc.out;
    EXPECT_NE(first.proc.out.find("kvagg: state " + state + ": no such file, starting empty"),
              std::string::npos)
        << first.proc.out;
    EXPECT_EQ(first.dump, a.expected.sums);
    EXPECT_EQ(first.json["state"]["loaded_checkpoint"], 0);
    expect_json_documented(first.json);  // docs/json.md: `state` and its keys
    // The same datagrams again: every one is a duplicate (or stale) of the restored windows.
    const StateRun again = run_with_state({pa}, state);
    ASSERT_EQ(again.proc.exit_status, 0) << again.proc.out;
    EXPECT_EQ(again.dump, a.expected.sums);
    EXPECT_EQ(again.json["aggregated_packets"], 0);
    EXPECT_EQ(again.json["duplicates"].get<uint64_t>() + again.json["stale"].get<uint64_t>(),
              a.expected.good + a.expected.duplicate + a.expected.stale);
    EXPECT_EQ(again.json["state"]["loaded_checkpoint"],
              first.json["state"]["last_checkpoint"].get<uint64_t>());
    // New streams add to what was restored.
    const StateRun more = run_with_state({pb}, state);
    ASSERT_EQ(more.proc.exit_status, 0) << more.proc.out;
    EXPECT_EQ(more.dump, add(a.expected.sums, b.expected.sums));
    EXPECT_EQ(more.json["aggregated_sum"], a.expected.sent_sum + b.expected.sent_sum);
}

TEST(KvaggState, ResumesOnTwoWorkers) {
    const Trace a = make_trace({.seed = 23, .frames = 1500, .first_stream = 0, .extras = false});
    const Trace b = make_trace({.seed = 24, .frames = 1500, .first_stream = 4, .extras = false});
    const std::string pa = write_trace("a2.pcap", a), pb = write_trace("b2.pcap", b);
    const std::string state = scratch("two.state");
    const StateRun first = run_with_state({pa, pb}, state);
    ASSERT_EQ(first.proc.exit_status, 0) << first.proc.out;
    const Dump want = add(a.expected.sums, b.expected.sums);
    EXPECT_EQ(first.dump, want);
    const StateRun again = run_with_state({pa, pb}, state);
    ASSERT_EQ(again.proc.exit_status, 0) << again.proc.out;
    EXPECT_EQ(again.dump, want);
    EXPECT_EQ(again.json["aggregated_packets"], 0);
    // On one worker the file is refused: its layout has two.
    const StateRun one = run_with_state({pa}, state);
    EXPECT_EQ(one.proc.exit_status, 2) << one.proc.out;
    EXPECT_EQ(lines_with(one.proc.out, "written with other options: workers 2 (this run: 1)"), 1u)
        << one.proc.out;
}

TEST(KvaggState, BadFileIsOneLineExit2AndStaysAsItWas) {
    const Trace a = make_trace({.seed = 25, .frames = 300, .first_stream = 0, .extras = false});
    const std::string pa = write_trace("bad.pcap", a);
    const std::string good = scratch("good.state");
    ASSERT_EQ(run_with_state({pa}, good).proc.exit_status, 0);
    const std::vector<uint8_t> file = bytes_of(good);
    ASSERT_GT(file.size(), kStateHeaderLen);
    std::vector<uint8_t> flipped = file, newer = file;
    flipped[file.size() / 2] ^= 0x10;
    newer[kStateVersionOff] = kStateFormatVersion + 1;
    const std::string text = "1,2\n";
    const struct {
        std::vector<uint8_t> bytes;
        std::vector<std::string> extra;
        std::string why;
    } cases[] = {
        {file, {"--keys", "20000"}, "written with other options: --keys 10000 (this run: 20000)"},
        {file, {"--dup-window", "512"}, "written with other options: --dup-window 256"},
        {{file.begin(), file.end() - 7}, {}, "truncated: body"},
        {flipped, {}, "damaged body (checksum)"},
        {newer, {}, "format version 3 is newer than this kvagg's 2"},
        {{text.begin(), text.end()}, {}, "not a kvagg state file"},
    };
    for (const auto& c : cases) {
        const std::string path = scratch("case.state");
        write_bytes(path, c.bytes);
        const StateRun r = run_with_state({pa}, path, c.extra);
        EXPECT_EQ(r.proc.exit_status, 2) << c.why << "\n" << r.proc.out;
        EXPECT_EQ(lines_with(r.proc.out, "kvagg: --state " + path + ": " + c.why), 1u)
            << r.proc.out;
        EXPECT_EQ(lines_with(r.proc.out, "nothing loaded"), 1u) << r.proc.out;
        EXPECT_EQ(r.proc.out.find("kvagg: running"), std::string::npos) << r.proc.out;
        EXPECT_EQ(bytes_of(path), c.bytes) << c.why;  // nothing written over it
    }
}

TEST(KvaggState, CommandLineChecks) {
    expect_usage_error(kApp, {"--pcap", "x.pcap", "--state", scratch("s"), "--agg", "shared"},
                       "--state needs --agg per-worker");
    expect_usage_error(kApp, {"--pcap", "x.pcap", "--state", "/no/such/dir/s"},
                       "--state /no/such/dir/s.tmp");
    expect_usage_error(kApp, {"--pcap", "x.pcap", "--checkpoint-ms", "0"}, "--checkpoint-ms");
}

namespace {

// The committed fixture of format version 1 (tests/kvagg/fixtures/make_state_v1.py says how it
// was made): what kvagg wrote in November 2026, which every later kvagg must load.
const std::string kFixtures = std::string(LINERATE_SOURCE_DIR) + "/tests/kvagg/fixtures/";
const std::string kFixtureState = kFixtures + "state_v1.state";
const std::vector<std::string> kFixtureOptions = {"--keys",        "64", "--dup-window",   "64",
                                                  "--max-streams", "4",  "--stats-period", "0"};

// kvagg replaying the fixture's datagrams onto `state` (a copy: a clean stop writes it) with the
// fixture's options; ends at the end of the pcap.
StateRun run_on_fixture(const std::string& state) {
    const std::string dump = scratch("fixture_dump.csv"), json = scratch("fixture.json");
    std::vector<std::string> argv = {kApp,      "--pcap", kFixtures + "state_v1_data.pcap",
                                     "--state", state,    "--dump",
                                     dump,      "--json", json};
    argv.insert(argv.end(), kFixtureOptions.begin(), kFixtureOptions.end());
    return collect(run_process(argv, {.timeout_s = 60}), dump, json);
}

uint64_t total(const Dump& d) {
    uint64_t sum = 0;
    for (auto [k, v] : d) sum += v;
    return sum;
}

}  // namespace

// Upgrades keep the state (docs/kvagg.md, Upgrades): today's kvagg and every later one load the
// version 1 file and hold exactly its sums, windows and flush counters.
TEST(KvaggStateFixture, LoadsTheVersion1FileWithItsSumsWindowsAndFlushes) {
    const std::string state = scratch("fixture.state");
    write_bytes(state, bytes_of(kFixtureState));
    const StateRun r = run_on_fixture(state);
    ASSERT_EQ(r.proc.exit_status, 0) << r.proc.out;
    EXPECT_EQ(lines_with(r.proc.out,
                         "kvagg: state " + state + ": checkpoint 2 loaded (30 keys, 3 streams)\n"),
              1u)
        << r.proc.out;
    EXPECT_EQ(r.json["state"]["loaded_checkpoint"], 2);
    // The sums it holds: keys 0..9 flushed with reset (0, their places kept), 10..29 as sent.
    const Dump held = read_dump(kFixtures + "state_v1_sums.csv");
    ASSERT_EQ(held.size(), 30u);
    EXPECT_EQ(held.at(0), 0u);
    EXPECT_EQ(held.at(10), 2120u);
    EXPECT_EQ(held.at(29), 1734u);
    EXPECT_EQ(r.dump, held);
    // The windows: the same 40 datagrams again are all duplicates (33 first copies, 7 repeats).
    EXPECT_EQ(r.json["rx_packets"], 40);
    EXPECT_EQ(r.json["aggregated_packets"], 0);
    EXPECT_EQ(r.json["duplicates"], 40);
    EXPECT_EQ(r.json["stale"], 0);
    // The flush counters, and nothing lost: what is held plus what was flushed is what was sent.
    EXPECT_EQ(r.json["service"]["flushes"], 1);
    EXPECT_EQ(r.json["service"]["flushed_sum"], 21172);
    EXPECT_EQ(r.json["aggregated_sum"], 49997);
    EXPECT_EQ(total(read_dump(kFixtures + "state_v1_sent.csv")), 49997u + 21172u);
}

// The remembered flush with reset (stream 99, request id 7, keys 0..9), frame for frame, as the
// loader gives it to the control thread: a repeat of the request gets this answer.
TEST(KvaggStateFixture, Version1FileRemembersItsFlushWithReset) {
    const StateLayout layout{.keys = 64,
                             .index = IndexMode::hash,
                             .probe_limit = 64,
                             .dup_window = 64,
                             .max_streams = 4,
                             .workers = 1,
                             .slots = 128};  // what --keys 64 gives (the header says so)
    const StateImage image = decode_state(bytes_of(kFixtureState), layout);
    EXPECT_EQ(image.checkpoint, 2u);
    EXPECT_EQ(image.control.flushes, 1u);
    EXPECT_EQ(image.control.flushed_sum, 21172u);
    ASSERT_EQ(image.control.last_reset.size(), 1u);
    const auto& [stream, memo] = *image.control.last_reset.begin();
    EXPECT_EQ(stream, 99u);
    EXPECT_EQ(memo.first, 7u);
    ASSERT_EQ(memo.second.size(), 1u);
    const std::vector<uint8_t>& f = memo.second[0];
    ASSERT_EQ(f.size(), kv_frame_len(10));
    const uint8_t* app = f.data() + kKvHeaderOffset;
    EXPECT_EQ(app[kKvOpOff], kKvOpFlush | kKvOpResponse);
    EXPECT_EQ(pkt::load_be16(app + kKvCountOff), 10u);
    EXPECT_EQ(pkt::load_be64(app + kKvSeqOff), 7u);
    uint64_t flushed = 0;
    for (size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(kv_tuple_key(f.data() + kKvTuplesOffset, i), i);
        flushed += kv_tuple_value(f.data() + kKvTuplesOffset, i);
    }
    EXPECT_EQ(flushed, 21172u);
    ASSERT_EQ(image.workers.size(), 1u);
    EXPECT_EQ(image.workers[0].table.size, 30u);
    EXPECT_EQ(image.workers[0].dup.images().size(), 3u);
}

// A later format, written whole (its header checksum right): one line naming both versions,
// exit 2, the file untouched.
TEST(KvaggStateFixture, ANewerFormatVersionIsOneLineAndExit2) {
    std::vector<uint8_t> newer = bytes_of(kFixtureState);
    newer[kStateVersionOff] = kStateFormatVersion + 1;
    std::fill_n(newer.begin() + kStateHeaderCrcOff, 4, 0);
    const uint32_t crc = crc32c({newer.data(), kStateHeaderLen});
    for (int i = 0; i < 4; ++i) newer[kStateHeaderCrcOff + size_t(i)] = uint8_t(crc >> (8 * i));
    const std::string state = scratch("newer.state");
    write_bytes(state, newer);
    const StateRun r = run_on_fixture(state);
    EXPECT_EQ(r.proc.exit_status, 2) << r.proc.out;
    const std::string line =
        "kvagg: --state " + state + ": format version " + std::to_string(kStateFormatVersion + 1) +
        " is newer than this kvagg's " + std::to_string(kStateFormatVersion) + "; nothing loaded";
    EXPECT_EQ(lines_with(r.proc.out, line), 1u) << r.proc.out;
    EXPECT_EQ(lines_with(r.proc.out, "format version"), 1u) << "one line\n" << r.proc.out;
    EXPECT_EQ(r.proc.out.find("kvagg: running"), std::string::npos) << r.proc.out;
    EXPECT_EQ(bytes_of(state), newer);
}
