/* l2reflect's XDP program (apps/l2reflect/xdp/l2reflect.bpf.c) and its C++ side: the program's
 * drop reasons, X(C_NAME, l2reflect's board key), after DP_DROP_FIRST, in the order of
 * LINERATE_L2REFLECT_DROPS (apps/l2reflect/reflect.hpp checks it at compile time,
 * lib/stats/drop_list.h): the runt; split_header is the C++ kernel's only (a chained mbuf). */
#ifndef LINERATE_L2REFLECT_ABI_H
#define LINERATE_L2REFLECT_ABI_H

#include "stats/drop_list.h"

#define LR_L2REFLECT_DROPS(X) X(LR_L2REFLECT_RUNT, runt)
enum lr_l2reflect_drop { LR_L2REFLECT_DROPS(LR_DROP_ENUM_ITEM) };

#endif
