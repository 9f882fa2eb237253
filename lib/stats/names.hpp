#pragma once
// One way to name what the stats board counts, VPP style. An app writes each list once,
// X(id, "human text", ...), and LINERATE_NAMES makes of it
//   - the enum (the ids, in order: they index the app's counters),
//   - the machine names: the ids themselves, snake_case, for JSON keys and telemetry,
//   - the human text, for the final summary and the periodic stats line.
// Arguments after the text are the app's own (e.g. a unit or a longer description).
//
// Drop reasons: slot 0 of every board is `tx_full` ("tx full": frames TX did not take after the
// retries), which the runtime adds itself; the app's reason r is slot drop_slot(r) = 1 + r.
#include <cstdint>
#include <span>
#include <string_view>

namespace linerate::stats {

struct Name {
    std::string_view key;   // snake_case: JSON key, telemetry
    std::string_view text;  // for people: summary, stats line
};
using Names = std::span<const Name>;

inline constexpr Name kTxFull{"tx_full", "tx full"};
inline constexpr unsigned kTxFullSlot = 0;

// Board slot of an app's drop reason (an enum made by LINERATE_NAMES, or its index).
template <class Reason>
constexpr unsigned drop_slot(Reason reason) {
    return 1 + static_cast<unsigned>(reason);
}

// A kernel's verdict enum made by LINERATE_VERDICTS: `ok`, then the drop reasons. The reason of
// a verdict other than ok, and its board slot.
template <class Verdict>
constexpr unsigned verdict_reason(Verdict v) {
    return static_cast<unsigned>(v) - 1;
}
template <class Verdict>
constexpr unsigned verdict_slot(Verdict v) {
    return drop_slot(verdict_reason(v));
}

}  // namespace linerate::stats

#define LINERATE_NAMES_ID_(id, text, ...) id,
#define LINERATE_NAMES_ENTRY_(id, text, ...) ::linerate::stats::Name{#id, text},

// The enum's items alone, for an enum that adds its own (e.g. a leading `ok`).
#define LINERATE_NAMES_IDS(LIST) LIST(LINERATE_NAMES_ID_)
// `inline constexpr stats::Name table[]`: {key, text} of every item of LIST, in order.
#define LINERATE_NAMES_TABLE(table, LIST) \
    inline constexpr ::linerate::stats::Name table[] = {LIST(LINERATE_NAMES_ENTRY_)}
// `enum class Enum : unsigned` and its table.
#define LINERATE_NAMES(Enum, table, LIST)                    \
    enum class Enum : unsigned { LINERATE_NAMES_IDS(LIST) }; \
    LINERATE_NAMES_TABLE(table, LIST)
// `enum class Enum : uint8_t { ok, <the items of LIST> }` and the table of LIST (without ok).
#define LINERATE_VERDICTS(Enum, table, LIST)                    \
    enum class Enum : uint8_t { ok, LINERATE_NAMES_IDS(LIST) }; \
    LINERATE_NAMES_TABLE(table, LIST)
