"""Client for kvagg's service ops (docs/kvagg.md "Service ops"): plain UDP sockets, no DPDK.

    from linerate_kvagg import Client
    with Client("10.0.0.1") as c:          # kvagg's address, UDP port 9000
        c.add(key, value)                  # batched into full datagrams (path MTU)
        c.status()                         # retransmits what kvagg did not get, until nothing is missing
        c.read([key1, key2])               # {key: current sum}
        c.flush(reset=True)                # {key: sum} of every key; those amounts are never counted again
        c.wait_durable()                   # kvagg --state: everything sent so far survives a restart
    Client("10.0.0.1", key_file="/etc/linerate/kvagg.key")   # kvagg --key: every datagram signed

Every datagram of one client carries its stream id and the next sequence number (from 1); kvagg
refuses duplicates inside its window, so retransmitting is always safe. A kvagg with --state says
in each status answer through which sequence number the stream is in its state file: the client
keeps every datagram above it and sends again what a restarted kvagg (a new instance id) lacks.
Errors raise KvaggError, never pass silently; no answer in time raises KvaggTimeout (a
KvaggError). "No answer" is one thing whatever its form: silence, an ICMP refusal the kernel
reports as ECONNREFUSED (kvagg down or restarting: nothing listens on its port), a host or
network unreachable; each request attempt waits its whole timeout for an answer through them. A
data datagram whose send is refused stays held and goes again with the next status(). No other
exception type leaves the client (docs/kvagg.md "Errors and restarts"). kvagg's refusal (an error
reply: no key or the wrong one, a source not in its --allow) raises KvaggRefused (a KvaggError)
with its code, at once.

With key_file (kvagg --key) every datagram the client sends ends with a 28-byte trailer, nonce
then AES-256-GMAC tag over the rest (python3-cryptography), and a response counts only when its
trailer verifies under the key. Without one (kvagg --allow) no answer may be larger than its
request: the client pads each request with zero bytes to the room its answer needs, splits reads
to fit one frame and asks for a flush page by page (docs/security.md "No amplification").

ShardedClient (at the end) spreads the keys over several kvagg instances, a Client each, and
reads and flushes every instance (docs/scale-out.md "Sharded clients"); `python3
linerate_kvagg.py owner --endpoints HOST[:PORT],... KEY...` prints which instance gets a key.
"""

import errno
import os
import random
import socket
import stat
import struct
import time

# The wire numbers of include/linerate/kvagg_wire.h (there LINERATE_KV_<name>), held to it by
# the test kv_wire_test.
DEFAULT_PORT = 9000
MAGIC = 0x4B56
VERSION = 1
OP_SUM, OP_READ, OP_STATUS, OP_FLUSH = 0, 1, 2, 3
OP_RESPONSE = 0x80
FLUSH_RESET = 1
LAST_FRAME = 0x80000000
STATUS_KNOWN, STATUS_SPLIT, STATUS_NO_WINDOW, STATUS_DURABLE = 1, 2, 4, 8
HEADER = struct.Struct("!HBBHIQI")  # magic, version, op, count, stream, seq, reserved: 22 bytes
TUPLE_LEN = 16  # key u64, value u64
KEY_LEN = 8  # a key of a read request
STATUS_BODY_LEN = 48  # the six u64 fields of a status response before the missing numbers
STATUS_TAIL_LEN = 16  # durable_through, instance: after the missing numbers
ERROR = 0x40000000  # a response's reserved bit: an error reply (code in count, no body, unsigned)
ERR_AUTH, ERR_NOT_ALLOWED, ERR_TOO_SMALL = 1, 2, 3  # the codes of an error reply
TRAILER_LEN = 28  # a keyed datagram's last bytes: nonce (12), AES-256-GMAC tag (16)
IP_UDP = 28
IP_MTU = 14  # Linux getsockopt: the path MTU of a connected socket
U64 = 0xFFFFFFFFFFFFFFFF
# What a connected UDP socket reports from an ICMP error about an earlier datagram: no kvagg
# listening (port unreachable), or no route/host for now. Each means no answer, nothing else.
NO_ANSWER_ERRNOS = frozenset((errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH,
                              errno.EHOSTDOWN, errno.ENETDOWN))


class KvaggError(Exception):
    pass


class KvaggTimeout(KvaggError):
    pass


