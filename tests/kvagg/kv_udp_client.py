#!/usr/bin/env python3
"""kvagg client on an ordinary kernel UDP socket (tests/kvagg/kvagg_af_xdp_test.cpp).

Sends `--datagrams` kvagg datagrams (docs/wire-formats.md) to HOST:PORT over `--streams`
streams, sends every `--resend-every`-th one a second time (a duplicate kvagg must ignore),
and writes the sums kvagg must report, `key,value` sorted by key, to `--expect`. Prints
`sent N resent M`.
"""
import argparse
import random
import socket
import struct
import time

MAGIC, VERSION, OP_SUM = 0x4B56, 1, 0


def datagram(stream, seq, tuples):
    head = struct.pack("!HBBHIQI", MAGIC, VERSION, OP_SUM, len(tuples), stream, seq, 0)
    return head + b"".join(struct.pack("!QQ", k, v) for k, v in tuples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--datagrams", type=int, default=1000)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--tuples", type=int, default=8, help="at most this many per datagram")
    ap.add_argument("--keys", type=int, default=500)
    ap.add_argument("--resend-every", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--expect", required=True)
    a = ap.parse_args()

    rng = random.Random(a.seed)
    # One socket (one source port) per stream: the flows spread over the receiver's queues.
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(a.streams)]
    sums = {}
    seqs = [0] * a.streams
    sent = resent = 0
    for i in range(a.datagrams):
        s = i % a.streams
        tuples = [(rng.randrange(1, a.keys + 1), rng.randrange(1, 1 << 40))
                  for _ in range(rng.randrange(1, a.tuples + 1))]
        payload = datagram(s + 1, seqs[s], tuples)
        seqs[s] += 1
        socks[s].sendto(payload, (a.host, a.port))
        sent += 1
        for k, v in tuples:
            sums[k] = (sums.get(k, 0) + v) & 0xFFFFFFFFFFFFFFFF
        if i % a.resend_every == 0:
            socks[s].sendto(payload, (a.host, a.port))
            resent += 1
        if i % 32 == 31:
            time.sleep(0.002)  # stay within the AF_XDP RX ring between polls
    with open(a.expect, "w") as f:
        for k in sorted(sums):
            f.write(f"{k},{sums[k]}\n")
    print(f"sent {sent} resent {resent}")


if __name__ == "__main__":
    main()
