#pragma once
// The master's per-packet work, without I/O.
#include <cstddef>
#include <cstdint>

#include "clocksync/cs_wire.hpp"

namespace linerate::clocksync {

// Turns a valid request into its response in place, with t2 (receive) and t3 (transmit) written.
// Returns the parse verdict: ok means "send the frame back" (and the fields then describe the
// response); a response (type 2) gives bad_type. A warm-up frame that asks for its echo becomes
// the echo (ok, type warmup_echo, not stamped: no set_t3 for it); one that does not ask gives
// warmup. When not ok the frame is untouched. To stamp t3 later, pass any t3 here and call
// set_t3(frame, result, t3) right before TX. With `mac` (--key) a request whose trailer does not
// verify is bad_auth, untouched; an answer keeps the request's trailer until sign_answer writes
// its own (after set_t3: the tag covers t3).
CsPacket answer_request(uint8_t* frame, size_t len, uint64_t t2, uint64_t t3,
                        uint16_t udp_port = kCsUdpPort, pkt::ChecksumCheck checksums = {},
                        auth::MessageMac* mac = nullptr);

// The same for a frame parsed elsewhere (`p`, from a copy of a chained frame whose first
// segment `frame` holds the headers and the message).
CsPacket answer_parsed(uint8_t* frame, CsPacket p, uint64_t t2, uint64_t t3);

}  // namespace linerate::clocksync
