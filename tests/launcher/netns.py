"""Fake hosts for multi-host tests: network namespaces joined by a bridge (iproute2, root).

``Hosts(n)`` makes n namespaces, each with a veth whose other end sits on a bridge in the
root namespace (where the test and flowlaunch run), so every "host" has its own address
(10.177.S.1 ... 10.177.S.n; the root namespace is 10.177.S.254).  ``cut(i)`` takes host
i's link down.  ``close()`` deletes everything it made.
"""

from __future__ import annotations

import os
import shutil
import subprocess


def _ip(*args: str, ns: str | None = None) -> None:
    cmd = ["ip", "netns", "exec", ns, "ip", *args] if ns else ["ip", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise OSError(f"{' '.join(cmd)}: {r.stderr.strip()}")


def unavailable() -> str:
    """Why namespaces cannot be made here ('' when they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 ('ip') is not installed"
    probe = f"afprobe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
        _ip("netns", "del", probe)
    except OSError as e:
        return f"cannot create a network namespace: {e}"
    return ""


class Hosts:
    def __init__(self, n: int) -> None:
        tag = f"{os.getpid() % 10000:04d}"
        subnet = 100 + os.getpid() % 150
        self.bridge = f"afbr{tag}"
        self.ns = [f"afns{tag}-{i}" for i in range(n)]
        self.host_if = [f"afh{tag}{i}" for i in range(n)]
        self.ns_if = [f"afn{tag}{i}" for i in range(n)]
        self.addrs = [f"10.177.{subnet}.{i + 1}" for i in range(n)]
        self.root_addr = f"10.177.{subnet}.254"
        self._made: list[tuple[str, str]] = []
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            self._made.append(("link", self.bridge))
            _ip("addr", "add", f"{self.root_addr}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for ns, hif, nif, addr in zip(self.ns, self.host_if, self.ns_if, self.addrs):
                _ip("netns", "add", ns)
                self._made.append(("netns", ns))
                _ip("link", "add", hif, "type", "veth", "peer", "name", nif)
                self._made.append(("link", hif))
                _ip("link", "set", hif, "master", self.bridge)
                _ip("link", "set", hif, "up")
                _ip("link", "set", nif, "netns", ns)
                _ip("addr", "add", f"{addr}/24", "dev", nif, ns=ns)
                _ip("link", "set", nif, "up", ns=ns)
                _ip("link", "set", "lo", "up", ns=ns)
        except BaseException:
            self.close()
            raise

    @property
    def ssh_map(self) -> str:
        """For tests/launcher/fake_ssh.py: address -> namespace."""
        return ",".join(f"{a}={ns}" for a, ns in zip(self.addrs, self.ns))

    def cut(self, i: int) -> None:
        """Take host i's network link down (its processes keep running)."""
        _ip("link", "set", self.ns_if[i], "down", ns=self.ns[i])

    def close(self) -> None:
        for kind, name in reversed(self._made):
            try:
                if kind == "netns":
                    _ip("netns", "del", name)
                else:
                    _ip("link", "del", name)
            except OSError:
                pass
        self._made.clear()
