"""Two network namespaces made for one run and veth pairs between them, removed afterwards with
whatever still runs in them: the one helper bench/ (benchkit.VethNamespaces) and the docs test
(tests/docs/run_examples.py) build their namespaces with."""
import subprocess


def ip(*argv):
    """`ip ARGV...`; a failure raises with ip's own message."""
    r = subprocess.run(["ip", *argv], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(argv)}: {r.stderr.strip()}")


class NamespacePair:
    """Namespaces `first` and `second`; `lo_up`: their loopback up (127.0.0.1 of each, e.g. for a
    Redis Cluster in it); `ipv6`: off, the kernel sends nothing of its own (router
    solicitations, MLD) into a measurement."""

    def __init__(self, first, second, lo_up=False, ipv6=True):
        self.first, self.second = first, second
        ip("netns", "add", first)
        try:
            ip("netns", "add", second)
            for ns in (first, second):
                if not ipv6:
                    ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
                if lo_up:
                    ip("-n", ns, "link", "set", "lo", "up")
        except Exception:
            self.close()
            raise

    def veth(self, first_if, second_if, queues=1, addresses=None):
        """A veth pair, `first_if` in the first namespace, `second_if` in the second, both up;
        `addresses`: (first's, second's) IPv4 with their prefix, e.g. ("10.0.0.1/24", ...)."""
        q = ["numtxqueues", str(queues), "numrxqueues", str(queues)]
        ip("link", "add", first_if, *q, "netns", self.first, "type", "veth", "peer", "name",
           second_if, *q, "netns", self.second)
        for i, (ns, dev) in enumerate(((self.first, first_if), (self.second, second_if))):
            if addresses:
                ip("-n", ns, "addr", "add", addresses[i], "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")

    def close(self):
        """Ends what still runs in the namespaces (a deleted namespace does not end its
        processes), then deletes them."""
        for ns in (self.first, self.second):
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                  text=True).stdout.split()
            for pid in pids:
                subprocess.run(["kill", "-9", pid], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
