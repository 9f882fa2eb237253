/* A C enum of drop reasons (an XDP program's, or the per-frame C both datapaths compile) written
 * as a list, X(C_NAME, board_key), so that its C++ side checks it against the app's board list,
 * name by name and in order, at compile time (stats::same_keys, lib/stats/names.hpp): a reason
 * added to one list and not the other fails the build.
 *   #define LR_FOO_DROPS(X) X(LR_FOO_RUNT, runt) X(LR_FOO_BAD_MAGIC, bad_magic)
 *   enum lr_foo_drop { LR_FOO_DROPS(LR_DROP_ENUM_ITEM) };
 *   static_assert(stats::same_keys(kDrops, first_slot, {LR_FOO_DROPS(LR_DROP_KEY_ITEM)}, ...)); */
#ifndef LINERATE_STATS_DROP_LIST_H
#define LINERATE_STATS_DROP_LIST_H

#define LR_DROP_ENUM_ITEM(c_name, key) c_name,
#define LR_DROP_KEY_ITEM(c_name, key) #key,

#endif
