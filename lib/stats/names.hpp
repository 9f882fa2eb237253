#pragma once
// One way to name what the stats board counts, VPP style (foreach_ip4_error + node->errors[X]).
// An app writes each list once, X(id, "human text", ...), and the macros make of it
//   - the enum (the ids, in order): an id's value IS its board slot, no arithmetic between them,
//   - the machine names: the ids themselves, snake_case, for JSON keys and telemetry,
//   - the human text, for the final summary and the periodic stats line.
// Arguments after the text are the app's own (e.g. a unit or a longer description).
//
// Drops: every app's list (LINERATE_DROPS) starts with the runtime's reasons, tx_full (frames
// TX did not take after the retries) and exception_ring_full (--exception-path), so their slots
// are the same on every board; counters (LINERATE_COUNTERS) likewise start with the exception
// path's. The runtime finds them by name; a runtime feature's names are shown only when the
// feature is on (Name::feature). The slot limits are checked at compile time.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string_view>

namespace linerate::stats {

struct Name {
    std::string_view key;   // snake_case: JSON key, telemetry
    std::string_view text;  // for people: summary, stats line
    // A runtime feature this name belongs to ("" = always): reported only when it is on.
    std::string_view feature = {};
};
using Names = std::span<const Name>;

inline constexpr size_t kMaxDropReasons = 20;  // the longest app list has 17
inline constexpr size_t kMaxAppCounters = 16;

inline constexpr std::string_view kExceptionPathFeature = "exception_path";
inline constexpr Name kTxFull{"tx_full", "tx full"};
inline constexpr Name kExceptionRingFull{"exception_ring_full", "exception ring full",
                                         kExceptionPathFeature};
inline constexpr Name kExceptionToKernel{"exception_to_kernel", "exception to kernel",
                                         kExceptionPathFeature};
inline constexpr Name kExceptionFromKernel{"exception_from_kernel", "exception from kernel",
                                           kExceptionPathFeature};
inline constexpr unsigned kTxFullSlot = 0;

// Whether a C enum's drop reasons (`c_keys`, its board keys in its order: lib/stats/drop_list.h)
// are the board names of `table` from slot `first` on, each at its place, followed by the name
// `next` (the first reason the C side does not have; "" when the C list ends the table): a
// reason added to one list and not the other, or moved, fails the static_assert that asks.
template <size_t N>
constexpr bool same_keys(Names table, unsigned first, const char* const (&c_keys)[N],
                         std::string_view next) {
    if (first + N > table.size()) return false;
    for (size_t i = 0; i < N; ++i)
        if (table[first + i].key != c_keys[i]) return false;
    return next.empty() ? first + N == table.size()
                        : first + N < table.size() && table[first + N].key == next;
}

// The board slot of a drop reason or verdict made by these macros: its value.
template <class Reason>
constexpr unsigned drop_slot(Reason reason) {
    return static_cast<unsigned>(reason);
}

}  // namespace linerate::stats

namespace linerate {

// What a kernel returns to have the frame transmitted; a drop is its board slot, never this:
// slot 0 is tx_full, which only the transmit step counts. Every kernel and loop uses this one.
inline constexpr unsigned kTransmit = stats::kTxFullSlot;

}  // namespace linerate

#define LINERATE_NAMES_ID_(id, text, ...) id,
#define LINERATE_NAMES_ENTRY_(id, text, ...) ::linerate::stats::Name{#id, text},

// The enum's items alone, for an enum that adds its own.
#define LINERATE_NAMES_IDS(LIST) LIST(LINERATE_NAMES_ID_)
// `inline constexpr stats::Name table[]`: {key, text} of every item of LIST, in order.
#define LINERATE_NAMES_TABLE(table, LIST) \
    inline constexpr ::linerate::stats::Name table[] = {LIST(LINERATE_NAMES_ENTRY_)}
