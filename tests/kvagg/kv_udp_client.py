#!/usr/bin/env python3
"""kvagg client on an ordinary kernel UDP socket (tests/kvagg/kvagg_af_xdp_test.cpp).

Sends `--datagrams` kvagg datagrams (docs/wire-formats.md) to HOST:PORT over `--streams`
streams, sends every `--resend-every`-th one a second time (a duplicate kvagg must ignore),
and writes the sums kvagg must report, `key,value` sorted by key, to `--expect`. Prints
`sent N resent M coincident C requests R`.

`--window W` paces the sends on kvagg's own word instead of the clock: after every W datagrams
the client asks kvagg for each stream's status (python/linerate_kvagg.py, stream_status) until
kvagg has seen the last sequence number sent on it, so at most W datagrams (and their resends)
wait in kvagg's RX rings however slowly kvagg is scheduled (2000 at once overflowed an AF_XDP
ring on a loaded machine). R counts the status request frames sent (kvagg receives them too).

A default veth leaves each datagram's UDP checksum to TX offload: the field holds the
pseudo-header sum alone (docs/wire-formats.md, Checksums). For about 1 datagram in 65535 that
value is also the datagram's full checksum, and kvagg, which tries the full check first, counts
it as verified, not as `udp_checksum_offloaded`. Which ones depends on the source port the
kernel picks, so C counts them (sends and resends); `--coincide` binds the first stream's socket
to the source port that makes its first datagram one of them, so every run has that case.
"""
import argparse
import os
import random
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))
import linerate_kvagg  # noqa: E402

MAGIC, VERSION, OP_SUM = 0x4B56, 1, 0


def datagram(stream, seq, tuples):
    head = struct.pack("!HBBHIQI", MAGIC, VERSION, OP_SUM, len(tuples), stream, seq, 0)
    return head + b"".join(struct.pack("!QQ", k, v) for k, v in tuples)


def word_sum(data):
    """Sum of the big-endian 16-bit words of `data` (an odd length padded with a zero byte)."""
    if len(data) % 2:
        data += b"\0"
    return sum(struct.unpack(f"!{len(data) // 2}H", data))


def offload_sum(src, dst, payload):
    """The UDP checksum field a Linux sender leaves to TX offload (CHECKSUM_PARTIAL): the
    pseudo-header sum (addresses, protocol 17, UDP length), mod 0xFFFF."""
    return (word_sum(socket.inet_aton(src) + socket.inet_aton(dst)) + 17 + 8 + len(payload)) % 0xFFFF


def full_check_sum(src, sport, dst, dport, payload):
    """The receiver's full UDP check over the datagram with the offload field in it, mod 0xFFFF
    (0: it verifies, as a full checksum would)."""
    udp_len = 8 + len(payload)
    field = offload_sum(src, dst, payload)
    return (2 * field + sport + dport + udp_len + word_sum(payload)) % 0xFFFF


def coinciding_port(src, dst, dport, payload):
    """The source port whose offload field is also the full checksum of `payload`."""
    return (-full_check_sum(src, 0, dst, dport, payload)) % 0xFFFF or 0xFFFF


def source_address(host, port):
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect((host, port))
    src = probe.getsockname()[0]
    probe.close()
    return src


def wait_until_seen(status_client, last_seqs, patience):
    """Asks kvagg for each stream's status until its highest sequence number seen is the last
    one sent on it (stream s + 1, last_seqs[s]; -1: none sent); exits 1 after `patience` s."""
    deadline = time.monotonic() + patience
    for s, last in enumerate(last_seqs):
        while last >= 0:
            try:
                if status_client.stream_status(stream=s + 1)["top"] >= last:
                    break
            except linerate_kvagg.KvaggTimeout:
                pass  # no answer within the request's retries: ask again until the patience ends
            if time.monotonic() >= deadline:
                sys.exit(f"kvagg had not seen stream {s + 1} up to seq {last} after {patience} s")


def parse_args():
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
    ap.add_argument("--coincide", action="store_true",
                    help="the first datagram's offload field is also its full checksum")
    ap.add_argument("--window", type=int, default=0,
                    help="wait for kvagg to have seen every datagram after each W (0: no waits)")
    ap.add_argument("--patience", type=float, default=120.0,
                    help="seconds a --window wait may take at most")
    return ap.parse_args()


def main():
    a = parse_args()

    rng = random.Random(a.seed)
    batches = []
    for i in range(a.datagrams):
        batches.append([(rng.randrange(1, a.keys + 1), rng.randrange(1, 1 << 40))
                        for _ in range(rng.randrange(1, a.tuples + 1))])
    # One socket (one source port) per stream: the flows spread over the receiver's queues.
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(a.streams)]
    src = source_address(a.host, a.port)
    if a.coincide:
        socks[0].bind((src, coinciding_port(src, a.host, a.port, datagram(1, 0, batches[0]))))
    for sock in socks:
        sock.connect((a.host, a.port))
    # Status requests ride a stream id of their own (the request id goes in the seq field).
    status = linerate_kvagg.Client(a.host, a.port, stream=a.streams + 1)
    sums = {}
    seqs = [0] * a.streams
    sent = resent = coincident = 0
    for i, tuples in enumerate(batches):
        s = i % a.streams
        payload = datagram(s + 1, seqs[s], tuples)
        seqs[s] += 1
        copies = 2 if i % a.resend_every == 0 else 1
        for _ in range(copies):
            socks[s].send(payload)
        sent += 1
        resent += copies - 1
        if full_check_sum(src, socks[s].getsockname()[1], a.host, a.port, payload) == 0:
            coincident += copies
        for k, v in tuples:
            sums[k] = (sums.get(k, 0) + v) & 0xFFFFFFFFFFFFFFFF
        if a.window and (i + 1) % a.window == 0:
            wait_until_seen(status, [q - 1 for q in seqs], a.patience)
    if a.window:
        wait_until_seen(status, [q - 1 for q in seqs], a.patience)
    status.close()
    with open(a.expect, "w") as f:
        for k in sorted(sums):
            f.write(f"{k},{sums[k]}\n")
    # Each request attempt is one frame (linerate_kvagg.Client._request).
    print(f"sent {sent} resent {resent} coincident {coincident} requests {status.requests_sent}")


if __name__ == "__main__":
    main()
