"""Host lists for ``flowlaunch run``: ``--hosts a,b:2`` or an MPI/DeepSpeed hostfile.

Hostfile lines are ``host [slots=N]`` (``max_slots=`` is accepted and ignored); ``#``
starts a comment.  ``slots`` is how many workers (machines of the plan) run on that host,
default 1.  Ranks are given in order: rank 0 is the first slot of the first host, and it
hosts the master.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from actorflow.errors import LaunchError

_HOST_RE = re.compile(r"^[A-Za-z0-9_.\-]+$|^\[?[0-9A-Fa-f:]+\]?$")


@dataclass(frozen=True)
class HostSlot:
    host: str
    slots: int


def _check_host(host: str, where: str) -> str:
    if not host:
        raise LaunchError(f"{where}: empty host name")
    if not _HOST_RE.match(host):
        raise LaunchError(f"{where}: {host!r} is not a host name or address")
    return host


def _slots(value: str, where: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise LaunchError(f"{where}: slots {value!r} is not an integer") from None
    if n < 1:
        raise LaunchError(f"{where}: slots must be at least 1, got {n}")
    return n


def parse_hosts(spec: str) -> list[HostSlot]:
    """``"h1,h2:2"`` -> [h1 x1, h2 x2]; errors name the bad entry."""
    if not spec.strip():
        raise LaunchError("--hosts is empty: expected a comma-separated list like node1,node2")
    out = []
    for i, entry in enumerate(spec.split(",")):
        where = f"--hosts entry {i + 1} ({entry!r})"
        entry = entry.strip()
        host, sep, n = entry.partition(":") if entry.count(":") == 1 else (entry, "", "")
        out.append(HostSlot(_check_host(host, where), _slots(n, where) if sep else 1))
    return _no_duplicates(out, "--hosts")


def parse_hostfile(path: str | Path) -> list[HostSlot]:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise LaunchError(f"hostfile {path}: cannot read: {e.strerror or e}") from e
    out = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"hostfile {path} line {lineno}"
        parts = line.split()
        slots = 1
        for opt in parts[1:]:
            key, eq, value = opt.partition("=")
            if not eq or key not in ("slots", "max_slots"):
                raise LaunchError(f"{where}: expected 'host slots=N', got {line!r}")
            if key == "slots":
                slots = _slots(value, where)
        out.append(HostSlot(_check_host(parts[0], where), slots))
    if not out:
        raise LaunchError(f"hostfile {path} lists no hosts (expected lines 'host slots=N')")
    return _no_duplicates(out, f"hostfile {path}")


def _no_duplicates(hosts: list[HostSlot], where: str) -> list[HostSlot]:
    seen = set()
    for h in hosts:
        if h.host in seen:
            raise LaunchError(f"{where}: host {h.host!r} is listed twice; give it slots=N instead")
        seen.add(h.host)
    return hosts


def expand(hosts: list[HostSlot]) -> list[str]:
    """One entry per rank: the host that rank runs on."""
    return [h.host for h in hosts for _ in range(h.slots)]