class KvaggRefused(KvaggError):
    """kvagg answered a request with an error reply: `code` (ERR_AUTH, ERR_NOT_ALLOWED,
    ERR_TOO_SMALL), the message what to do. Unsigned (error replies never carry a MAC), so one
    forged by a third party can make a call fail, nothing more."""

    def __init__(self, code, address="<your address>", keyed=False):
        self.code = code
        what = {
            ERR_AUTH: "kvagg requires a key (--key) and this request's MAC did not verify: "
                      "wrong or missing key_file",
            ERR_NOT_ALLOWED: f"kvagg does not serve this source: run kvagg with --allow "
                             f"{address} or use a key",
            ERR_TOO_SMALL: "request too small for its answer" + (
                " (this client signs with key_file: does kvagg run without --key?)" if keyed
                else ""),
        }.get(code, "an error code this client does not know")
        super().__init__(f"kvagg refused the request (error {code}): {what}")


def load_key_file(path):
    """The 32-byte key of a key file as kvagg reads it (lib/auth): 64 hex digits, white space
    around them ignored; refused (KvaggError) when group or others may access the file, as ssh
    refuses a private key. Make one with `umask 077; openssl rand -hex 32 > FILE`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as e:
        raise KvaggError(f"cannot open key file {path}: {e.strerror}") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KvaggError(f"key file {path} is not a regular file")
        if st.st_mode & 0o077:
            raise KvaggError(f"key file {path} is accessible by group or others (mode "
                             f"{stat.S_IMODE(st.st_mode):04o}): chmod 600 {path}")
        text = os.read(fd, 256).strip(b" \n\r\t")
    finally:
        os.close(fd)
    if len(text) != 64 or any(b not in b"0123456789abcdefABCDEF" for b in text):
        raise KvaggError(f"key file {path} does not hold a key: it must be 64 hex digits (make "
                         f"one with: openssl rand -hex 32 > FILE)")
    return bytes.fromhex(text.decode())


class MessageMac:
    """The trailer of keyed datagrams (lib/auth/message_mac.hpp): nonce = 8 random bytes drawn
    per MessageMac (again every 2^32 messages) + a 4-byte big-endian counter; tag =
    AES-256-GMAC(key, nonce, the UDP payload before the trailer)."""

    def __init__(self, key):
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            from cryptography.exceptions import InvalidTag
        except ImportError as e:
            raise KvaggError("key_file needs the module cryptography (Debian: "
                             "apt install python3-cryptography)") from e
        self._gcm, self._invalid = AESGCM(key), InvalidTag
        self._draw_sender()

    def _draw_sender(self):
        self._sender, self._counter = os.urandom(8), 0

    def sign(self, payload):
        """payload + its trailer."""
        if self._counter > 0xFFFFFFFF:
            self._draw_sender()  # never a nonce twice under one sender id
        nonce = self._sender + self._counter.to_bytes(4, "big")
        self._counter += 1
        return payload + nonce + self._gcm.encrypt(nonce, b"", payload)

    def open(self, datagram):
        """The payload before the trailer when the trailer verifies, else None."""
        if len(datagram) < TRAILER_LEN:
            return None
        body = len(datagram) - TRAILER_LEN
        nonce, tag = datagram[body:body + 12], datagram[body + 12:]
        try:
            self._gcm.decrypt(nonce, tag, datagram[:body])  # constant-time check of the tag
        except self._invalid:
            return None
        return datagram[:body]


class Client:
    """One stream: `add` sends tuples, `status` makes sure kvagg has all of them."""

    def __init__(self, host, port=DEFAULT_PORT, stream=None, timeout=0.5, retries=6, mtu=None,
                 drop_share=0.0, seed=None, status_every=8192, key_file=None):
        # Before the socket: a key file refused leaves nothing open.
        self._mac = None if key_file is None else MessageMac(load_key_file(key_file))
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        try:
            self.sock.connect((host, port))
        except OSError as e:  # an unknown name, no route: the address is wrong, not kvagg
            self.sock.close()
            raise KvaggError(f"{host}:{port}: {e}") from e
        self.sock.settimeout(timeout)
        self.timeout, self.retries = timeout, retries
        if mtu is None:
            try:
                mtu = self.sock.getsockopt(socket.IPPROTO_IP, IP_MTU)
            except OSError:
                mtu = 1500
        self.mtu = mtu
        # Status and flush requests without a key are padded to a full frame's payload (at most
        # 1500 bytes: kvagg's port may not take jumbo frames), the room of their answer.
        self.padded = min(mtu, 1500) - IP_UDP
        room = mtu - IP_UDP - HEADER.size - (TRAILER_LEN if self._mac else 0)
        self.max_tuples = room // TUPLE_LEN
        # A read without a key is answered in one frame no larger than the request: 16 bytes a
        # key (the request padded to that); with one, as many frames as its answer needs.
        self.max_keys = min(room // (KEY_LEN if self._mac else TUPLE_LEN), 0xFFFF)
        if self.max_tuples < 1:
            self.sock.close()
            raise KvaggError(f"MTU {mtu} cannot carry one tuple")
        rng = random.Random(seed)
        self.stream = rng.getrandbits(32) if stream is None else stream
        self.drop_share, self._rng = drop_share, rng
        self.status_every = status_every
        self.seq = 0            # last data sequence number used
        self.unacked = {}       # seq -> datagram, until a status confirms it
        self.undurable = {}     # seq -> datagram received by kvagg, not yet in its state file
        self.instance = 0       # kvagg's instance id (0: not asked yet, or a kvagg before --state)
        self.restarts_seen = 0
        # Request ids from the wall clock (microseconds): a later client on the same stream asks
        # above this one's, which kvagg would refuse as replays (docs/kvagg.md "Replays").
        self.request_id = time.time_ns() // 1000
        self.requests_sent = 0  # request attempts: one frame each
        self._batch = []
        self.sent_datagrams = self.dropped_datagrams = self.retransmitted = 0
        self.refused = 0        # sends and receives that reported an ICMP error (NO_ANSWER_ERRNOS)
        self.bad_auth = 0       # keyed: responses ignored, their trailer did not verify
        self._flush_carried = {}  # flush(reset) pages taken before a later page timed out
        self._page_rid = None     # the request id of the flush page answered last
        self._deadline = None   # wait_durable: no request attempt waits beyond it

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.sock.close()

    # ---- adding ----
    def add(self, key, value):
        """Adds a tuple to the datagram being filled; a full one is sent and held until kvagg
        confirms it. Every `status_every` unconfirmed datagrams add() runs status() itself, so
        it may raise what status() raises (KvaggTimeout while kvagg is down): the tuple is held
        all the same and goes with a later status()."""
        self._batch.append((key & 0xFFFFFFFFFFFFFFFF, value & 0xFFFFFFFFFFFFFFFF))
        if len(self._batch) == self.max_tuples:
            self._send_batch()

    def flush_sends(self):
        """Sends the partly filled datagram, if any."""
        if self._batch:
            self._send_batch()

    def _send_batch(self):
        self.seq += 1
        d = HEADER.pack(MAGIC, VERSION, OP_SUM, len(self._batch), self.stream, self.seq, 0)
        d += b"".join(struct.pack("!QQ", k, v) for k, v in self._batch)
        if self._mac:
            d = self._mac.sign(d)  # once: a resend is the same datagram, refused as a duplicate
        self._batch = []
        self.unacked[self.seq] = d
        self._send_data(d)
        if len(self.unacked) >= self.status_every:
            self.status()

    def _send_data(self, d):
        if self.drop_share and self._rng.random() < self.drop_share:
            self.dropped_datagrams += 1  # simulated loss: never reaches the wire
            return
        if self._send(d):
            self.sent_datagrams += 1

    def _send(self, d):
        """Sends one datagram; False when it did not leave (a refusal twice over). A send that
        fails with an ICMP error reports an earlier datagram's and consumes it: this one did not
        go, so it is tried once more. One that does not go is no answer to its caller (a data
        datagram stays held for status())."""
        for _ in range(2):
            try:
                self.sock.send(d)
                return True
            except socket.timeout:
                return False  # the local send queue stayed full: not sent
            except OSError as e:
                self._no_answer_or_raise(e, "send")
        return False

    def _no_answer_or_raise(self, e, what):
        """Counts an ICMP error reported by the socket as no answer; any other OSError is a
        KvaggError."""
        if e.errno not in NO_ANSWER_ERRNOS:
            raise KvaggError(f"{what}: {e}") from e
        self.refused += 1

    # ---- requests ----
    def _request(self, op, count, body=b"", flags=0, stream=None, same_id=False, pad_to=0,
                 page=False):
        """Sends a request and collects its response frames (index 0 .. the one marked last;
        `page`: the one frame of a flush page, last or not) as (frames, last): resends it when
        an attempt's timeout passes without a complete answer (silence or ICMP refusals alike),
        under a new request id unless same_id (a reset flush, which kvagg answers at most once
        per id). Without a key the request is padded with zeros to `pad_to` bytes, the room its
        answer may take. Within wait_durable no attempt outlasts its patience."""
        self.request_id += 1
        attempts = 0
        for attempt in range(self.retries):
            if attempt and not same_id:
                self.request_id += 1
            if self._deadline is not None and time.monotonic() >= self._deadline:
                break
            attempts += 1
            self.requests_sent += 1
            rid = self.request_id
            d = HEADER.pack(MAGIC, VERSION, op, count,
                            self.stream if stream is None else stream, rid, flags) + body
            self._send(self._mac.sign(d) if self._mac else d.ljust(pad_to, b"\0"))
            got = self._collect(op, rid, page)
            if got is not None:
                return got
        raise KvaggTimeout(f"op {op}: no complete response after {attempts} attempts "
                           f"of {self.timeout} s")

    def _collect(self, op, rid, page=False):
        """(frames, last) of the response to request `rid`, or None when the attempt's timeout
        passes first. An ICMP error meanwhile is no answer yet: the attempt goes on waiting."""
        end = time.monotonic() + self.timeout
        if self._deadline is not None:
            end = min(end, self._deadline)
        frames, last = {}, None
        while last is None or len(frames) < last + 1:
            left = end - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                r = self.sock.recv(65536)
            except socket.timeout:
                return None
            except OSError as e:
                self._no_answer_or_raise(e, "recv")
                continue
            finally:
                self.sock.settimeout(self.timeout)  # what a send waits for room, at most
            frame = self._response_frame(r, op, rid)
            if frame is None:
                continue
            n, idx, body = frame
            frames[idx & ~LAST_FRAME] = (n, body)
            if idx & LAST_FRAME or page:
                last = idx & ~LAST_FRAME
                ended = bool(idx & LAST_FRAME)
        return [frames[i] for i in range(last + 1)], ended

    def _response_frame(self, r, op, rid):
        """(count, reserved, body) of a frame of the response to request `rid`; None for anything
        else (a late answer to an earlier attempt, with a key one whose trailer does not verify).
        An error reply to it raises KvaggRefused: it is never signed, so it is taken as it is."""
        if len(r) < HEADER.size:
            return None
        magic, _, rop, n, _, rseq, idx = HEADER.unpack_from(r)
        if magic != MAGIC or rop != (op | OP_RESPONSE):
            return None
        if rseq != rid:
            if rseq == self._page_rid and idx & ~LAST_FRAME:
                raise KvaggError("flush: kvagg answered a page in several frames: it predates "
                                 "the clients' paging (upgrade kvagg first); with reset, the "
                                 "sums after its first frame are lost")
            return None
        if idx & ERROR:
            raise KvaggRefused(n, self.sock.getsockname()[0], keyed=self._mac is not None)
        if self._mac:
            r = self._mac.open(r)
            if r is None:
                self.bad_auth += 1
                return None
        return n, idx, r[HEADER.size:]

    @staticmethod
    def _tuples(frames):
        out = {}
        for n, body in frames:
            if len(body) < TUPLE_LEN * n:
                raise KvaggError("response shorter than its tuple count")
            for i in range(n):
                k, v = struct.unpack_from("!QQ", body, TUPLE_LEN * i)
                out[k] = v  # a key is listed once per response (read: once per time asked)
        return out

    def status(self, max_rounds=1000):
        """Sends the partial datagram, then asks kvagg which sequence numbers it is missing and
        retransmits them until it has every datagram of this stream. Returns kvagg's last view:
        dict(top, gaps, duplicates, stale, window_low, rounds, retransmitted)."""
        self.flush_sends()
        prev_top = None
        for rounds in range(1, max_rounds + 1):
            st = self.stream_status()
            if self._note_instance(st):
                prev_top = None
            if st["flags"] & STATUS_NO_WINDOW:
                raise KvaggError("kvagg runs with --dup-window 0: no loss detection")
            if st["flags"] & STATUS_SPLIT:
                raise KvaggError("stream seen by several kvagg workers: its status is not exact")
            top, missing = st["top"], st["missing"]
            listed_all = st["gaps"] == len(missing)
            # Confirmed: below top and not missing (only up to the last listed number when the
            # list is cut short).
            bound = top if listed_all else (missing[-1] if missing else top)
            missing_set = set(missing)
            for s in [s for s in self.unacked if s <= bound and s not in missing_set]:
                d = self.unacked.pop(s)
                if st["flags"] & STATUS_DURABLE:  # kept until durable: a restart may lose it
                    self.undurable[s] = d
            self._forget_durable(st)
            old = sorted(s for s in self.unacked if s < st["window_low"])
            if old:
                raise KvaggError(f"{len(old)} datagrams (seq {old[0]}...) fell out of kvagg's "
                                 f"window before they were confirmed: lost")
            if not self.unacked:
                st["rounds"], st["retransmitted"] = rounds, self.retransmitted
                return st
            # Datagrams above kvagg's highest may still be on their way while that highest
            # advances: resend them only once it stopped advancing (gaps below it at once).
            tail = top == prev_top
            prev_top = top
            for s in sorted(self.unacked):
                if s in missing_set or (tail and s > top):
                    self.retransmitted += 1
                    self._send_data(self.unacked[s])
            if not tail:
                time.sleep(0.005)
        raise KvaggError(f"{len(self.unacked)} datagrams still unconfirmed after {max_rounds} "
                         f"status rounds")

    def _note_instance(self, st):
        """A new kvagg instance has only what its state file had: every datagram the one before
        got but had not made durable is unconfirmed again. True when the instance changed."""
        changed = self.instance != 0 and st["instance"] != self.instance
        self.instance = st["instance"]
        if changed:
            self.restarts_seen += 1
            self.unacked.update(self.undurable)
            self.undurable = {}
        return changed

    def _forget_durable(self, st):
        if st["flags"] & STATUS_DURABLE:
            for s in [s for s in self.undurable if s <= st["durable_through"]]:
                del self.undurable[s]

    def held(self):
        """Datagrams kept for a resend: unconfirmed, or received but not yet durable."""
        return len(self.unacked) + len(self.undurable)

    def status_within(self, patience):
        """status() whose request attempts end within `patience` seconds (KvaggTimeout then): a
        quick look at whether kvagg answers again, as the sharded client probes an instance
        that was down."""
        self._deadline = time.monotonic() + patience
        try:
            return self.status()
        finally:
            self._deadline = None

    def wait_durable(self, patience=60.0):
        """Returns once everything sent so far (the partial datagram too) is in kvagg's --state
        file, riding out restarts: while kvagg does not answer (down, restarting: silence or
        refusals) status is asked again until `patience` seconds have passed, then
        KvaggTimeout. KvaggError when kvagg keeps no state."""
        self._deadline = time.monotonic() + patience
        try:
            while True:
                try:
                    st = self.status()
                    if not st["flags"] & STATUS_DURABLE:
                        raise KvaggError("kvagg runs without --state: nothing is durable")
                    if not self.unacked and not self.undurable:
                        return st
                except KvaggTimeout:
                    pass
                if time.monotonic() >= self._deadline:
                    raise KvaggTimeout(f"not durable after the patience given ({patience} s): "
                                       f"{self.held()} datagrams held")
                time.sleep(0.01)
        finally:
            self._deadline = None

    def stream_status(self, stream=None):
        """One status request: kvagg's view of a stream (default: ours), no retransmission."""
        # Without a key, as many missing numbers as fit in the request come back: the largest.
        ((n, body),), _ = self._request(OP_STATUS, 0, stream=stream, pad_to=self.padded)
        flags, top, gaps, dups, stale, low = struct.unpack_from("!6Q", body)
        missing = list(struct.unpack_from(f"!{n}Q", body, STATUS_BODY_LEN))
        durable = instance = 0
        tail = STATUS_BODY_LEN + 8 * n
        if len(body) >= tail + STATUS_TAIL_LEN:  # a kvagg before --state sends no tail
            durable, instance = struct.unpack_from("!QQ", body, tail)
        return dict(flags=flags, top=top, gaps=gaps, duplicates=dups, stale=stale,
                    window_low=low, missing=missing, durable_through=durable, instance=instance)

    def read(self, keys):
        """{key: current sum} for every key asked (0 for a key kvagg never received)."""
        keys = list(keys)
        out = {}
        for i in range(0, len(keys), self.max_keys):
            chunk = keys[i:i + self.max_keys]
            body = struct.pack(f"!{len(chunk)}Q", *chunk)
            frames, _ = self._request(OP_READ, len(chunk), body,
                                      pad_to=HEADER.size + TUPLE_LEN * len(chunk))
            out.update(self._tuples(frames))
        return out

    def flush(self, reset=False, key_range=None):
        """{key: sum} of every key with a non-zero sum (or of keys lo..hi inclusive). With reset
        the flushed amounts are taken out of kvagg atomically per key; a lost answer is asked
        again under the same request id, which kvagg answers from memory without flushing
        again. If no complete answer comes, KvaggTimeout says the flushed sums may be lost.
        Without a key the answer comes a page (one frame) at a time, each page its own request
        from the key after the last one listed; with reset, the pages taken before one that
        timed out are kept and come with the next flush(reset)."""
        try:
            if self._mac:
                body, count = b"", 0
                if key_range is not None:
                    body, count = struct.pack("!QQ", *key_range), 1
                frames, _ = self._request(OP_FLUSH, count, body, FLUSH_RESET if reset else 0,
                                          same_id=reset)
                got = self._tuples(frames)
            else:
                got = self._flush_pages(reset, key_range)
        except KvaggTimeout as e:
            if reset:
                kept = len(self._flush_carried)
                raise KvaggTimeout(f"flush(reset): {e}: the flushed sums may be lost" + (
                    f" ({kept} keys taken before come with the next flush(reset))" if kept
                    else "")) from e
            raise
        if reset:
            got = merge_sums(self._flush_carried, got)
            self._flush_carried = {}
        return got

    def _flush_pages(self, reset, key_range):
        """A flush without a key: one frame per request, padded to the largest payload, keys
        ascending from `lo`; the next request from the last key listed + 1 until a frame marked
        last. With reset, each page is taken out as it comes (into _flush_carried first)."""
        lo, hi = (0, U64) if key_range is None else key_range
        count = 0 if key_range is None else 1  # the whole space, then ranges from a page's end
        out, self._page_rid = {}, None
        while True:
            body = struct.pack("!QQ", lo, hi) if count else b""
            frames, last = self._request(OP_FLUSH, count, body, FLUSH_RESET if reset else 0,
                                         same_id=reset, pad_to=self.padded, page=True)
            self._page_rid = self.request_id  # an old kvagg's further frames: an error
            got = self._tuples(frames)
            if reset:
                self._flush_carried = merge_sums(self._flush_carried, got)
            else:
                out.update(got)
            if last or (got and max(got) >= hi):
                return out
            if not got:
                raise KvaggError("flush: kvagg's page listed no key and was not the last")
            lo, count = max(got) + 1, 1


