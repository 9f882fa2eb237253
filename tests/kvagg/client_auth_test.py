#!/usr/bin/env python3
"""The Python kvagg client's keys, error replies, padding and paging (python/linerate_kvagg.py,
docs/security.md), against a fake kvagg on 127.0.0.1 that this test writes: no kvagg.

  - The tag: the NIST GCM vector kvagg's lib/auth is tested with, through the client's own
    nonce layout (8 bytes per client, a 4-byte big-endian counter); every datagram a keyed
    client sends (requests, data) verifies under an AES-256-GMAC written here in pure Python,
    itself held to the same vector.
  - The key file: kvagg's rules (64 hex digits, white space trimmed, mode 0600).
  - Error replies (unsigned, bit 30): KvaggRefused with the code and what to do, at once.
  - A keyed client ignores responses whose trailer does not verify (counted in bad_auth).
  - Without a key: requests padded to the exact sizes the answers need (read 22 + 16 N, status
    and flush the largest payload), reads split to fit one frame, flushes asked page by page
    until the last, every key once; with reset, a page lost past its attempts is not lost.

    client_auth_test.py PYTHON_DIR
"""
import os
import socket
import struct
import sys
import tempfile
import threading
import time
import unittest

kv = None  # python/linerate_kvagg, imported from the directory given

try:
    import cryptography  # noqa: F401
    HAVE_CRYPTOGRAPHY = True
except ImportError:
    HAVE_CRYPTOGRAPHY = False
needs_cryptography = unittest.skipUnless(HAVE_CRYPTOGRAPHY, "no python3-cryptography")

# NIST SP 800-38D, gcmEncryptExtIV256, PTlen 0, AADlen 128, Count 0 (message_mac_test.cpp's).
NIST_KEY = bytes.fromhex("78dc4e0aaf52d935c3c01eea57428f00ca1fd475f5da86a49c8dd73d68c8e223")
NIST_IV = bytes.fromhex("d79cf22d504cc793c3fb6c8a")
NIST_AAD = bytes.fromhex("b96baa8c1c75a671bfb2d08d06be5f36")
NIST_TAG = bytes.fromhex("3e5d486aa2e30b22e040b85723a06e76")
HDR = struct.Struct("!HBBHIQI")
MTU = 1500  # loopback's is 65536: the tests give the client a veth's
PAYLOAD = MTU - 28


# ---- AES-256-GMAC in pure Python (FIPS 197, SP 800-38D), independent of the client's ----

def _aes_sbox():
    box, p, q = [0] * 256, 1, 1
    while True:  # p runs over GF(2^8)*, q = p^-1; the S-box is q's affine image
        p ^= ((p << 1) & 0xFF) ^ (0x1B if p & 0x80 else 0)
        for s in (1, 2, 4):
            q ^= q << s
        q &= 0xFF
        if q & 0x80:
            q ^= 0x09
        rot = [((q << i) | (q >> (8 - i))) & 0xFF for i in range(5)]
        box[p] = rot[0] ^ rot[1] ^ rot[2] ^ rot[3] ^ rot[4] ^ 0x63
        if p == 1:
            break
    box[0] = 0x63
    return box


SBOX = _aes_sbox()


def _xtime(a):
    return ((a << 1) ^ 0x1B) & 0xFF if a & 0x80 else a << 1


def aes256_round_keys(key):
    w = [list(key[i:i + 4]) for i in range(0, 32, 4)]
    rcon = 1
    for i in range(8, 60):
        t = list(w[i - 1])
        if i % 8 == 0:
            t = [SBOX[b] for b in t[1:] + t[:1]]
            t[0] ^= rcon
            rcon = _xtime(rcon)
        elif i % 8 == 4:
            t = [SBOX[b] for b in t]
        w.append([a ^ b for a, b in zip(w[i - 8], t)])
    return [sum(w[4 * r:4 * r + 4], []) for r in range(15)]


def aes256_block(round_keys, block):
    s = [a ^ b for a, b in zip(block, round_keys[0])]
    for r in range(1, 15):
        s = [SBOX[b] for b in s]
        s = [s[(row + 4 * (col + row)) % 16] for col in range(4) for row in range(4)]
        if r < 14:
            mixed = []
            for c in range(4):
                a = s[4 * c:4 * c + 4]
                mixed += [_xtime(a[i]) ^ _xtime(a[(i + 1) % 4]) ^ a[(i + 1) % 4] ^ a[(i + 2) % 4]
                          ^ a[(i + 3) % 4] for i in range(4)]
            s = mixed
        s = [a ^ b for a, b in zip(s, round_keys[r])]
    return bytes(s)


