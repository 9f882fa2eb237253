// kvagg's --state file (kv_state.hpp) as plain functions: a checkpoint round trip restores the
// same sums, windows and remembered flushes; every bad file (other options, damaged, truncated,
// a newer format, not a state file) is refused with one line naming why, and a missing one is
// no error; the write is atomic.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "../fuzz/state_layout.hpp"
#include "kvagg/kv_state.hpp"
#include "support/scratch.hpp"

using namespace linerate::kvagg;
using linerate::test::scratch;

namespace {

const StateLayout kLayout = test::fuzz_state_layout();

// A worker's table and window after some traffic, copied as the worker copies them.
WorkerImage worker_image(uint64_t salt) {
    std::vector<AggSlot> slots(kLayout.slots);
    AggTable table(slots, {.mode = kLayout.index, .max_keys = kLayout.keys});
    for (uint64_t k = 0; k < 20; ++k) table.add(k * 7919 + salt, k + 1);
    table.add(0, 5);
    DupFilter dup(kLayout.dup_window, kLayout.max_streams);
    for (uint64_t seq : {1, 2, 3, 5, 8, 40}) dup.check(uint32_t(10 + salt), seq);
    dup.check(uint32_t(10 + salt), 8);  // a duplicate, counted
    WorkerImage im{{}, dup};
    table.copy_to(im.table);
    return im;
}

StateImage sample_image() {
    StateImage image{.checkpoint = 7};
    image.control.flushes = 3;
    image.control.flushed_sum = 12345;
    image.control.last_reset[42] = {9, {{1, 2, 3}, {4, 5}}};
    image.workers.push_back(worker_image(1));
    image.workers.push_back(worker_image(2));
    return image;
}

std::string refusal(std::span<const uint8_t> file, const StateLayout& layout = kLayout) {
    try {
        decode_state(file, layout);
    } catch (const StateError& e) {
        return e.what();
    }
    return "loaded";
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST(StateFile, RoundTripRestoresSumsWindowsAndFlushes) {
    const StateImage saved = sample_image();
    const StateImage got = decode_state(encode_state(kLayout, saved), kLayout);
    EXPECT_EQ(got.checkpoint, 7u);
    EXPECT_EQ(got.control.flushes, 3u);
    EXPECT_EQ(got.control.flushed_sum, 12345u);
    EXPECT_EQ(got.control.last_reset, saved.control.last_reset);
    ASSERT_EQ(got.workers.size(), 2u);
    for (size_t w = 0; w < 2; ++w) {
        std::vector<AggSlot> slots(kLayout.slots);
        AggTable table(slots, {.mode = kLayout.index, .max_keys = kLayout.keys});
        table.restore(got.workers[w].table);
        EXPECT_EQ(table.size(), 21u);
        EXPECT_EQ(table.find(0), 5u);
        for (uint64_t k = 0; k < 20; ++k) EXPECT_EQ(table.find(k * 7919 + w + 1), k + 1);
        // The window goes on where it stopped: seen numbers are duplicates, gaps still new.
        DupFilter dup = got.workers[w].dup;
        const uint32_t stream = uint32_t(11 + w);
        EXPECT_EQ(dup.state(stream, 0)->duplicates, 1u);
        EXPECT_EQ(dup.check(stream, 5), SeqVerdict::duplicate);
        EXPECT_EQ(dup.check(stream, 40), SeqVerdict::duplicate);
        EXPECT_EQ(dup.check(stream, 4), SeqVerdict::accept);
        EXPECT_EQ(dup.check(stream, 41), SeqVerdict::accept);
        EXPECT_EQ(durable_through(got.workers[w].dup, stream), 3u);  // 4 was missing
    }
}

// --export's part: version 2 only when there is one (a file without it stays version 1, which
// an older kvagg reads), the epochs Redis has not acknowledged back as they were.
TEST(StateFile, ExportBacklogRoundTrips) {
    StateImage saved = sample_image();
    EXPECT_EQ(encode_state(kLayout, saved)[kStateVersionOff], kStateFormatPlain);
    saved.exports.instance = 0xfeed;
    saved.exports.next_epoch = 9;
    saved.exports.epochs = {std::make_shared<const ExportEpoch>(ExportEpoch{7, {{1, 2}, {5, 6}}}),
                            std::make_shared<const ExportEpoch>(ExportEpoch{8, {{3, ~0ull}}})};
    const std::vector<uint8_t> file = encode_state(kLayout, saved);
    EXPECT_EQ(file[kStateVersionOff], kStateFormatVersion);
    const StateImage got = decode_state(file, kLayout);
    EXPECT_EQ(got.exports.instance, 0xfeedu);
    EXPECT_EQ(got.exports.next_epoch, 9u);
    ASSERT_EQ(got.exports.epochs.size(), 2u);
    EXPECT_EQ(got.exports.epochs[0]->epoch, 7u);
    auto pairs = [](const EpochPtr& e) {
        std::vector<std::pair<uint64_t, uint64_t>> p;
        for (const AggSlot& s : e->sums) p.emplace_back(s.key, s.value);
        return p;
    };
    using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;
    EXPECT_EQ(pairs(got.exports.epochs[0]), (Pairs{{1, 2}, {5, 6}}));
    EXPECT_EQ(pairs(got.exports.epochs[1]), (Pairs{{3, ~0ull}}));
    saved.exports.next_epoch = 8;  // an epoch at or above the next one: damaged
    EXPECT_EQ(refusal(encode_state(kLayout, saved)),
              "damaged body: an export epoch out of order or too long");
}

TEST(StateFile, OtherOptionsAreRefusedByName) {
    const std::vector<uint8_t> file = encode_state(kLayout, sample_image());
    auto with = [](auto change) {
        StateLayout l = kLayout;
        change(l);
        return l;
    };
    EXPECT_EQ(refusal(file, with([](StateLayout& l) { l.keys = 128; })),
              "written with other options: --keys 64 (this run: 128)");
    EXPECT_EQ(refusal(file, with([](StateLayout& l) { l.workers = 1; })),
              "written with other options: workers 2 (this run: 1)");
    EXPECT_EQ(refusal(file, with([](StateLayout& l) { l.index = IndexMode::direct; })),
              "written with other options: --index hash (this run: direct)");
    EXPECT_EQ(refusal(file, with([](StateLayout& l) { l.dup_window = 128; })),
              "written with other options: --dup-window 64 (this run: 128)");
    EXPECT_EQ(refusal(file, with([](StateLayout& l) { l.max_streams = 8; })),
              "written with other options: --max-streams 4 (this run: 8)");
    EXPECT_EQ(refusal(file, with([](StateLayout& l) { l.probe_limit = 8; })),
              "written with other options: --probe-limit 64 (this run: 8)");
}

TEST(StateFile, TruncatedAtAnyLengthIsRefused) {
    const std::vector<uint8_t> file = encode_state(kLayout, sample_image());
    for (size_t n = 0; n < file.size(); ++n) {
        const std::string why = refusal({file.data(), n});
        EXPECT_NE(why, "loaded") << n;
        if (n >= kStateHeaderLen) {
            EXPECT_EQ(why, "truncated: body " + std::to_string(n - kStateHeaderLen) + " of " +
                               std::to_string(file.size() - kStateHeaderLen) + " bytes");
        }
    }
    EXPECT_EQ(refusal({file.data(), 40}), "truncated: 40 bytes, shorter than the 96-byte header");
    EXPECT_EQ(refusal({file.data(), 3}), "not a kvagg state file (no LRKVSTAT magic)");
}

TEST(StateFile, EveryFlippedBitIsRefused) {
    const std::vector<uint8_t> file = encode_state(kLayout, sample_image());
    for (size_t i = 0; i < file.size(); ++i)
        for (int bit : {0, 5}) {
            std::vector<uint8_t> bad = file;
            bad[i] ^= uint8_t(1 << bit);
            EXPECT_NE(refusal(bad), "loaded") << "byte " << i;
        }
    std::vector<uint8_t> body = file;
    body.back() ^= 1;
    EXPECT_EQ(refusal(body), "damaged body (checksum)");
    std::vector<uint8_t> longer = file;
    longer.push_back(0);
    EXPECT_EQ(refusal(longer), "damaged: 1 bytes after the body");
}

TEST(StateFile, NewerFormatAndOtherFilesAreRefused) {
    std::vector<uint8_t> file = encode_state(kLayout, sample_image());
    file[kStateVersionOff] = kStateFormatVersion + 1;
    EXPECT_EQ(refusal(file), "format version 3 is newer than this kvagg's 2");
    const std::string text = "key,value\n1,2\n";
    EXPECT_EQ(refusal({reinterpret_cast<const uint8_t*>(text.data()), text.size()}),
              "not a kvagg state file (no LRKVSTAT magic)");
}

TEST(StateFile, MissingFileIsNoErrorAndWriteIsAtomic) {
    const std::string path = scratch("state.bin");
    EXPECT_FALSE(load_state_file(path, kLayout).has_value());
    const std::vector<uint8_t> first = encode_state(kLayout, sample_image());
    // A .tmp left by a crash in mid-checkpoint is neither read nor in the way.
    std::ofstream(path + ".tmp") << "half a checkpoint";
    EXPECT_FALSE(load_state_file(path, kLayout).has_value());
    write_state_file(path, first);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    EXPECT_EQ(read_file(path), first);
    EXPECT_EQ(load_state_file(path, kLayout)->checkpoint, 7u);
    EXPECT_THROW(write_state_file(scratch("no/such/dir/state.bin"), first), std::runtime_error);
}

TEST(StateFile, CrcIsCastagnoli) {
    const std::string check = "123456789";  // the standard check value of CRC-32C
    EXPECT_EQ(crc32c({reinterpret_cast<const uint8_t*>(check.data()), check.size()}), 0xE3069283u);
}

// The fuzz target starts from these; each must decode, or the fuzzer starts at the checksums.
TEST(StateFile, FuzzSeedsDecode) {
    const std::string dir = std::string(LINERATE_SOURCE_DIR) + "/tests/fuzz/corpus/state_load";
    size_t seeds = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        const std::vector<uint8_t> seed = read_file(e.path());
        ASSERT_FALSE(seed.empty());
        EXPECT_EQ(refusal({seed.data() + 1, seed.size() - 1}), "loaded") << e.path();
        ++seeds;
    }
    EXPECT_GE(seeds, 3u);
}
