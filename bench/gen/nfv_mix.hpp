#pragma once
// The bad-header classes of an nfv (CheckIPHeader) mix, one per drop verdict of
// apps/nfv/check_ip_header.hpp, and how a valid frame is turned into each. Every mutation leaves
// the rest of the header consistent (checksum recomputed where it is not the point), so a frame
// fails exactly the check its class names, in Click's order.
#include <cstddef>
#include <cstdint>

#include "gen/rng.hpp"

namespace linerate::gen {

// X(identifier, option suffix: --bad-SUFFIX, the nfv verdict it produces)
#define LINERATE_GEN_BAD_CLASSES(X)                \
    X(tiny, "tiny", "tiny packet")                 \
    X(bad_version, "version", "bad IP version")    \
    X(bad_ihl, "ihl", "bad IP header length")      \
    X(bad_length, "length", "bad IP length")       \
    X(bad_checksum, "checksum", "bad IP checksum") \
    X(bad_source, "source", "bad source address")  \
    X(not_ipv4, "not-ipv4", "not IPv4")

// What a generated frame is meant to be. normal: valid (and stamped where the kind stamps);
// the bad classes: nfv-mix; kv_*: kvagg frames kvagg must not aggregate.
enum class FrameClass : uint8_t {
    normal,
#define LINERATE_GEN_X(id, opt, verdict) id,
    LINERATE_GEN_BAD_CLASSES(LINERATE_GEN_X)
#undef LINERATE_GEN_X
        kv_duplicate,
    kv_malformed,
};

inline constexpr size_t kBadClassCount = 0
#define LINERATE_GEN_X(id, opt, verdict) +1
    LINERATE_GEN_BAD_CLASSES(LINERATE_GEN_X)
#undef LINERATE_GEN_X
    ;

// Bad class i (0-based) is FrameClass(i + 1).
inline constexpr FrameClass bad_class(size_t i) {
    return FrameClass(i + 1);
}

inline constexpr const char* kBadClassOptions[kBadClassCount] = {
#define LINERATE_GEN_X(id, opt, verdict) opt,
    LINERATE_GEN_BAD_CLASSES(LINERATE_GEN_X)
#undef LINERATE_GEN_X
};

inline constexpr const char* kBadClassVerdicts[kBadClassCount] = {
#define LINERATE_GEN_X(id, opt, verdict) verdict,
    LINERATE_GEN_BAD_CLASSES(LINERATE_GEN_X)
#undef LINERATE_GEN_X
};

const char* frame_class_name(FrameClass c);

// The ethertype not_ipv4 frames carry: IEEE 802 local experimental, which dissectors show as
// plain data rather than misparse.
inline constexpr uint16_t kNotIpv4Ethertype = 0x88B5;

// Turns the valid untagged IPv4 frame of `len` bytes at `frame` into one of class `c` (a bad
// class); returns its new length (only tiny shortens it). Randomness picks among the variants
// of a class (which bad version, short or long length...).
size_t make_bad(uint8_t* frame, size_t len, FrameClass c, Rng& rng);

}  // namespace linerate::gen