def _gf128_mul(x, y):
    z = 0
    for i in range(127, -1, -1):
        if (x >> i) & 1:
            z ^= y
        y = (y >> 1) ^ (0xE1 << 120) if y & 1 else y >> 1
    return z


def gmac(key, nonce, aad):
    """The 16-byte tag of AES-256-GCM with no plaintext, `aad` as additional data."""
    rk = aes256_round_keys(key)
    h = int.from_bytes(aes256_block(rk, bytes(16)), "big")
    y = 0
    padded = aad + bytes(-len(aad) % 16)
    blocks = [padded[i:i + 16] for i in range(0, len(padded), 16)]
    blocks.append((len(aad) * 8 << 64).to_bytes(16, "big"))
    for b in blocks:
        y = _gf128_mul(y ^ int.from_bytes(b, "big"), h)
    e = int.from_bytes(aes256_block(rk, nonce + b"\0\0\0\1"), "big")
    return (e ^ y).to_bytes(16, "big")


def signed(key, payload, nonce=b"\x5a" * 12):
    return payload + nonce + gmac(key, nonce, payload)


def trailer_verifies(key, datagram):
    body, nonce, tag = datagram[:-28], datagram[-28:-16], datagram[-16:]
    return len(datagram) >= 28 and gmac(key, nonce, body) == tag


# ---- a fake kvagg on 127.0.0.1 ----

class FakeKvagg:
    """Answers each datagram with what `handler(datagram)` returns (a list of datagrams) and
    keeps every datagram it got, in order."""

    def __init__(self, handler):
        self.handler, self.got = handler, []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                d, peer = self.sock.recvfrom(65536)
            except socket.timeout:
                continue
            self.got.append(d)
            for r in self.handler(d):
                self.sock.sendto(r, peer)

    def requests(self):
        return [d for d in self.got if d[3] != kv.OP_SUM]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sock.close()


def response(req, count, body=b"", reserved=0x80000000):
    """A response frame to `req`: its op | 0x80, its stream and seq."""
    _, _, op, _, stream, seq, _ = HDR.unpack_from(req)
    return HDR.pack(0x4B56, 1, op | 0x80, count, stream, seq, reserved) + body


def tuples(pairs):
    return b"".join(struct.pack("!QQ", k, v) for k, v in pairs)


def key_file(text, mode=0o600):
    fd, path = tempfile.mkstemp(prefix="kvagg-key-")
    os.write(fd, text.encode())
    os.close(fd)
    os.chmod(path, mode)
    return path


class KeyedTestCase(unittest.TestCase):
    """A key file of the NIST key, removed after the test."""

    def setUp(self):
        self.key_path = key_file(NIST_KEY.hex() + "\n")

    def tearDown(self):
        os.unlink(self.key_path)

    def client(self, fake, **kw):
        kw.setdefault("timeout", 0.2)
        kw.setdefault("retries", 2)
        return kv.Client("127.0.0.1", fake.port, mtu=MTU, key_file=self.key_path, **kw)


class Tag(unittest.TestCase):
    def test_pure_python_gmac_gives_the_nist_tag(self):
        self.assertEqual(gmac(NIST_KEY, NIST_IV, NIST_AAD), NIST_TAG)

    @needs_cryptography
    def test_the_clients_mac_gives_the_nist_tag_with_its_nonce_layout(self):
        mac = kv.MessageMac(NIST_KEY)
        mac._sender, mac._counter = NIST_IV[:8], int.from_bytes(NIST_IV[8:], "big")
        self.assertEqual(mac.sign(NIST_AAD), NIST_AAD + NIST_IV + NIST_TAG)
        self.assertEqual(mac.open(NIST_AAD + NIST_IV + NIST_TAG), NIST_AAD)
        for i in range(len(NIST_AAD) + 28):  # every byte is covered
            bad = bytearray(NIST_AAD + NIST_IV + NIST_TAG)
            bad[i] ^= 1
            self.assertIsNone(mac.open(bytes(bad)), i)
        self.assertIsNone(mac.open(NIST_TAG))  # shorter than a trailer


