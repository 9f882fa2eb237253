"""bench/run auth-cost: what --key costs kvagg (issue 45): the same trace with and without the
MAC on every datagram, alternated in one run.

kvagg at its defaults (--agg per-worker, a table of --keys 1 Mi: kvagg's reference point, as in
bench/run kvagg's sweeps) on one net_pcap port replaying a linerate-gen kvagg trace over 1 Mi
keys from memory (infinite_rx), one worker, --dup-window 0 (the replay repeats sequence
numbers), hugepages when enough are free; and the same with a table and trace of 64 Ki keys
(the table in cache: the MAC's share of a frame at its largest). The keyed trace is the same
frames with the 28-byte trailer (AES-256-GMAC, computed here with python3-cryptography, UDP
checksum recomputed), read by kvagg --key. First, build/bench/mac_cost: ns per message of
linerate's MAC against the other MACs of Debian's OpenSSL at the sizes the apps send (why GMAC:
docs/security.md). Goal: keyed / unkeyed >= 0.7 at 32 tuples a datagram at kvagg's defaults; 64
Ki keys and 1 tuple are reported beside it (the MAC's fixed cost per datagram weighs most at 1
tuple). Mtuples/s from each run's JSON.
"""
import json
import os
import struct
import subprocess
import tempfile

import benchkit as bk

GOAL_32 = 0.7


def _csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def _signed(frame, gmac):
    """The canonical kvagg frame with the trailer appended: lengths and checksums redone."""
    ip, udp = frame[14:34], frame[34:42]
    payload = frame[42:42 + struct.unpack("!H", udp[4:6])[0] - 8]
    nonce = os.urandom(12)
    payload += nonce + gmac.encrypt(nonce, b"", payload)
    udp_len = 8 + len(payload)
    ip = ip[:2] + struct.pack("!H", 20 + udp_len) + ip[4:10] + b"\0\0" + ip[12:]
    ip = ip[:10] + struct.pack("!H", 0xFFFF - _csum(ip)) + ip[12:]
    pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, udp_len)
    udp = udp[:4] + struct.pack("!H", udp_len) + b"\0\0"
    c = 0xFFFF - _csum(pseudo + udp + payload)
    udp = udp[:6] + struct.pack("!H", c or 0xFFFF)
    return frame[:14] + ip + udp + payload


def signed_pcap(src, dst, key):
    """Copies the classic pcap `src` to `dst` with every frame signed under `key`."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    gmac = AESGCM(key)
    with open(src, "rb") as f:
        data = f.read()
    out, off = [data[:24]], 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        frame = _signed(data[off + 16:off + 16 + incl], gmac)
        out.append(struct.pack("<IIII", sec, frac, len(frame), len(frame)) + frame)
        off += 16 + incl
    with open(dst, "wb") as f:
        f.write(b"".join(out))
    return dst


def kvagg_variant(trace, tmp, seconds, name, extra):
    out = os.path.join(tmp, name + ".json")
    huge = bk.hugepages_free() >= 256
    cmd = ([bk.app_path("kvagg"), "-l", "0,1", "--no-pci", "--no-telemetry",
            f"--vdev=net_pcap0,rx_pcap={trace},infinite_rx=1", "--log-level=lib.eal:warning"] +
           bk.memory_args(huge, "auth_" + name) +
           ["--"] + bk.KVAGG_REPLAY + ["--stats-period", "1", "--duration",
            str(seconds), "--mbufs", "32767", "--json", out] + extra)
    return (cmd, bk.json_rate(out)), huge


def run(args):
    """kvagg with and without --key on the same trace, alternated; Mtuples/s medians."""
    tmp = tempfile.mkdtemp(prefix="auth_cost.", dir="/tmp")
    key = os.urandom(32)
    key_file = os.path.join(tmp, "kvagg.key")
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, key.hex().encode() + b"\n")
    os.close(fd)
    result = {"description": run.__doc__, "runs": args.runs, "seconds_per_run": args.seconds,
              "goal_keyed_over_plain_32": GOAL_32, "traces": {},
              "mac_cost": json.loads(subprocess.run([os.path.join(bk.BUILD, "bench", "mac_cost")],
                                                    check=True, capture_output=True,
                                                    text=True).stdout)}
    for tuples, count, keys in ((32, 8192, 1 << 20), (32, 2048, 1 << 16), (1, 8192, 1 << 20)):
        name = f"auth_kv{tuples}_{keys}"
        plain = bk.write_pcap(name, "--kind", "kvagg", "--count", str(count), "--tuples",
                              str(tuples), "--keys", str(keys), "--streams", "16")
        keyed = signed_pcap(plain, os.path.join(tmp, name + "_keyed.pcap"), key)
        table = ["--keys", str(keys)]
        variants = {"plain": kvagg_variant(plain, tmp, args.seconds, f"plain{tuples}", table),
                    "keyed": kvagg_variant(keyed, tmp, args.seconds, f"keyed{tuples}",
                                           table + ["--key", key_file])}
        res = bk.measure_alternating({k: v[0] for k, v in variants.items()}, args.runs,
                                     args.seconds + 2)
        for name, (_, huge) in variants.items():
            res[name]["memory"] = "huge" if huge else "nohuge"
            res[name]["unit"] = "Mtuples/s"
        ratio = res["keyed"]["median_mpps"] / res["plain"]["median_mpps"]
        result["traces"][f"{tuples}_tuples_{keys}_keys"] = {"results": res,
                                                             "keyed_over_plain": round(ratio, 3)}
    result["met"] = result["traces"][f"32_tuples_{1 << 20}_keys"]["keyed_over_plain"] >= GOAL_32
    return result
