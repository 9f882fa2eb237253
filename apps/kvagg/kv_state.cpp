#include "kvagg/kv_state.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <thread>

namespace linerate::kvagg {

namespace {

constexpr std::array<uint32_t, 256> kCrcTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        t[i] = c;
    }
    return t;
}();

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const uint8_t* p, size_t n, uint32_t c) {
    uint64_t c64 = c;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
    }
    c = uint32_t(c64);
    for (; n; ++p, --n) c = __builtin_ia32_crc32qi(c, *p);
    return c;
}
#endif

// A little-endian field of N bytes at `p`: the one store every writer here uses.
template <size_t N>
void put_le(uint8_t* p, uint64_t v) {
    for (size_t i = 0; i < N; ++i) p[i] = uint8_t(v >> (8 * i));
}

// Little-endian fields into a growing buffer. Each field is one resize and byte stores the
// compiler merges into one store (push_back per byte cost a capacity check per byte).
class Writer {
  public:
    explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
    void u8(uint8_t v) { out_.push_back(v); }
    void u32(uint32_t v) { put<4>(v); }
    void u64(uint64_t v) { put<8>(v); }
    void bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
    size_t size() const { return out_.size(); }
    // Overwrites a u64 written before at byte `at`.
    void patch_u64(size_t at, uint64_t v) { put_le<8>(&out_[at], v); }

  private:
    template <size_t N>
    void put(uint64_t v) {
        const size_t at = out_.size();
        out_.resize(at + N);
        put_le<N>(out_.data() + at, v);
    }
    std::vector<uint8_t>& out_;
};

// Little-endian fields out of a span; reading past its end is a truncated body.
class Reader {
  public:
    explicit Reader(std::span<const uint8_t> in) : in_(in) {}
    uint8_t u8() { return uint8_t(get(1)); }
    uint32_t u32() { return uint32_t(get(4)); }
    uint64_t u64() { return get(8); }
    std::span<const uint8_t> bytes(size_t n) {
        need(n);
        std::span<const uint8_t> b = in_.subspan(at_, n);
        at_ += n;
        return b;
    }
    size_t left() const { return in_.size() - at_; }

  private:
    void need(size_t n) const {
        if (n > left()) throw StateError("body ends in the middle of a record");
    }
    uint64_t get(int n) {
        need(size_t(n));
        uint64_t v = 0;
        for (int i = 0; i < n; ++i) v |= uint64_t(in_[at_ + size_t(i)]) << (8 * i);
        at_ += size_t(n);
        return v;
    }
    std::span<const uint8_t> in_;
    size_t at_ = 0;
};

void encode_control(Writer& w, const ControlImage& c) {
    w.u64(c.flushes);
    w.u64(c.flushed_sum);
    w.u32(uint32_t(c.last_reset.size()));
    for (const auto& [stream, memo] : c.last_reset) {
        w.u32(stream);
        w.u64(memo.first);
        w.u32(uint32_t(memo.second.size()));
        for (const std::vector<uint8_t>& f : memo.second) {
            w.u32(uint32_t(f.size()));
            w.bytes(f);
        }
    }
}

void encode_worker(Writer& w, const WorkerImage& im) {
    const AggTableCopy& t = im.table;
    w.u64(t.size);
    w.u64(t.zero_value);
    w.u8(t.zero_used);
    const size_t used_at = w.size();  // the count, patched after the one pass over the slots
    w.u64(0);
    uint64_t used = 0;
    auto put_slots = [&](size_t from, size_t to) {
        for (size_t i = from; i < to; ++i) {
            if (t.slots[i].key == 0) continue;
            w.u64(i);
            w.u64(t.slots[i].key);
            w.u64(t.slots[i].value);
            ++used;
        }
    };
    if (t.lines.empty()) put_slots(0, t.slots.size());
    // The copy says which lines may hold keys: the others are not read.
    for (size_t word = 0; word < t.lines.size(); ++word)
        for_each_line_in_word(word, t.lines[word], [&](size_t first) {
            put_slots(first, std::min(first + kAggLineSlots, t.slots.size()));
        });
    w.patch_u64(used_at, used);
    const std::vector<DupFilter::StreamImage> streams = im.dup.images();
    w.u32(uint32_t(streams.size()));
    for (const DupFilter::StreamImage& s : streams) {
        w.u32(s.id);
        w.u64(s.top);
        w.u64(s.duplicates);
        w.u64(s.stale);
        for (uint64_t word : s.words) w.u64(word);
    }
}