class KeyFile(unittest.TestCase):
    def test_a_good_key_file_with_white_space(self):
        path = key_file("  " + NIST_KEY.hex().upper() + "\r\n\t")
        try:
            self.assertEqual(kv.load_key_file(path), NIST_KEY)
        finally:
            os.unlink(path)

    def test_a_key_file_group_or_others_may_access_is_refused(self):
        for mode in (0o640, 0o604, 0o620, 0o644):
            path = key_file(NIST_KEY.hex(), mode)
            try:
                with self.assertRaisesRegex(kv.KvaggError,
                                            f"accessible by group or others \\(mode "
                                            f"{mode:04o}\\): chmod 600 {path}$"):
                    kv.load_key_file(path)
                with self.assertRaisesRegex(kv.KvaggError, "chmod 600"):
                    kv.Client("127.0.0.1", 9, key_file=path)
            finally:
                os.unlink(path)

    def test_a_key_file_that_is_no_key_is_refused(self):
        for text in (NIST_KEY.hex()[:-1], NIST_KEY.hex()[:-1] + "g", NIST_KEY.hex() + "00",
                     NIST_KEY.hex()[:32] + " " + NIST_KEY.hex()[32:], ""):
            path = key_file(text)
            try:
                with self.assertRaisesRegex(kv.KvaggError, "must be 64 hex digits"):
                    kv.load_key_file(path)
            finally:
                os.unlink(path)
        with self.assertRaisesRegex(kv.KvaggError, "cannot open key file /nonexistent/k"):
            kv.load_key_file("/nonexistent/k")
        with self.assertRaisesRegex(kv.KvaggError, "is not a regular file"):
            kv.load_key_file("/tmp")