def merge_sums(into, more):
    """into + more, key by key, mod 2^64 (a new dict)."""
    out = dict(into)
    for k, v in more.items():
        out[k] = (out.get(k, 0) + v) & U64
    return out


# ---- Sharded clients (docs/scale-out.md "Sharded clients") ----
#
# A key's owner is the endpoint with the highest rendezvous score
#   score(name, key) = mix64(fnv1a64(name) ^ mix64(key))
# over the endpoints' canonical names "host:port" (host as given, port in decimal): FNV-1a 64-bit
# of the name's bytes (UTF-8), mix64 the splitmix64 finalizer; a tie goes to the smaller name.
# include/linerate/kvagg_client.hpp computes the same (tests/kvagg/fixtures/shard_owners.txt).


def parse_endpoint(text):
    """"host:port" or "host" (port 9000) -> (host, port); anything else is a KvaggError."""
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = text, str(DEFAULT_PORT)
    if not (port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) <= 0xFFFF):
        raise KvaggError(f"kvagg endpoint '{text}': the port must be 1-65535")
    if not host:
        raise KvaggError(f"kvagg endpoint '{text}': no host")
    return host, int(port)


def endpoint_name(text):
    """The canonical name "host:port" of an endpoint, as the hash takes it."""
    host, port = parse_endpoint(text)
    return f"{host}:{port}"


