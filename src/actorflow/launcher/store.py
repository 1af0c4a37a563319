"""The master's key-value store and named barriers, as plain data with no sockets.

Every method returns the replies to send as ``(ident, type, fields)`` tuples; the master
puts them on the wire.  Waiting ``get``s are answered when the key is set, or with
``missing=True`` when their deadline passes (the client turns that into a WaitTimeout).
"""

from __future__ import annotations

from typing import Any

Reply = tuple[bytes, str, dict]


class Store:
    def __init__(self) -> None:
        self.kv: dict[str, Any] = {}
        self.waiters: list[tuple[bytes, str, float]] = []  # (ident, key, deadline)
        self.barriers: dict[str, set[int]] = {}

    def set(self, ident: bytes, key: str, value: Any) -> list[Reply]:
        self.kv[key] = value
        out: list[Reply] = [(ident, "kv_ok", {"key": key})]
        for w in [w for w in self.waiters if w[1] == key]:
            self.waiters.remove(w)
            out.append((w[0], "kv_val", {"key": key, "value": value}))
        return out

    def get(self, ident: bytes, key: str, deadline: float) -> list[Reply]:
        if key in self.kv:
            return [(ident, "kv_val", {"key": key, "value": self.kv[key]})]
        self.waiters.append((ident, key, deadline))
        return []

    def expire(self, now: float) -> list[Reply]:
        late = [w for w in self.waiters if now > w[2]]
        for w in late:
            self.waiters.remove(w)
        return [(w[0], "kv_val", {"key": w[1], "missing": True}) for w in late]

    def arrive(self, name: str, rank: int, world_size: int) -> bool:
        """Record ``rank`` at barrier ``name``; True when the last rank arrived."""
        arrived = self.barriers.setdefault(name, set())
        arrived.add(rank)
        if len(arrived) < world_size:
            return False
        del self.barriers[name]
        return True