@needs_cryptography
class Keyed(KeyedTestCase):
    def test_every_datagram_sent_is_signed_and_a_signed_answer_taken(self):
        def answer(req):
            if req[3] == kv.OP_READ:
                n = HDR.unpack_from(req)[3]
                keys = struct.unpack_from(f"!{n}Q", req, 22)
                return [signed(NIST_KEY, response(req, n, tuples((k, k * 3) for k in keys)))]
            return []

        with FakeKvagg(answer) as fake, self.client(fake) as c:
            self.assertEqual(c.max_tuples, (PAYLOAD - 22 - 28) // 16)
            for k in range(c.max_tuples + 5):
                c.add(k, 1)
            c.flush_sends()
            self.assertEqual(c.read([7, 8]), {7: 21, 8: 24})
            self.assertEqual(c.bad_auth, 0)
        data = [d for d in fake.got if d[3] == kv.OP_SUM]
        self.assertEqual([len(d) for d in data],
                         [22 + 16 * c.max_tuples + 28, 22 + 16 * 5 + 28])
        self.assertEqual(len(fake.requests()[0]), 22 + 2 * 8 + 28)  # keyed: no padding
        nonces = [d[-28:-16] for d in fake.got]
        for d in fake.got:
            self.assertTrue(trailer_verifies(NIST_KEY, d))
        self.assertEqual({n[:8] for n in nonces}, {nonces[0][:8]})  # one sender id per client
        self.assertEqual([int.from_bytes(n[8:], "big") for n in nonces], [0, 1, 2])

    def test_answers_that_do_not_verify_are_ignored_and_counted(self):
        other = bytes(32)

        def answer(req):
            good = response(req, 1, tuples([(5, 6)]))
            forged = response(req, 1, tuples([(5, 666)]))
            return [forged,  # unsigned
                    signed(other, forged),  # another key
                    signed(NIST_KEY, forged)[:-1] + b"\0",  # a tag changed
                    signed(NIST_KEY, good)]

        with FakeKvagg(answer) as fake, self.client(fake) as c:
            self.assertEqual(c.read([5]), {5: 6})
            self.assertEqual(c.bad_auth, 3)

    def test_a_keyed_flush_takes_every_signed_frame(self):
        def answer(req):
            return [signed(NIST_KEY, response(req, 2, tuples([(1, 10), (2, 20)]), 0)),
                    signed(NIST_KEY, response(req, 1, tuples([(3, 30)]), kv.LAST_FRAME | 1))]

        with FakeKvagg(answer) as fake, self.client(fake) as c:
            self.assertEqual(c.flush(reset=True), {1: 10, 2: 20, 3: 30})
            self.assertEqual(c.flush(key_range=(1, 9)), {1: 10, 2: 20, 3: 30})
        self.assertEqual([len(d) for d in fake.requests()], [22 + 28, 22 + 16 + 28])
        self.assertEqual(struct.unpack_from("!QQ", fake.requests()[1], 22), (1, 9))

    def test_a_keyed_client_reports_an_unsigned_error_reply(self):
        with FakeKvagg(lambda req: [response(req, 3, reserved=kv.LAST_FRAME | kv.ERROR)]) as fake:
            with self.client(fake) as c:
                with self.assertRaisesRegex(kv.KvaggRefused, "does kvagg run without --key"):
                    c.status()


class ErrorReplies(unittest.TestCase):
    def test_each_code_raises_kvagg_refused_at_once(self):
        texts = {kv.ERR_AUTH: "kvagg requires a key \\(--key\\) and this request's MAC did not "
                              "verify: wrong or missing key_file",
                 kv.ERR_NOT_ALLOWED: "kvagg does not serve this source: run kvagg with --allow "
                                     "127.0.0.1 or use a key",
                 kv.ERR_TOO_SMALL: "request too small for its answer$",
                 9: "an error code this client does not know"}
        for code, text in texts.items():
            def answer(req, code=code):
                return [response(req, code, reserved=kv.LAST_FRAME | kv.ERROR)]

            with FakeKvagg(answer) as fake:
                with kv.Client("127.0.0.1", fake.port, timeout=5, retries=5, mtu=MTU) as c:
                    for call in (c.status, lambda: c.read([1]), lambda: c.flush(reset=True)):
                        with self.assertRaisesRegex(kv.KvaggRefused, text) as e:
                            call()
                        self.assertEqual(e.exception.code, code)
                        self.assertIsInstance(e.exception, kv.KvaggError)
                        self.assertNotIsInstance(e.exception, kv.KvaggTimeout)
            self.assertEqual(len(fake.requests()), 3)  # no retry: kvagg said no


class Unkeyed(unittest.TestCase):
    def test_requests_are_padded_to_what_their_answers_need(self):
        def answer(req):
            _, _, op, n, _, _, _ = HDR.unpack_from(req)
            if op == kv.OP_READ:
                return [response(req, n, tuples((k, 1) for k in struct.unpack_from(
                    f"!{n}Q", req, 22)))]
            if op == kv.OP_STATUS:
                return [response(req, 0, bytes(48 + 16))]
            return [response(req, 0)]

        with FakeKvagg(answer) as fake:
            with kv.Client("127.0.0.1", fake.port, timeout=0.5, mtu=MTU) as c:
                self.assertEqual(c.max_keys, (PAYLOAD - 22) // 16)
                self.assertEqual(c.read(range(200)), dict.fromkeys(range(200), 1))
                c.stream_status()
                self.assertEqual(c.flush(), {})
                self.assertEqual(c.flush(key_range=(4, 8)), {})
        sizes = [len(d) for d in fake.requests()]
        self.assertEqual(sizes, [22 + 16 * 90, 22 + 16 * 90, 22 + 16 * 20, PAYLOAD, PAYLOAD,
                                 PAYLOAD])
        counts = [HDR.unpack_from(d)[3] for d in fake.requests()]
        self.assertEqual(counts, [90, 90, 20, 0, 0, 1])
        for d in fake.requests():  # the keys, then zeros
            n = HDR.unpack_from(d)[3]
            used = 22 + 8 * n if d[3] == kv.OP_READ else 22 + 16 * n
            self.assertEqual(d[used:], bytes(len(d) - used))

    def test_a_later_client_on_the_same_stream_asks_under_higher_request_ids(self):
        """kvagg never executes a reset flush older than its stream's last: a client restarted
        with the same stream id (a fixed seed) must not start below its predecessor."""
        def answer(req):
            return [response(req, 0)]

        with FakeKvagg(answer) as fake:
            before = time.time_ns() // 1000
            for _ in range(2):
                with kv.Client("127.0.0.1", fake.port, seed=5, timeout=0.5, mtu=MTU) as c:
                    for _ in range(3):
                        c.flush(reset=True)
        seqs = [HDR.unpack_from(d)[5] for d in fake.requests()]
        self.assertEqual(len({HDR.unpack_from(d)[4] for d in fake.requests()}), 1)
        self.assertEqual(seqs, sorted(set(seqs)))
        self.assertLessEqual(before, seqs[0])
        self.assertLessEqual(seqs[0], time.time_ns() // 1000 + 1)


class PagedKvagg:
    """A fake kvagg's flush without a key: one frame per request no larger than the request,
    keys ascending from lo, the last-frame bit when the range is listed to its end; with reset
    the listed keys are taken out, and a repeat (same stream and seq) answered from memory.
    `lose`: pages (1, 2, ...) whose first answer is lost; `silent_after`: pages answered before
    it stops."""

    def __init__(self, sums, lose=(), silent_after=None):
        self.sums, self.lose, self.silent_after = dict(sums), set(lose), silent_after
        self.memory, self.pages, self.seen = {}, 0, []

    def __call__(self, req):
        _, _, op, count, stream, seq, flags = HDR.unpack_from(req)
        self.seen.append((count, seq, struct.unpack_from("!Q", req, 22)[0] if count else 0))
        if self.silent_after is not None and self.pages >= self.silent_after:
            return []
        if (stream, seq) in self.memory:
            return [self.memory[stream, seq]]
        lo, hi = struct.unpack_from("!QQ", req, 22) if count else (0, 2**64 - 1)
        keys = sorted(k for k in self.sums if lo <= k <= hi)
        room = (len(req) - 22) // 16
        listed, done = keys[:room], len(keys) <= room
        frame = response(req, len(listed), tuples((k, self.sums[k]) for k in listed),
                         kv.LAST_FRAME if done else 0)
        if flags & kv.FLUSH_RESET:
            for k in listed:
                del self.sums[k]
            self.memory[stream, seq] = frame
        self.pages += 1
        if self.pages in self.lose:
            return []
        return [frame]


class Pages(unittest.TestCase):
    SUMS = {k * 7 + 3: k + 1 for k in range(500)}

    def client(self, fake, **kw):
        kw.setdefault("timeout", 0.2)
        return kv.Client("127.0.0.1", fake.port, mtu=MTU, **kw)

    def test_a_flush_comes_page_by_page_every_key_once(self):
        kvagg = PagedKvagg(self.SUMS)
        in_range = {k: v for k, v in self.SUMS.items() if 100 <= k <= 2000}
        with FakeKvagg(kvagg) as fake, self.client(fake) as c:
            self.assertEqual(c.flush(), self.SUMS)
            self.assertEqual(c.flush(key_range=(100, 2000)), in_range)
        per_page = (PAYLOAD - 22) // 16
        self.assertEqual((per_page, len(self.SUMS), len(in_range)), (90, 500, 272))
        keys = sorted(self.SUMS)
        self.assertEqual([(n, lo) for n, _, lo in kvagg.seen[:6]],
                         [(0, 0)] + [(1, keys[90 * i - 1] + 1) for i in range(1, 6)])
        self.assertEqual(len(kvagg.seen), 6 + 4)  # 500 keys: 6 pages; 272: 4
        self.assertEqual(len({seq for _, seq, _ in kvagg.seen}), len(kvagg.seen))

    def test_a_reset_flush_resends_a_lost_page_under_its_id(self):
        kvagg = PagedKvagg(self.SUMS, lose={2})
        with FakeKvagg(kvagg) as fake, self.client(fake) as c:
            self.assertEqual(c.flush(reset=True), self.SUMS)
            self.assertEqual(c.flush(reset=True), {})
        self.assertEqual(kvagg.sums, {})
        # Six pages, the second asked twice under its id, then an empty flush.
        first = kvagg.seen[0][1]
        self.assertEqual([seq - first for _, seq, _ in kvagg.seen], [0, 1, 1, 2, 3, 4, 5, 6])

    def test_pages_taken_before_a_timeout_come_with_the_next_reset_flush(self):
        kvagg = PagedKvagg(self.SUMS, silent_after=2)
        with FakeKvagg(kvagg) as fake, self.client(fake, retries=2) as c:
            with self.assertRaisesRegex(kv.KvaggTimeout, "180 keys taken before come with the "
                                                         "next flush\\(reset\\)"):
                c.flush(reset=True)
            kvagg.silent_after = None
            self.assertEqual(c.flush(reset=True), self.SUMS)
        self.assertEqual(kvagg.sums, {})

    def test_a_kvagg_that_answers_a_page_in_several_frames_is_an_error(self):
        """A kvagg from before paging answers the whole flush in frames: the client takes the
        first as a page and must not go on as if the others had not come."""
        def old_kvagg(req):
            return [response(req, 1, tuples([(i, 1)]), i | (kv.LAST_FRAME if i == 2 else 0))
                    for i in range(3)]

        with FakeKvagg(old_kvagg) as fake, self.client(fake) as c:
            with self.assertRaisesRegex(kv.KvaggError, "predates the clients' paging"):
                c.flush(reset=True)


if __name__ == "__main__":
    sys.path.insert(0, sys.argv.pop(1))
    import linerate_kvagg
    kv = linerate_kvagg
    unittest.main(verbosity=2)