void encode_exports(Writer& w, const ExportImage& e) {
    w.u64(e.instance);
    w.u64(e.next_epoch);
    w.u32(uint32_t(e.epochs.size()));
    for (const EpochPtr& epoch : e.epochs) {
        w.u64(epoch->epoch);
        w.u64(epoch->sums.size());
        for (const AggSlot& s : epoch->sums) {
            w.u64(s.key);
            w.u64(s.value);
        }
    }
}

void encode_header(Writer& w, const StateLayout& l, uint64_t checkpoint, uint32_t version) {
    for (char c : kStateMagic) w.u8(uint8_t(c));
    w.u32(version);
    w.u32(uint32_t(kStateHeaderLen));
    w.u64(0);  // body length, patched
    w.u32(0);  // body CRC, patched
    w.u32(0);  // header CRC, patched
    w.u64(l.keys);
    w.u32(l.probe_limit);
    w.u8(uint8_t(l.index));
    w.u8(0);  // --agg per-worker, the only mode --state takes
    w.u8(0);
    w.u8(0);
    w.u64(l.dup_window);
    w.u32(l.max_streams);
    w.u32(l.workers);
    w.u64(l.slots);
    w.u64(checkpoint);
    for (int i = 0; i < 16; ++i) w.u8(0);
}

}  // namespace

uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t crc) {
    uint32_t c = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return ~crc32c_sse42(bytes.data(), bytes.size(), c);
#endif
    for (uint8_t b : bytes) c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
    return ~c;
}

std::vector<uint8_t> encode_state(const StateLayout& layout, const StateImage& image) {
    std::vector<uint8_t> out;
    encode_state(layout, image, out);
    return out;
}

void encode_state(const StateLayout& layout, const StateImage& image, std::vector<uint8_t>& out) {
    out.clear();
    Writer w(out);
    const bool exports = image.exports.instance != 0;
    encode_header(w, layout, image.checkpoint, exports ? kStateFormatVersion : kStateFormatPlain);
    encode_control(w, image.control);
    for (const WorkerImage& im : image.workers) encode_worker(w, im);
    if (exports) encode_exports(w, image.exports);
    const std::span<const uint8_t> body(out.data() + kStateHeaderLen, out.size() - kStateHeaderLen);
    put_le<8>(&out[kStateBodyLenOff], body.size());
    put_le<4>(&out[kStateBodyCrcOff], crc32c(body));
    put_le<4>(&out[kStateHeaderCrcOff], crc32c({out.data(), kStateHeaderLen}));
}

