/* include/linerate/kvagg_wire.h compiled as C11 with -Wall -Wextra -Werror -pedantic (the header
 * promises C clients); its constants as a C program sees them, listed for kv_wire_test, which
 * holds python/linerate_kvagg.py to them. */
#include "kv_wire_c.h"

#include "linerate/kvagg_wire.h"

_Static_assert(LINERATE_KV_HEADER_LEN == LINERATE_KV_RESERVED_OFF + 4, "reserved ends the header");
_Static_assert(LINERATE_KV_LAST_FRAME == 0x80000000u, "bit 31");

#define KV(name) \
    { #name, LINERATE_KV_##name }

static const struct kv_wire_constant kConstants[] = {
    KV(DEFAULT_PORT),     KV(MAGIC),           KV(VERSION),        KV(OP_SUM),
    KV(OP_READ),          KV(OP_STATUS),       KV(OP_FLUSH),       KV(OP_RESPONSE),
    KV(FLUSH_RESET),      KV(LAST_FRAME),      KV(STATUS_KNOWN),   KV(STATUS_SPLIT),
    KV(STATUS_NO_WINDOW), KV(STATUS_BODY_LEN), KV(STATUS_DURABLE), KV(STATUS_TAIL_LEN),
    KV(MAGIC_OFF),        KV(VERSION_OFF),     KV(OP_OFF),         KV(COUNT_OFF),
    KV(STREAM_OFF),       KV(SEQ_OFF),         KV(RESERVED_OFF),   KV(HEADER_LEN),
    KV(TUPLE_LEN),        KV(KEY_LEN),         KV(ERROR),          KV(ERR_AUTH),
    KV(ERR_NOT_ALLOWED),  KV(ERR_TOO_SMALL),
};

const struct kv_wire_constant* kv_wire_c_constants(size_t* count) {
    *count = sizeof kConstants / sizeof kConstants[0];
    return kConstants;
}
