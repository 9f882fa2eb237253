#!/usr/bin/env python3
"""Word count with kvagg: every word of a text corpus shipped by Debian (default: the licenses in
/usr/share/common-licenses, package base-files) hashed to a u64 key and added with value 1 by the
Python client; the counts read back from kvagg (read and flush) must equal collections.Counter's.

    python3 examples/wordcount.py --host 10.0.0.1 [--drop-share 0.05] [FILES...]

Exit 0 when kvagg's counts are exact, 1 otherwise (or on any client error).
"""
import argparse
import collections
import hashlib
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from linerate_kvagg import Client, KvaggError  # noqa: E402

WORD = re.compile(r"[a-z0-9']+")


def word_key(word):
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, default=9000)
    ap.add_argument("--drop-share", type=float, default=0.0,
                    help="share of datagrams dropped before sending (status() resends them)")
    ap.add_argument("--reset", action="store_true", help="flush with reset at the end")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    files = a.files or sorted(
        os.path.join("/usr/share/common-licenses", f) for f in os.listdir("/usr/share/common-licenses")
        if os.path.isfile(os.path.join("/usr/share/common-licenses", f)))
    counts = collections.Counter()
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            counts.update(WORD.findall(f.read().lower()))
    keys = {w: word_key(w) for w in counts}
    if len(set(keys.values())) != len(keys):
        print("hash collision between two words: pick another hash", file=sys.stderr)
        return 1
    word_of = {k: w for w, k in keys.items()}
    try:
        with Client(a.host, a.port, drop_share=a.drop_share, seed=7) as c:
            for path in files:
                with open(path, encoding="utf-8", errors="replace") as f:
                    for w in WORD.findall(f.read().lower()):
                        c.add(keys[w], 1)
            st = c.status()
            read = c.read(list(word_of))
            flushed = c.flush(reset=a.reset)
    except KvaggError as e:
        print(f"wordcount: {e}", file=sys.stderr)
        return 1
    got_read = collections.Counter({word_of[k]: v for k, v in read.items() if v})
    got_flush = collections.Counter({word_of.get(k, f"?{k}"): v for k, v in flushed.items()})
    exact = got_read == counts and got_flush == counts
    print(f"{len(files)} files, {sum(counts.values())} words, {len(counts)} distinct; "
          f"{c.sent_datagrams} datagrams sent, {c.dropped_datagrams} dropped on purpose, "
          f"{st['retransmitted']} resent in {st['rounds']} status rounds")
    for w, n in got_read.most_common(8):
        print(f"  {w:12} {n}")
    print("exact" if exact else "MISMATCH: kvagg's counts differ from collections.Counter")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