// `enum class Enum : unsigned` and its table: names that are no board slots.
#define LINERATE_NAMES(Enum, table, LIST)                    \
    enum class Enum : unsigned { LINERATE_NAMES_IDS(LIST) }; \
    LINERATE_NAMES_TABLE(table, LIST)

// The runtime's drop reasons, first in every drop list and verdict enum.
#define LINERATE_RUNTIME_DROP_IDS tx_full, exception_ring_full,
#define LINERATE_RUNTIME_DROP_NAMES \
    ::linerate::stats::kTxFull, ::linerate::stats::kExceptionRingFull,
// A board list: `enum class Enum : unsigned { <the runtime's ids>, <LIST> }`, each value its
// board slot, and `table`, the names of all of them in slot order, at most `max`.
#define LINERATE_BOARD_LIST_(Enum, table, RUNTIME_IDS, RUNTIME_NAMES, LIST, max) \
    enum class Enum : unsigned { RUNTIME_IDS LINERATE_NAMES_IDS(LIST) };         \
    inline constexpr ::linerate::stats::Name table[] = {                         \
        RUNTIME_NAMES LIST(LINERATE_NAMES_ENTRY_)};                              \
    static_assert(std::size(table) <= (max), #table ": more names than a board has slots")
// An app's drop list: `enum class Enum : unsigned { tx_full, exception_ring_full, <LIST> }`.
#define LINERATE_DROPS(Enum, table, LIST)                                                     \
    LINERATE_BOARD_LIST_(Enum, table, LINERATE_RUNTIME_DROP_IDS, LINERATE_RUNTIME_DROP_NAMES, \
                         LIST, ::linerate::stats::kMaxDropReasons)
// A kernel's verdicts over the reasons of LIST (a part of its drop list, in the same order
// right after the runtime's): `enum class Enum : uint8_t { tx_full, exception_ring_full,
// <LIST>, ok }`, so a drop verdict's value is its board slot. Check the alignment with
// LINERATE_SAME_SLOTS.
#define LINERATE_VERDICTS(Enum, LIST) \
    enum class Enum : uint8_t { LINERATE_RUNTIME_DROP_IDS LINERATE_NAMES_IDS(LIST) ok }
#define LINERATE_SAME_SLOT_(id, ...) static_assert(unsigned(A_::id) == unsigned(B_::id));
// Every id of LIST has the same value in enums A and B (a verdict enum and its drop list).
#define LINERATE_SAME_SLOTS(A, B, LIST) \
    namespace same_slots_##A##_##B {    \
        using A_ = A;                   \
        using B_ = B;                   \
        LIST(LINERATE_SAME_SLOT_)       \
    }

// The exception path's counters, first in every counter list.
#define LINERATE_RUNTIME_COUNTER_IDS exception_to_kernel, exception_from_kernel,
#define LINERATE_RUNTIME_COUNTER_NAMES \
    ::linerate::stats::kExceptionToKernel, ::linerate::stats::kExceptionFromKernel,
// An app's counters: `enum class Enum : unsigned { exception_to_kernel, exception_from_kernel,
// <LIST> }`.
#define LINERATE_COUNTERS(Enum, table, LIST)                        \
    LINERATE_BOARD_LIST_(Enum, table, LINERATE_RUNTIME_COUNTER_IDS, \
                         LINERATE_RUNTIME_COUNTER_NAMES, LIST, ::linerate::stats::kMaxAppCounters)

namespace linerate::stats {
// The runtime's slots, the same on every board.
enum class RuntimeDrop : unsigned { LINERATE_RUNTIME_DROP_IDS };
enum class RuntimeCounter : unsigned { LINERATE_RUNTIME_COUNTER_IDS };
static_assert(drop_slot(RuntimeDrop::tx_full) == kTxFullSlot);
// The lists of an app with no reasons or counters of its own.
inline constexpr Name kRuntimeDrops[] = {LINERATE_RUNTIME_DROP_NAMES};
inline constexpr Name kRuntimeCounters[] = {LINERATE_RUNTIME_COUNTER_NAMES};
}  // namespace linerate::stats
