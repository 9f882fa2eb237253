/* clocksync's wire format (docs/wire-formats.md), written once in C for C++ and BPF: the C++ app
 * (apps/clocksync/cs_wire.hpp takes its constants from here), the XDP master
 * (apps/clocksync/xdp/clocksync.bpf.c) and the client's steering hook
 * (apps/clocksync/xdp/cs_steer_hook.h). The clocksync header follows Ethernet (+ up to two VLAN
 * tags), IPv4 and UDP; offsets below are inside it. */
#ifndef LINERATE_CLOCKSYNC_CS_WIRE_H
#define LINERATE_CLOCKSYNC_CS_WIRE_H

#include "stats/drop_list.h"

#define LR_CS_UDP_PORT 9001
#define LR_CS_MAGIC 0x4353 /* "CS" */
#define LR_CS_VERSION 1
#define LR_CS_HEADER_LEN 42 /* t3 ends it */

#define LR_CS_OFF_MAGIC 0
#define LR_CS_OFF_VERSION 2
#define LR_CS_OFF_TYPE 3
#define LR_CS_OFF_RESERVED 4
#define LR_CS_OFF_CLIENT_ID 6
#define LR_CS_OFF_SEQ 10
#define LR_CS_OFF_T1 18
#define LR_CS_OFF_T2 26
#define LR_CS_OFF_T3 34

/* LR_CS_WARMUP: a client's frame ahead of a request, to warm the path; dropped unanswered unless
 * it asks for its echo (LR_CS_FLAG_ECHO), which comes back as LR_CS_WARMUP_ECHO: turned around as a
 * response is, not stamped, so that the way down is warm too. An old master drops the asking frame
 * as any warm-up; a client that does not ask never receives an echo. */
enum lr_cs_type { LR_CS_REQUEST = 1, LR_CS_RESPONSE = 2, LR_CS_WARMUP = 3, LR_CS_WARMUP_ECHO = 4 };

/* The reserved field (LR_CS_OFF_RESERVED, big endian; sent as 0, ignored and echoed) of a warm-up
 * frame: this bit asks the master for the echo. */
#define LR_CS_FLAG_ECHO 0x0001
/* With LR_CS_FLAG_ECHO, the client asks its own steering program to turn the echo into the
 * request of the frame's seq (apps/clocksync/xdp/cs_steer_hook.h): the request then
 * leaves from the client's receive path, as the master's answer does from its. The master echoes
 * the flag as it echoes the field. */
#define LR_CS_FLAG_TURN 0x0002

/* The reasons a master drops a frame, X(C_NAME, clocksync's board key), in the order of
 * LINERATE_CS_DROPS from not_clocksync on (apps/clocksync/cs_wire.hpp checks it at compile time,
 * lib/stats/drop_list.h): the XDP master counts reason r in slot DP_DROP_FIRST + r. Not clocksync
 * is no drop there: the frame goes to the kernel (XDP_PASS). LR_CS_SPLIT_HEADER is the C++
 * master's only (a chained frame's first segment too short); LR_CS_DROP_WARMUP a warm-up frame
 * that asks for no echo, taken like a request. */
#define LR_CS_DROPS(X)                          \
    X(LR_CS_NOT_CLOCKSYNC, not_clocksync)       \
    X(LR_CS_MALFORMED, malformed)               \
    X(LR_CS_BAD_IP_CHECKSUM, bad_ip_checksum)   \
    X(LR_CS_BAD_UDP_CHECKSUM, bad_udp_checksum) \
    X(LR_CS_BAD_MAGIC, bad_magic)               \
    X(LR_CS_BAD_VERSION, bad_version)           \
    X(LR_CS_BAD_TYPE, bad_type)                 \
    X(LR_CS_SPLIT_HEADER, split_header)         \
    X(LR_CS_DROP_WARMUP, warmup)
enum lr_cs_drop { LR_CS_DROPS(LR_DROP_ENUM_ITEM) };

#endif