def shard_name_hash(name):
    """FNV-1a, 64 bits, of the name's UTF-8 bytes."""
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & U64
    return h


def shard_mix(x):
    """The splitmix64 finalizer."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & U64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & U64
    return x ^ (x >> 31)


def shard_score(name_hash, key):
    return shard_mix(name_hash ^ shard_mix(key & U64))


def shard_owner(names, key, hashes=None):
    """The owner of `key` among canonical endpoint names (the highest score, a tie to the
    smaller name); `hashes`: their shard_name_hash, when known."""
    mixed = shard_mix(key & U64)
    best, top = None, -1
    for i, n in enumerate(names):
        sc = shard_mix((hashes[i] if hashes else shard_name_hash(n)) ^ mixed)
        if sc > top or (sc == top and n.encode() < best.encode()):
            best, top = n, sc
    return best


class ShardedClient:
    """One Client per kvagg endpoint; each key to its owner (above). read() and flush() ask every
    instance and add up what each holds, so they are exact whatever the mapping was when the
    tuples were sent. Raises what Client raises (KvaggError, KvaggTimeout), nothing else.

    `status_every`: unconfirmed datagrams of one instance before add() runs that instance's
    status() itself. That status gives up after `status_patience` seconds (a request's attempts
    within it) and the instance counts as down: add() holds its share and goes on with the
    others, and asks it again `down_retry` seconds later. read(), flush(), status(),
    wait_durable() and remove_endpoint() keep the clients' timeout and retries. Every other
    keyword goes to each instance's Client (timeout, retries, mtu, drop_share, ...); `seed` is
    mixed with each endpoint's name, so each instance gets a stream id of its own. `key_file`:
    every instance's key (kvagg --key), as for Client."""

    def __init__(self, endpoints, status_every=8192, status_patience=1.0, down_retry=1.0,
                 seed=None, key_file=None, **client_kw):
        self.status_every, self.down_retry = status_every, down_retry
        self.status_patience = status_patience
        self._seed, self._kw = seed, dict(client_kw, key_file=key_file)
        self.shards = {}        # canonical name -> Client, in the order added
        self._hashes = {}       # canonical name -> shard_name_hash
        self._retry_at = {}     # canonical name -> monotonic time: down, asked again then
        self._carried = {}      # flush(reset): taken while another instance did not answer
        self.outages = 0        # instances found not answering by add()'s own status
        try:
            for e in endpoints:
                self.add_endpoint(e)
            if not self.shards:
                raise KvaggError("kvagg sharded client: no endpoint")
        except KvaggError:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        for c in self.shards.values():
            c.close()

    def endpoints(self):
        return list(self.shards)

    def owner(self, key):
        """The canonical name of the endpoint that gets `key`."""
        return shard_owner(self._names, key, self._hash_list)

    def client(self, endpoint):
        return self.shards[self._name_of(endpoint)]

    def _name_of(self, endpoint):
        name = endpoint_name(endpoint)
        if name not in self.shards:
            raise KvaggError(f"kvagg sharded client: {name} is no endpoint")
        return name

    def add_endpoint(self, endpoint):
        """A new instance: the keys it now owns go to it from the next add() on."""
        host, port = parse_endpoint(endpoint)
        name = f"{host}:{port}"
        if name in self.shards:
            raise KvaggError(f"kvagg sharded client: {name} named twice")
        h = shard_name_hash(name)
        seed = None if self._seed is None else self._seed ^ h
        self.shards[name] = Client(host, port, seed=seed, status_every=float("inf"), **self._kw)
        self._hashes[name] = h
        self._names, self._hash_list = list(self._hashes), list(self._hashes.values())

    def remove_endpoint(self, endpoint, patience=60.0):
        """Takes an instance out: sends it everything held for it (durable where it keeps
        --state, within `patience`), then flushes it with reset and adds those sums to the
        remaining owners, so reads stay exact. Other clients still sending to it do the same when
        they remove it; what they sent is taken by their flush. KvaggTimeout: it did not answer,
        it stays."""
        name = self._name_of(endpoint)
        if len(self.shards) == 1:
            raise KvaggError("kvagg sharded client: the last endpoint stays")
        c = self.shards[name]
        if c.status()["flags"] & STATUS_DURABLE:
            c.wait_durable(patience)
        moved = c.flush(reset=True)
        del self.shards[name], self._hashes[name]
        self._names, self._hash_list = list(self._hashes), list(self._hashes.values())
        self._retry_at.pop(name, None)
        c.close()
        for k, v in moved.items():
            self.add(k, v)

    def add(self, key, value):
        """To the key's owner. An owner that does not answer its status keeps its share held;
        add() raises no KvaggTimeout."""
        name = self.owner(key)
        c = self.shards[name]
        c.add(key, value)
        if len(c.unacked) >= self.status_every:
            self._confirm(name, c)

    def _confirm(self, name, c):
        """The instance's status() within status_patience; one found down is asked again only
        after down_retry, so the others go on meanwhile."""
        down = name in self._retry_at
        if down and time.monotonic() < self._retry_at[name]:
            return
        try:
            c.status_within(self.status_patience)
            self._retry_at.pop(name, None)
        except KvaggTimeout:
            self.outages += 0 if down else 1
            self._retry_at[name] = time.monotonic() + self.down_retry

    def flush_sends(self):
        for c in self.shards.values():
            c.flush_sends()

    def status(self):
        """{name: status()} of every instance; the instances that answer are confirmed even when
        one does not, which then raises KvaggTimeout naming it."""
        out, silent = {}, []
        for name, c in self.shards.items():
            try:
                out[name] = c.status()
                self._retry_at.pop(name, None)
            except KvaggTimeout:
                silent.append(name)
        if silent:
            raise KvaggTimeout(f"kvagg sharded client: no answer from {', '.join(silent)}")
        return out

    def wait_durable(self, patience=60.0):
        """Every instance's wait_durable(), in turns of at most a second each, so an instance that
        is down does not keep the others waiting; KvaggTimeout once `patience` has passed."""
        end = time.monotonic() + patience
        left = dict(self.shards)
        while True:
            for name, c in list(left.items()):
                rest = end - time.monotonic()
                if rest <= 0:
                    break
                try:
                    c.wait_durable(min(rest, 1.0))
                    del left[name]
                except KvaggTimeout:
                    pass
            if not left:
                return
            if time.monotonic() >= end:
                raise KvaggTimeout(f"kvagg sharded client: not durable after the patience given "
                                   f"({patience} s): {self.held()} datagrams held")

    def read(self, keys):
        """{key: sum over every instance} for every key asked (0 for a key none holds)."""
        keys = list(keys)
        out = dict.fromkeys(keys, 0)
        for c in self.shards.values():
            for k, v in c.read(keys).items():
                out[k] = (out.get(k, 0) + v) & U64
        return out

    def flush(self, reset=False, key_range=None):
        """{key: sum over every instance}. With reset, what the instances that answered flushed
        is kept when another times out (KvaggTimeout), and returned by the next flush(reset): it
        is not lost."""
        out = {}
        into = self._carried if reset else out
        silent = []
        for c in self.shards.values():
            try:
                for k, v in c.flush(reset=reset, key_range=key_range).items():
                    into[k] = (into.get(k, 0) + v) & U64
            except KvaggTimeout as e:
                if not reset:
                    raise
                silent.append(str(e))
        if silent:
            raise KvaggTimeout(f"kvagg sharded client: flush(reset) incomplete: {'; '.join(silent)}"
                               f" (what the others flushed comes with the next flush(reset))")
        if reset:
            out, self._carried = self._carried, {}
        return out

    def _total(self, attr):
        return sum(getattr(c, attr) for c in self.shards.values())

    def held(self):
        return sum(c.held() for c in self.shards.values())

    @property
    def sent_datagrams(self):
        return self._total("sent_datagrams")

    @property
    def retransmitted(self):
        return self._total("retransmitted")

    @property
    def restarts_seen(self):
        return self._total("restarts_seen")

    @property
    def refused(self):
        return self._total("refused")


def main(argv):
    """python3 linerate_kvagg.py owner --endpoints HOST[:PORT],... KEY...: each key's owner."""
    import argparse
    ap = argparse.ArgumentParser(prog="linerate_kvagg.py",
                                 description="which kvagg endpoint a sharded client sends a key to")
    sub = ap.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("owner", help="print KEY OWNER for each key")
    o.add_argument("--endpoints", required=True, help="HOST[:PORT],... (port 9000 by default)")
    o.add_argument("keys", nargs="+", type=lambda t: int(t, 0), help="u64, decimal or 0x hex")
    a = ap.parse_args(argv)
    try:
        names = [endpoint_name(e) for e in a.endpoints.split(",")]
    except KvaggError as e:
        ap.exit(2, f"linerate_kvagg.py: {e}\n")
    if len(set(names)) != len(names):
        ap.exit(2, "linerate_kvagg.py: an endpoint is named twice\n")
    for k in a.keys:
        if not 0 <= k <= U64:
            ap.exit(2, f"linerate_kvagg.py: key {k} is not a u64\n")
        print(k, shard_owner(names, k))
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
