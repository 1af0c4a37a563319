"""Tagged, bounded receives over the transport's mesh: the one place collectives wait.

A message's key is ``["<group id>:<op name>", op sequence number, part, meta]``; a receive
names the sender and ``(tag, seq, part)`` and keeps messages that arrive early for later.
A message from that sender for the same group and sequence number but another op name
means the ranks called different collectives (or sizes that chose different algorithms):
that fails at once, naming both, instead of waiting out the timeout.  Messages kept for
later belong to the current or a later op of their group: a group's ops run in order and
consume what they are sent, so older ones are dropped and counted (``stale``).  Every
wait has a deadline, and fails at once (after a short grace for bytes still in flight)
when any rank the operation depends on has died or left, naming that rank.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from actorflow.errors import CollectiveError, RankLost, WaitTimeout
from actorflow.transport.mesh import Mesh

LOSS_GRACE = 0.25  # seconds a lost peer's last bytes may still be arriving

Tag = tuple[str, int, int]  # (group id, op sequence number, part)


class Channel:
    """A rank's mailbox on top of a ``Mesh``."""

    def __init__(self, mesh: Mesh) -> None:
        self.mesh = mesh
        self.rank = mesh.rank
        self._early: dict[tuple[int, str, int, int], tuple[Any, list]] = {}
        self._at: dict[str, int] = {}  # group id -> the op sequence number waited in last
        self.stale = 0  # messages of an op this rank had finished: dropped
        self.failed: int | None = None  # the dead rank a wait last reported, if any

    def send(self, peer: int, tag: Tag, frames: Sequence[Any] = (), meta: Any = None) -> None:
        self.mesh.send(peer, [tag[0], tag[1], tag[2], meta], frames)

    def recv(self, src: int, tag: Tag, *, watch: Iterable[int], deadline: float,
             what: str) -> tuple[Any, list]:
        """``(meta, frames)`` of the message ``tag`` from ``src``.

        ``watch`` are the ranks whose loss dooms this wait (the group's members);
        ``what`` names the operation for error messages.
        """
        key = (src, *tag)
        group = tag[0].partition(":")[0]
        if tag[1] > self._at.get(group, tag[1] - 1):
            self._move_on(group, tag[1])
        found = self._early.pop(key, None)
        if found is not None:
            return found
        watch = tuple(watch)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeout(f"rank {self.rank} waited too long in {what} for a message "
                                  f"from rank {src} (is rank {src} running the same "
                                  "collectives in the same order?)")
            msg = self.mesh.recv(min(left, 0.05))
            if msg is None:
                self._check_peers(src, watch, what)
                continue
            peer, body, frames = msg
            if not (isinstance(body, list) and len(body) == 4 and isinstance(body[0], str)
                    and isinstance(body[1], int) and isinstance(body[2], int)):
                self.mesh.reject(f"key {body!r:.60} is not a collective's "
                                 "[group op, seq, part, meta]", f"rank {peer}")
                continue
            gid, seq, part, meta = body
            if (peer, gid, seq, part) == key:
                return meta, frames
            if peer == src and seq == tag[1] and gid != tag[0] and \
                    gid.partition(":")[0] == tag[0].partition(":")[0]:
                raise CollectiveError(
                    f"rank {src} called {gid.partition(':')[2]} #{seq} where rank {self.rank} "
                    f"called {what}: the ranks must call the same collectives in the same "
                    "order, with tensors of the same size")
            if seq < self._at.get(gid.partition(":")[0], seq):
                self.stale += 1  # leftovers of an op that failed here, or a stray sender's
                continue
            self._early[(peer, gid, seq, part)] = (meta, frames)

    def _move_on(self, group: str, seq: int) -> None:
        """This rank waits in op ``seq`` of ``group`` now: every member runs a group's ops in
        order and consumes all it is sent within the op, so parked messages of its earlier
        ops can never be taken (what a failed op left behind) and are dropped."""
        self._at[group] = seq
        for k in [k for k in self._early if k[2] < seq and k[1].partition(":")[0] == group]:
            del self._early[k]
            self.stale += 1

    def _check_peers(self, src: int, watch: tuple[int, ...], what: str) -> None:
        """Raise ``RankLost`` if a rank this wait depends on died or left.  A death is
        named before a departure: a rank that left because another died passes that on."""
        mesh = self.mesh
        now = time.monotonic()
        ranks = (src, *watch)
        for r in ranks:
            t = mesh.lost.get(r)
            if t is not None and now - t > LOSS_GRACE and r not in mesh.gone:
                self.failed = r
                raise RankLost(r, f"rank {r} died: its connection closed while rank "
                                  f"{self.rank} waited in {what}")
        for r in ranks:
            if r not in mesh.gone:
                continue
            dead = (mesh.gone[r] or {}).get("lost") if isinstance(mesh.gone[r], dict) else None
            if isinstance(dead, int):
                self.failed = dead
                raise RankLost(dead, f"rank {dead} died: rank {r} saw its connection close and "
                                     f"left, while rank {self.rank} waited in {what}")
            if r != src:  # it left after sending all it owed us (its goodbye came last):
                continue  # only a wait for its own message is doomed
            raise RankLost(r, f"rank {r} left the process group (destroyed it or exited) "
                              f"while rank {self.rank} waited in {what}")
