#pragma once
// kvagg's --state file: what a restarted kvagg must not lose (every worker's table, its streams'
// duplicate windows, the flush counters and the last reset flush per stream), encoded, checked
// and written atomically. Plain functions, no EAL: unit tests and the fuzz target use them.
//
// Layout (docs/kvagg.md "State file"), every integer little-endian:
//   header, kStateHeaderLen bytes: magic "LRKVSTAT", format version, header length, body length,
//   CRC32C of the body, CRC32C of the header (this field as 0), the options that fix the layout
//   (--keys, --probe-limit, --index, --dup-window, --max-streams, workers, slots per table) and
//   the checkpoint number;
//   body: the control part (flushes, flushed_sum, the remembered reset flushes with their
//   response frames), then per worker its table's used slots (index, key, value) and its streams
//   (id, top, refusals, window bitmap); format version 2 (written with --export only, so a
//   file without it stays readable by an older kvagg) adds the export part: the instance id, the
//   next epoch, the epochs Redis has not acknowledged (number, then key, delta pairs).
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kvagg/agg_table.hpp"
#include "kvagg/dup_window.hpp"
#include "kvagg/export_backlog.hpp"

namespace linerate::kvagg {

inline constexpr char kStateMagic[8] = {'L', 'R', 'K', 'V', 'S', 'T', 'A', 'T'};
inline constexpr uint32_t kStateFormatVersion = 2;  // the newest this kvagg reads and writes
inline constexpr uint32_t kStateFormatPlain = 1;    // what a file without an export part is
inline constexpr size_t kStateHeaderLen = 96;
// Header offsets the fuzz target and tests patch.
inline constexpr size_t kStateVersionOff = 8, kStateBodyLenOff = 16, kStateBodyCrcOff = 24,
                        kStateHeaderCrcOff = 28;

// A state file that must not be loaded: the one line kvagg prints before exit 2.
struct StateError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The options a state file's layout depends on; a file is loaded only into the same.
struct StateLayout {
    uint64_t keys = 0;
    IndexMode index = IndexMode::hash;
    uint32_t probe_limit = 0;
    uint64_t dup_window = 0;
    uint32_t max_streams = 0;
    uint32_t workers = 0;
    uint64_t slots = 0;  // per table: AggGeometry::slots_for()
};

// stream -> (request id, response frames) of its last flush with reset (kv_control.hpp).
using ResetMemory = std::map<uint32_t, std::pair<uint64_t, std::vector<std::vector<uint8_t>>>>;

struct ControlImage {
    uint64_t flushes = 0;      // flush requests answered, over every run
    uint64_t flushed_sum = 0;  // wrapping sum flush with reset took out, over every run
    ResetMemory last_reset;
};

// One worker's part, copied by the worker between two bursts.
struct WorkerImage {
    AggTableCopy table;
    DupFilter dup;
};

struct StateImage {
    uint64_t checkpoint = 0;  // 1, 2, ... over every run with the same file
    ControlImage control;
    std::vector<WorkerImage> workers;
    ExportImage exports;  // --export (instance 0: none)
};

// CRC32C (Castagnoli), the checksum of the header and the body.
uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc = 0);

std::vector<uint8_t> encode_state(const StateLayout& layout, const StateImage& image);
// The same into `out` (cleared first): a buffer kept from one checkpoint to the next keeps its
// pages (a new one per checkpoint page-faulted and zeroed the whole file's size each time).
void encode_state(const StateLayout& layout, const StateImage& image, std::vector<uint8_t>& out);
// The image of a whole file; throws StateError naming what is wrong (not a state file, a newer
// format, damaged, truncated, written with other options) and never loads part of it.
StateImage decode_state(std::span<const uint8_t> file, const StateLayout& expected);

// nullopt when `path` does not exist; throws StateError for a file that cannot be read or
// decoded.
std::optional<StateImage> load_state_file(const std::string& path, const StateLayout& expected);
// PATH.tmp written and fsynced, renamed to PATH, the directory fsynced: PATH is always a whole
// file, the old or the new one. `pause` between the fsync and the rename is the tests' window
// for a crash in mid-checkpoint. Throws std::runtime_error on any failure (PATH is unchanged).
void write_state_file(const std::string& path, std::span<const uint8_t> bytes,
                      std::chrono::milliseconds pause = std::chrono::milliseconds(0));

// The stream's "durable through" sequence number in a saved window: every number up to it is
// in the image (0: nothing, or the stream is not in it).
uint64_t durable_through(const DupFilter& saved, uint32_t stream);

}  // namespace linerate::kvagg
