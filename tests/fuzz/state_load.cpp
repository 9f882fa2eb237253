// libFuzzer target: kvagg's --state loader on arbitrary files. Under ASan/UBSan it reads only
// inside the file and either throws StateError or returns an image that restores into tables
// and windows of the layout, and that encodes back to the very same bytes. The first byte 1
// recomputes both checksums first, so mutations get past them into the header and body checks.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kvagg/kv_state.hpp"
#include "state_layout.hpp"

using namespace linerate::kvagg;

namespace {

void put_le32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}

// The file with its body length, body CRC and header CRC made right for its bytes.
void fix_checksums(std::vector<uint8_t>& f) {
    if (f.size() < kStateHeaderLen) return;
    const uint64_t body = f.size() - kStateHeaderLen;
    for (int i = 0; i < 8; ++i) f[kStateBodyLenOff + size_t(i)] = uint8_t(body >> (8 * i));
    put_le32(&f[kStateBodyCrcOff], crc32c({f.data() + kStateHeaderLen, body}));
    put_le32(&f[kStateHeaderCrcOff], 0);
    put_le32(&f[kStateHeaderCrcOff], crc32c({f.data(), kStateHeaderLen}));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    std::vector<uint8_t> file(data + 1, data + size);
    if (data[0] == 1) fix_checksums(file);
    const StateLayout layout = linerate::kvagg::test::fuzz_state_layout();
    StateImage image;
    try {
        image = decode_state(file, layout);
    } catch (const StateError&) {
        return 0;
    }
    std::vector<AggSlot> slots(layout.slots);
    for (const WorkerImage& w : image.workers) {
        AggTable table(slots, {.mode = layout.index, .max_keys = layout.keys});
        table.restore(w.table);
        // Every held key is found where it was saved.
        for (const AggSlot& s : w.table.slots)
            if (s.key && table.find(s.key) != s.value) std::abort();
    }
    if (encode_state(layout, image) != file) std::abort();
    return 0;
}
