/* kvagg's wire numbers as a C program sees them (kv_wire_c.c), for kv_wire_test. */
#ifndef LINERATE_TESTS_KV_WIRE_C_H
#define LINERATE_TESTS_KV_WIRE_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kv_wire_constant {
    const char* name; /* without the LINERATE_KV_ prefix: python/linerate_kvagg.py's name */
    uint64_t value;
};

/* Every constant of linerate/kvagg_wire.h; *count gets their number. */
const struct kv_wire_constant* kv_wire_c_constants(size_t* count);

#ifdef __cplusplus
}
#endif

#endif
