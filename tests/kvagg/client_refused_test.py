#!/usr/bin/env python3
"""The Python kvagg client (python/linerate_kvagg.py) when nothing answers: a UDP port on
127.0.0.1 with no socket on it, where the kernel refuses every datagram at once (ICMP port
unreachable: ConnectionRefusedError on the client's next send or receive), as for a kvagg that is
down. The refusal is no answer: datagrams stay held, each request waits its whole timeout per
attempt, wait_durable() its whole patience, and only KvaggTimeout leaves the client (any other
exception fails the test). kvagg_client_test.cpp holds the C++ client to the same.

    client_refused_test.py PYTHON_DIR
"""
import socket
import sys
import time
import unittest

kv = None  # python/linerate_kvagg, imported from the directory given


def closed_port():
    """A UDP port on 127.0.0.1 that nothing listens on: bound once to learn a free one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refused_client(retries, timeout):
    # MTU 66: IPv4, UDP, kvagg header and one tuple: a datagram per add(); no automatic status: add() only sends.
    return kv.Client("127.0.0.1", closed_port(), timeout=timeout, retries=retries, mtu=66,
                     status_every=1 << 20)


class Refused(unittest.TestCase):
    def test_add_keeps_every_refused_datagram_held(self):
        with refused_client(3, 0.1) as c:
            for k in range(200):
                c.add(k, k + 1)  # raises nothing
            self.assertEqual(c.max_tuples, 1)
            self.assertEqual(len(c.unacked), 200)
            self.assertEqual(c.held(), 200)
            self.assertGreater(c.refused, 0)  # the kernel did refuse: the path ran
            self.assertLessEqual(c.sent_datagrams, 200)

    def test_status_waits_every_attempts_timeout_then_times_out(self):
        with refused_client(3, 0.1) as c:
            c.add(1, 2)
            t0 = time.monotonic()
            with self.assertRaises(kv.KvaggTimeout):
                c.status()
            self.assertGreaterEqual(time.monotonic() - t0, 0.3)  # not the first refusal's 0 s
            self.assertGreater(c.refused, 0)
            self.assertEqual(c.held(), 1)

    def test_wait_durable_waits_its_whole_patience(self):
        with refused_client(2, 0.1) as c:
            c.add(1, 2)
            t0 = time.monotonic()
            with self.assertRaises(kv.KvaggTimeout):
                c.wait_durable(patience=0.7)
            took = time.monotonic() - t0
            self.assertGreaterEqual(took, 0.7)  # many status() rounds: the patience, not theirs
            self.assertLess(took, 1.5)  # no attempt outlasts the patience
            self.assertEqual(c.held(), 1)

    def test_read_and_flush_time_out(self):
        with refused_client(2, 0.05) as c:
            with self.assertRaises(kv.KvaggTimeout):
                c.read([1, 2, 3])
            with self.assertRaisesRegex(kv.KvaggTimeout, "the flushed sums may be lost"):
                c.flush(reset=True)

    def test_other_socket_errors_are_kvagg_errors(self):
        """A failure that is not an ICMP answer is a KvaggError, not a timeout: a datagram
        longer than UDP allows (EMSGSIZE)."""
        with kv.Client("127.0.0.1", closed_port(), timeout=0.02, retries=1, mtu=100000) as c:
            with self.assertRaisesRegex(kv.KvaggError, "send: .*Message too long") as e:
                for i in range(c.max_tuples):
                    c.add(i, i)
            self.assertNotIsInstance(e.exception, kv.KvaggTimeout)

    def test_an_unknown_host_is_a_kvagg_error(self):
        with self.assertRaises(kv.KvaggError):
            kv.Client("no-such-host.invalid")


if __name__ == "__main__":
    sys.path.insert(0, sys.argv.pop(1))
    import linerate_kvagg
    kv = linerate_kvagg
    unittest.main(verbosity=2)
