// kvagg --state end to end on pcap files: a run resumes the sums and duplicate windows of the one
// before (the same datagrams again aggregate nothing, new ones add), on one and two workers; a
// missing file starts empty and says so; a bad file (other options, truncated, damaged, a newer
// format, not a state file) is one line and exit 2, nothing loaded and the file left as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "kvagg/kv_state.hpp"
#include "kvagg_trace.hpp"
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

// kvagg over `pcaps` (one per worker, each on its own queue of one net_pcap port) with --state,
// kOptions and `extra` (which replaces an option of kOptions it names).
StateRun run_with_state(const std::vector<std::string>& pcaps, const std::string& state,
                        const std::vector<std::string>& extra = {}) {
    const std::string dump = scratch("state_dump.csv"), json = scratch("state.json");
    std::string vdev = "--vdev=net_pcap0";
    for (const std::string& p : pcaps) vdev += ",rx_pcap=" + p + ",tx_pcap=/dev/null";
    std::vector<std::string> argv = {kApp};
    for (const std::string& a : no_huge_eal(pcaps.size() == 1 ? "0" : "0@0,1@0,2@1"))
        argv.push_back(a);
    argv.insert(argv.end(), {vdev, "--", "--duration", "1.2", "--state", state, "--dump", dump,
                             "--json", json});
    for (size_t i = 0; i + 1 < kOptions.size(); i += 2)  // pairs; `extra` overrides
        if (std::find(extra.begin(), extra.end(), kOptions[i]) == extra.end())
            argv.insert(argv.end(), {kOptions[i], kOptions[i + 1]});
    argv.insert(argv.end(), extra.begin(), extra.end());
    StateRun r;
    r.proc = run_process(argv, {.timeout_s = 60});
    if (r.proc.exit_status == 0) {
        r.dump = read_dump(dump);
        r.json = read_json(json);
    }
    return r;
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
        {newer, {}, "format version 2 is newer than this kvagg's 1"},
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
