/* linerate/kvagg_wire.h: kvagg's wire format, the one definition of its numbers. kvagg itself
 * (apps/kvagg/kv_wire.hpp), the C++ client (linerate/kvagg_client.hpp) and the tests use these
 * constants; python/linerate_kvagg.py keeps its own copy, held to this header by a test. The
 * contract is docs/wire-formats.md ("kvagg", "kvagg service ops"); a test holds its tables to
 * the offsets here. Constants only: C99 or later, or C++, no DPDK.
 *
 * A kvagg datagram goes to UDP port 9000 (kvagg's --udp-port) and starts with a 22-byte app
 * header, every field big-endian (offsets from the start of the UDP payload; in a canonical
 * untagged frame without IPv4 options the header starts at byte 42 and the first tuple at 64):
 *
 *   offset size field     meaning
 *    0      2   magic     0x4B56, "KV"
 *    2      1   version   1
 *    3      1   op        0 sum, 1 read, 2 stream status, 3 flush; a response: the request's
 *                         op | 0x80
 *    4      2   count     N: tuples (sum, read/flush responses), keys (read), 0 or 1 (flush),
 *                         missing sequence numbers (status response)
 *    6      4   stream    stream id, chosen by the sender
 *   10      8   seq       sequence number in the stream (sum), request id (service ops)
 *   18      4   reserved  sum: 0; a request: its flags (flush: bit 0 reset); a response: the
 *                         frame's index in the response, bit 31 set on the last frame
 *   22          body      sum: N tuples of 16 bytes, key u64 then value u64
 *
 * A stream status response body: six u64 fields (flags, top, gaps, duplicates, stale,
 * window_low), then N missing sequence numbers, u64 each, then two u64: durable_through (every
 * sequence number up to it is in kvagg's --state file; meaningful with flag 8) and instance
 * (random at each start of kvagg). Clients that stop reading after the missing numbers keep
 * working.
 */
#ifndef LINERATE_KVAGG_WIRE_H
#define LINERATE_KVAGG_WIRE_H

#include <stdint.h>

#define LINERATE_KV_DEFAULT_PORT 9000u
#define LINERATE_KV_MAGIC 0x4B56u /* "KV" */
#define LINERATE_KV_VERSION 1u

/* Ops (the header's op byte). */
#define LINERATE_KV_OP_SUM 0u    /* N (key, value) tuples: each value is added to its key's sum */
#define LINERATE_KV_OP_READ 1u   /* N keys (8 bytes each) -> their current sums */
#define LINERATE_KV_OP_STATUS 2u /* the stream id's duplicate-window state */
#define LINERATE_KV_OP_FLUSH 3u  /* every sum (or N = 1: a key range lo, hi), optional reset */
#define LINERATE_KV_OP_RESPONSE 0x80u /* a response's op: the request's op | this bit */

/* Request flags (reserved field). */
#define LINERATE_KV_FLUSH_RESET 1u /* flush: take the listed amounts out of kvagg */
/* Response frames (reserved field): the frame's index, this bit on the last frame. */
#define LINERATE_KV_LAST_FRAME UINT32_C(0x80000000)
/* An error reply (reserved field, with LINERATE_KV_LAST_FRAME): a response without body or
 * trailer whose count is the error code below; never larger than the request that drew it. */
#define LINERATE_KV_ERROR UINT32_C(0x40000000)
#define LINERATE_KV_ERR_AUTH 1u        /* kvagg has a --key and the request's MAC did not verify */
#define LINERATE_KV_ERR_NOT_ALLOWED 2u /* the source is not in --allow (or neither was given) */
#define LINERATE_KV_ERR_TOO_SMALL 3u   /* an unkeyed request too small for its answer: pad it */

/* Stream status response: bits of its flags field. */
#define LINERATE_KV_STATUS_KNOWN 1u     /* some worker has seen the stream */
#define LINERATE_KV_STATUS_SPLIT 2u     /* more than one has (its state is not exact) */
#define LINERATE_KV_STATUS_NO_WINDOW 4u /* kvagg runs with --dup-window 0: nothing is tracked */
#define LINERATE_KV_STATUS_DURABLE 8u   /* kvagg keeps --state: durable_through is meaningful */
#define LINERATE_KV_STATUS_BODY_LEN 48u /* the six u64 fields before the missing numbers */
#define LINERATE_KV_STATUS_TAIL_LEN 16u /* durable_through, instance: after the missing numbers */

/* Offsets inside the app header (from the start of the UDP payload), its length, a tuple's. */
#define LINERATE_KV_MAGIC_OFF 0u
#define LINERATE_KV_VERSION_OFF 2u
#define LINERATE_KV_OP_OFF 3u
#define LINERATE_KV_COUNT_OFF 4u
#define LINERATE_KV_STREAM_OFF 6u
#define LINERATE_KV_SEQ_OFF 10u
#define LINERATE_KV_RESERVED_OFF 18u
#define LINERATE_KV_HEADER_LEN 22u
#define LINERATE_KV_TUPLE_LEN 16u /* key u64, value u64 */
#define LINERATE_KV_KEY_LEN 8u    /* a key of a read request, a range bound of a flush */

#endif /* LINERATE_KVAGG_WIRE_H */