namespace {

const char* index_word(uint64_t mode) {
    return mode == uint64_t(IndexMode::hash) ? "hash" : mode == 1 ? "direct" : "unknown";
}

// The header's options against this run's; names the first that differs.
void check_layout(Reader& r, const StateLayout& e) {
    auto differs = [](const std::string& option, auto was, auto now) {
        if (was == now) return;
        throw StateError(
            fmt::format("written with other options: {} {} (this run: {})", option, was, now));
    };
    differs("--keys", r.u64(), e.keys);
    differs("--probe-limit", r.u32(), e.probe_limit);
    const uint8_t index = r.u8();
    if (index != uint8_t(e.index))
        throw StateError(fmt::format("written with other options: --index {} (this run: {})",
                                     index_word(index), index_word(uint8_t(e.index))));
    differs("--agg (0: per-worker)", unsigned(r.u8()), 0u);
    if (r.u8() || r.u8()) throw StateError("damaged header: reserved bytes set");
    differs("--dup-window", r.u64(), e.dup_window);
    differs("--max-streams", r.u32(), e.max_streams);
    differs("workers", r.u32(), e.workers);
    differs("table slots", r.u64(), e.slots);
}

void decode_control(Reader& r, ControlImage& c) {
    c.flushes = r.u64();
    c.flushed_sum = r.u64();
    for (uint32_t n = r.u32(); n; --n) {
        const uint32_t stream = r.u32();
        if (!c.last_reset.empty() && stream <= c.last_reset.rbegin()->first)
            throw StateError("damaged body: remembered flushes out of order");
        auto& memo = c.last_reset[stream];
        memo.first = r.u64();
        const uint32_t frames = r.u32();
        if (frames == 0) throw StateError("damaged body: a remembered flush without frames");
        for (uint32_t f = 0; f < frames; ++f) {
            const std::span<const uint8_t> b = r.bytes(r.u32());
            memo.second.emplace_back(b.begin(), b.end());
        }
    }
}

// A used slot must be where the table's own probe puts its key: reached from its home within
// the probe limit, past no empty slot and no other copy of the key.
bool placed_right(const AggTableCopy& t, size_t i, unsigned probe_limit) {
    const uint64_t key = t.slots[i].key;
    const size_t mask = t.slots.size() - 1;
    size_t j = agg_hash_index(key, unsigned(std::countr_zero(t.slots.size())));
    for (unsigned n = 0; n < probe_limit; ++n, j = (j + 1) & mask) {
        if (j == i) return true;
        if (t.slots[j].key == 0 || t.slots[j].key == key) return false;
    }
    return false;
}

void decode_table(Reader& r, const StateLayout& l, AggTableCopy& t) {
    t.slots.assign(l.slots, AggSlot{0, 0});
    t.size = r.u64();
    t.zero_value = r.u64();
    const uint8_t zero = r.u8();
    const uint64_t used = r.u64();
    const bool hash = l.index == IndexMode::hash;
    if (zero > 1 || (!hash && (zero || t.zero_value)) || used > l.slots || t.size != used + zero ||
        t.size > l.keys)
        throw StateError("damaged body: a table's key counts do not add up");
    t.zero_used = zero;
    uint64_t next = 0;  // slot indexes strictly ascending
    for (uint64_t n = 0; n < used; ++n) {
        const uint64_t i = r.u64(), key = r.u64(), value = r.u64();
        if (i < next || i >= l.slots || key == 0 || (!hash && key != 1))
            throw StateError("damaged body: a table slot out of place");
        t.slots[i] = {key, value};
        next = i + 1;
    }
    if (hash)
        for (size_t i = 0; i < t.slots.size(); ++i)
            if (t.slots[i].key && !placed_right(t, i, std::min<uint64_t>(l.probe_limit, l.slots)))
                throw StateError("damaged body: a key is not where the table would look for it");
}

void decode_streams(Reader& r, const StateLayout& l, DupFilter& dup) {
    const uint32_t n = r.u32();
    if (n > (l.dup_window ? l.max_streams : 0))
        throw StateError("damaged body: more streams than --max-streams");
    std::vector<uint64_t> words(l.dup_window / 64);
    for (uint32_t s = 0; s < n; ++s) {
        DupFilter::StreamImage im{.id = r.u32(), .top = r.u64()};
        im.duplicates = r.u64();
        im.stale = r.u64();
        for (uint64_t& w : words) w = r.u64();
        im.words = words;
        if (!dup.restore(im)) throw StateError("damaged body: a stream listed twice");
    }
}

void decode_exports(Reader& r, ExportImage& e) {
    e.instance = r.u64();
    e.next_epoch = r.u64();
    if (e.instance == 0 || e.next_epoch == 0)
        throw StateError("damaged body: an export part without instance or epoch");
    uint64_t last = 0;
    for (uint32_t n = r.u32(); n; --n) {
        ExportEpoch epoch{.epoch = r.u64()};
        const uint64_t count = r.u64();
        if (epoch.epoch <= last || epoch.epoch >= e.next_epoch || count > r.left() / 16)
            throw StateError("damaged body: an export epoch out of order or too long");
        last = epoch.epoch;
        epoch.sums.resize(count);
        for (AggSlot& s : epoch.sums) {
            s.key = r.u64();
            s.value = r.u64();
        }
        e.epochs.push_back(std::make_shared<const ExportEpoch>(std::move(epoch)));
    }
}

}  // namespace

