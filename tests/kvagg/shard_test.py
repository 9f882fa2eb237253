#!/usr/bin/env python3
"""The sharded Python client (python/linerate_kvagg.py, ShardedClient), as kvagg_shard_test.cpp
holds the C++ one: the key -> endpoint mapping against reference values and the table both clients
share (tests/kvagg/fixtures/shard_owners.txt), the rendezvous properties, endpoint parsing, the
`owner` command line, and the client over closed ports (instances down: add() holds their share
and raises nothing, read and flush time out). No kvagg.

    shard_test.py PYTHON_DIR
"""
import collections
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from client_refused_test import closed_port  # noqa: E402
kv = None  # python/linerate_kvagg, imported from the directory given


def closed_endpoint():
    return f"127.0.0.1:{closed_port()}"


class Mapping(unittest.TestCase):
    def test_hash_functions_match_their_reference_values(self):
        self.assertEqual(kv.shard_name_hash(""), 0xCBF29CE484222325)
        self.assertEqual(kv.shard_name_hash("a"), 0xAF63DC4C8601EC8C)
        self.assertEqual(kv.shard_name_hash("foobar"), 0x85944171F73967E8)
        self.assertEqual(kv.shard_mix(0x9E3779B97F4A7C15), 0xE220A8397B1DCDAF)

    def test_owners_equal_the_table_both_clients_share(self):
        hashes = owners = 0
        with open(os.path.join(HERE, "fixtures", "shard_owners.txt")) as f:
            for line in f:
                if not line.strip() or line.startswith("#"):
                    continue
                w = line.split()
                if w[0] == "name_hash":
                    self.assertEqual(kv.shard_name_hash(w[1]), int(w[2], 16), line)
                    hashes += 1
                else:
                    self.assertEqual(kv.shard_owner(w[1].split(","), int(w[2])), w[3], line)
                    owners += 1
        self.assertEqual((hashes, owners), (7, 240))

    def test_adding_or_removing_an_endpoint_moves_only_its_keys(self):
        two = ["10.213.0.1:9000", "10.213.1.1:9000"]
        three = two + ["10.213.2.1:9000"]
        per = collections.Counter()
        for key in range(30000):
            with3 = kv.shard_owner(three, key)
            per[with3] += 1
            if with3 != three[2]:
                self.assertEqual(with3, kv.shard_owner(two, key))
            self.assertEqual(kv.shard_owner(three[::-1], key), with3)
        for name, count in per.items():
            self.assertTrue(9000 < count < 11000, (name, count))

    def test_the_client_maps_as_the_function(self):
        with kv.ShardedClient(["127.0.0.1:9000", "127.0.0.1:9001"]) as c:
            names = c.endpoints()
            for key in (0, 1, 2**64 - 1, 12345):
                self.assertEqual(c.owner(key), kv.shard_owner(names, key))

    def test_endpoints_parse_or_are_errors(self):
        self.assertEqual(kv.endpoint_name("10.0.0.1"), "10.0.0.1:9000")
        self.assertEqual(kv.endpoint_name("kv-a.example:9001"), "kv-a.example:9001")
        for bad in ("10.0.0.1:0", "10.0.0.1:65536", ":9000", "h:9x", "h:", "h:123456", "h:٣"):
            with self.assertRaises(kv.KvaggError, msg=bad):
                kv.parse_endpoint(bad)
        with self.assertRaises(kv.KvaggError):
            kv.ShardedClient([])
        with self.assertRaises(kv.KvaggError):
            kv.ShardedClient(["127.0.0.1:9000", "127.0.0.1"])

    def test_owner_command_line(self):
        tool = kv.__file__
        r = subprocess.run([sys.executable, tool, "owner", "--endpoints",
                            "10.213.0.1,10.213.1.1:9000", "41", "0x2a"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        names = ["10.213.0.1:9000", "10.213.1.1:9000"]
        want = "".join(f"{k} {kv.shard_owner(names, k)}\n" for k in (41, 42))
        self.assertEqual(r.stdout, want)
        r = subprocess.run([sys.executable, tool, "owner", "--endpoints", "h:0", "1"],
                           capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


class Down(unittest.TestCase):
    def test_instances_down_hold_their_share_and_add_goes_on(self):
        """Two closed ports: add() raises nothing, holds every datagram; its own status of an
        instance gives up after status_patience (not the 10 attempts of 50 ms every other
        request gets) and asks a down instance again only every down_retry; only KvaggTimeout
        leaves."""
        with kv.ShardedClient([closed_endpoint(), closed_endpoint()], status_every=4,
                              status_patience=0.1, down_retry=0.2, timeout=0.05, retries=10,
                              mtu=66) as c:
            t0 = time.monotonic()
            for k in range(300):
                c.add(k, k + 1)
            self.assertLess(time.monotonic() - t0, 2.0)  # 300 status() calls would be 300 s
            self.assertEqual(c.outages, 2)
            self.assertEqual(c.held(), 300)
            self.assertGreater(c.refused, 0)
            with self.assertRaises(kv.KvaggTimeout):
                c.read([1, 2])
            with self.assertRaises(kv.KvaggTimeout):
                c.flush(reset=True)
            with self.assertRaises(kv.KvaggTimeout):
                c.status()
            with self.assertRaises(kv.KvaggTimeout):
                c.wait_durable(patience=0.3)
            with self.assertRaises(kv.KvaggTimeout):
                c.remove_endpoint(c.endpoints()[0])
            self.assertEqual(len(c.endpoints()), 2)  # a remove without an answer changes nothing
            with self.assertRaises(kv.KvaggError):
                c.remove_endpoint("127.0.0.1:1")


if __name__ == "__main__":
    sys.path.insert(0, sys.argv.pop(1))
    import linerate_kvagg
    kv = linerate_kvagg
    unittest.main(verbosity=2)
