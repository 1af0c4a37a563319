"""Every data-plane receiver checks what it decoded before anything touches memory.

A message from the wire is only data: ``Inbound.check`` verifies its shape (ten header
fields of the right types), that its ids are known (the destination is hosted here, the
sender is in the plan, the regst desc belongs to the pair), that its slot and sequence
numbers are in range, and that every blob frame has exactly the bytes its receive buffer
holds, then returns the ``Msg``.  A malformed message is dropped and counted and logged
once per peer; when the run is authenticated (only holders of the run's key can send at
all) it is also a ``MalformedMessage`` naming the peer, which fails the run clearly
instead of letting it compute something else.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from actorflow.errors import MalformedMessage
from actorflow.plan.model import RegstDesc
from actorflow.protocol.messages import (
    ACK,
    CLIENT,
    CMD,
    CMD_NAMES,
    EORD,
    NONE,
    READY,
    SEND,
    Msg,
)
from actorflow.transport.auth import current_key

_INT_MAX = 2**63 - 1
_SLOT_MAX = 2**31 - 1  # a record's slot is an int32 (``_core/record.h``)

def _is_int(v: Any, lo: int = -1) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= _INT_MAX


class Inbound:
    """The checks of one receiver (a node's receive thread or a unit process).

    ``hosted(task_id)`` says whether a task is hosted by this receiver; ``routing`` is the
    plan's task -> (machine, thrd); ``descs`` every regst desc of the plan this receiver
    may see; ``buffers(desc_id)`` the receive slots for a remote READY's blobs (or None).
    """

    def __init__(self, where: str, routing: Mapping[int, tuple[int, int]],
                 descs: Mapping[int, RegstDesc], hosted: Callable[[int], bool],
                 buffers: Callable[[int], list | None], log: Callable[[str], None] | None = None,
                 ) -> None:
        self.where = where
        self.routing = routing
        self.descs = descs
        self.hosted = hosted
        self.buffers = buffers
        self.log = log or (lambda s: print(s, file=sys.stderr, flush=True))
        self.dropped: dict[str, int] = {}  # peer -> malformed messages dropped

    def check(self, body: Any, metas: list | None, frames: list, peer: str = "?") -> Msg:
        """The checked ``Msg`` of a MSG-kind message, or ``MalformedMessage``."""
        problem = self._problem(body, metas, frames)
        if problem is None:
            return Msg(*body)
        raise self.reject(problem, peer)

    def reject(self, problem: str, peer: str = "?") -> MalformedMessage:
        """Count a dropped message of ``peer`` (logged the first time); the error to raise."""
        n = self.dropped.get(peer, 0) + 1
        self.dropped[peer] = n
        err = MalformedMessage(f"{self.where}: malformed message from peer {peer} dropped "
                               f"({problem})")
        if n == 1:
            self.log(str(err))
        return err

    @property
    def strict(self) -> bool:
        """Authenticated run: a malformed message is a peer's bug, fail the run with it."""
        return current_key() is not None

    # -- the rules ---------------------------------------------------------------------
    def _problem(self, body: Any, metas: list | None, frames: list) -> str | None:
        if frames and not metas:
            return f"{len(frames)} frames that the header does not announce"
        if not isinstance(body, list) or len(body) != 10:
            return f"header is {type(body).__name__} of {_len(body)} fields, expected 10"
        t, src, dst, desc, slot, piece, seq, mid, code, aux = body
        if type(t) is not int or t not in (READY, ACK, EORD, CMD):  # not 1.0, not True
            return f"message type {t!r:.20}"
        if not all(_is_int(v) for v in (src, dst, desc, slot, piece, seq, aux)) \
                or not _is_int(mid, 0) or not _is_int(code, 0):
            return "ids, slot, piece, seq, msg id, command and aux must be 64-bit integers"
        if slot > _SLOT_MAX:
            return f"slot {slot} does not fit a record's 32 bits"
        if not self.hosted(dst):
            return f"destination task {dst} is not hosted here"
        if t == CMD:
            if src != CLIENT or not 0 < code < len(CMD_NAMES):
                return f"command {code!r:.20} from task {src}"
            if code == SEND and aux == NONE:
                return "a 'send' command without a critical-section id"
            return self._frames(metas, frames, None) if metas else None
        if code != 0:
            return f"a {('READY', 'ACK', 'EORD')[t]} with command code {code}"
        if src not in self.routing:
            return f"sender task {src} is not in the plan"
        d = self.descs.get(desc)
        if d is None:
            return f"regst desc {desc} is not in the plan"
        producer, consumer = (src, dst) if t in (READY, EORD) else (dst, src)  # ACK: back
        if d.producer_task_id != producer or consumer not in d.consumer_task_ids:
            return f"regst desc {desc} does not link task {src} to task {dst}"
        if t in (READY, ACK) and not 0 <= slot < d.register_num:
            return f"slot {slot} outside [0, {d.register_num}) of regst desc {desc}"
        if seq < 0:
            return f"negative seq {seq}"
        if metas:
            if t != READY:
                return f"a {('READY', 'ACK', 'EORD')[t]} carries blobs"
            buffers = self.buffers(desc)
            return self._frames(metas, frames, buffers[slot] if buffers is not None else None)
        return None

    def _frames(self, metas: Any, frames: list, target: Mapping[str, Any] | None) -> str | None:
        """``target``: the receive slot's blobs by name (None: nothing to land in here)."""
        if not isinstance(metas, list) or len(metas) != len(frames):
            return f"header lists {_len(metas)} blobs, {len(frames)} frames arrived"
        if target is not None and sorted(  # each of the buffer's blobs, once
                str(m[0]) if isinstance(m, list) and m else "" for m in metas) != sorted(
                target):
            return "blob names differ from the receive buffer's"
        for m, f in zip(metas, frames):
            if not (isinstance(m, list) and len(m) == 3 and isinstance(m[0], str)
                    and isinstance(m[1], str) and isinstance(m[2], list)
                    and all(_is_int(s, 0) for s in m[2])):
                return f"blob meta {m!r:.60} is not [name, dtype, shape]"
            try:
                dt = np.dtype(m[1])
            except (TypeError, ValueError, SyntaxError):
                return f"blob '{m[0]}' has dtype {m[1]!r:.20}"
            if dt.kind not in "biufc":  # (no objects: those are kind O, or V when nested)
                return f"blob '{m[0]}' has non-numeric dtype {m[1]!r:.20}"
            size = dt.itemsize
            for s in m[2]:
                size *= s
            have = len(f.buffer) if hasattr(f, "buffer") else len(f)
            if size != have:
                return f"blob '{m[0]}' frame has {have} bytes, its meta says {size}"
            if target is not None:
                arr = target[m[0]]
                if tuple(m[2]) != arr.shape or dt != arr.dtype:
                    return (f"blob '{m[0]}' is {tuple(m[2])} {dt}, the receive buffer is "
                            f"{arr.shape} {arr.dtype}")
        return None


def _len(v: Any) -> int:
    try:
        return len(v)
    except TypeError:
        return 0


__all__ = ["Inbound"]