StateImage decode_state(std::span<const uint8_t> file, const StateLayout& expected) {
    if (file.size() < sizeof kStateMagic || std::memcmp(file.data(), kStateMagic, 8) != 0)
        throw StateError("not a kvagg state file (no LRKVSTAT magic)");
    if (file.size() < kStateHeaderLen)
        throw StateError(fmt::format("truncated: {} bytes, shorter than the {}-byte header",
                                     file.size(), kStateHeaderLen));
    Reader h(file.first(kStateHeaderLen));
    h.bytes(sizeof kStateMagic);
    const uint32_t version = h.u32();
    if (version > kStateFormatVersion)
        throw StateError(fmt::format("format version {} is newer than this kvagg's {}", version,
                                     kStateFormatVersion));
    if (version == 0) throw StateError("damaged header: format version 0");
    std::array<uint8_t, kStateHeaderLen> header;
    std::memcpy(header.data(), file.data(), kStateHeaderLen);
    const uint32_t header_crc = Reader({&header[kStateHeaderCrcOff], 4}).u32();
    put_le<4>(&header[kStateHeaderCrcOff], 0);
    if (h.u32() != kStateHeaderLen || crc32c(header) != header_crc)
        throw StateError("damaged header (checksum)");
    const uint64_t body_len = h.u64();
    const uint32_t body_crc = h.u32();
    h.u32();
    const std::span<const uint8_t> body = file.subspan(kStateHeaderLen);
    if (body.size() < body_len)
        throw StateError(fmt::format("truncated: body {} of {} bytes", body.size(), body_len));
    if (body.size() > body_len)
        throw StateError(fmt::format("damaged: {} bytes after the body", body.size() - body_len));
    if (crc32c(body) != body_crc) throw StateError("damaged body (checksum)");
    check_layout(h, expected);
    StateImage image{.checkpoint = h.u64()};
    if (h.u64() || h.u64()) throw StateError("damaged header: reserved bytes set");
    Reader r(body);
    decode_control(r, image.control);
    for (uint32_t w = 0; w < expected.workers; ++w) {
        image.workers.push_back({{}, DupFilter(expected.dup_window, expected.max_streams)});
        decode_table(r, expected, image.workers.back().table);
        decode_streams(r, expected, image.workers.back().dup);
    }
    if (version >= 2) decode_exports(r, image.exports);
    if (r.left()) throw StateError("damaged body: bytes after the last worker");
    return image;
}

std::optional<StateImage> load_state_file(const std::string& path, const StateLayout& expected) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return std::nullopt;
        throw StateError(fmt::format("cannot open: {}", std::strerror(errno)));
    }
    std::vector<uint8_t> bytes;
    uint8_t buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            throw StateError(fmt::format("cannot read: {}", std::strerror(e)));
        }
        if (n == 0) break;
        bytes.insert(bytes.end(), buf, buf + n);
    }
    ::close(fd);
    return decode_state(bytes, expected);
}

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
    throw std::runtime_error(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

void write_all(int fd, std::span<const uint8_t> bytes, const std::string& path) {
    for (size_t at = 0; at < bytes.size();) {
        const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("cannot write", path);
        at += size_t(n);
    }
}

std::string dir_of(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void write_state_file(const std::string& path, std::span<const uint8_t> bytes,
                      std::chrono::milliseconds pause) {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail("cannot create", tmp);
    try {
        write_all(fd, bytes, tmp);
        if (::fsync(fd) != 0) fail("cannot fsync", tmp);
    } catch (...) {
        ::close(fd);
        throw;
    }
    if (::close(fd) != 0) fail("cannot close", tmp);
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename to", path);
    const std::string dir = dir_of(path);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) fail("cannot open directory", dir);
    const int synced = ::fsync(dfd);
    ::close(dfd);
    if (synced != 0) fail("cannot fsync directory", dir);
}

uint64_t durable_through(const DupFilter& saved, uint32_t stream) {
    const std::optional<StreamState> s = saved.state(stream, 1);
    if (!s) return 0;
    return s->missing.empty() ? s->top : s->missing.front() - 1;
}

}  // namespace linerate::kvagg
