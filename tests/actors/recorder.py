"""A test recorder for the runtime's ``recorder`` hook: act intervals and every message.

Independent of the state machine: it sees only what the units report (messages sent and
received, act begin/end), so tests can check the protocol from the outside.  An act's
interval is a pair of positions in one sequence of the events of every unit (taken under
one lock), so "ended before began" is an order, not a reading of a clock.
"""

from __future__ import annotations

import itertools
import threading

from actorflow.protocol.messages import Act, Msg


class Recorder:
    """Satisfies ``actorflow.actors.hosting.Recorder``; its one unit hook object is itself."""

    ring = None  # no flight ring: every event goes to the timed hooks below
    timed = True

    def __init__(self, check_writes: bool = False) -> None:
        self.lock = threading.Lock()
        self.seq = itertools.count()  # positions of act begins and ends, under the lock
        self.begin: dict[tuple[int, int], int] = {}  # (task, act_id) -> position
        self.end: dict[tuple[int, int], int] = {}
        self.acts: list[tuple[int, Act]] = []
        self.sent: list[Msg] = []
        self.received: list[Msg] = []
        self.check_writes = check_writes
        # (producer task, desc, slot, consumer) -> READYs sent minus ACKs received
        self.holding: dict[tuple[int, int, int, int], int] = {}
        self.violations: list[str] = []

    # -- the hook: the runtime asks unit(key) once per unit, then calls its methods ---------
    def unit(self, key: tuple[int, int]) -> Recorder:
        return self

    def trace_config(self) -> dict | None:
        return None  # lives in this process only: unit processes record nothing

    def send(self, msg: Msg) -> None:
        with self.lock:
            self.sent.append(msg)
            if self.check_writes and msg.type == 0:  # READY: the consumer now holds the regst
                key = (msg.src, msg.regst_desc_id, msg.slot, msg.dst)
                self.holding[key] = self.holding.get(key, 0) + 1

    def recv(self, msg: Msg) -> None:
        with self.lock:
            self.received.append(msg)
            if self.check_writes and msg.type == 1:  # ACK back at the producer: released
                key = (msg.dst, msg.regst_desc_id, msg.slot, msg.src)
                self.holding[key] = self.holding.get(key, 0) - 1

    def act_begin(self, act: Act) -> None:
        task_id = act.task_id
        with self.lock:
            self.begin[(task_id, act.act_id)] = next(self.seq)
            self.acts.append((task_id, act))
            if self.check_writes:
                for desc, slot in act.writes:
                    held = {k: v for k, v in self.holding.items()
                            if k[:3] == (task_id, desc, slot) and v != 0}
                    if held:
                        self.violations.append(
                            f"task {task_id} writes desc {desc} slot {slot} (piece "
                            f"{act.piece_id}) while held: {held}")

    def act_end(self, act: Act) -> None:
        with self.lock:
            self.end[(act.task_id, act.act_id)] = next(self.seq)

    # -- queries -------------------------------------------------------------------------
    def intervals(self, task_id: int) -> dict[int, tuple[int, int]]:
        """piece id -> (begin, end) positions of ``task_id``'s acts."""
        return {a.piece_id: (self.begin[(t, a.act_id)], self.end[(t, a.act_id)])
                for t, a in self.acts if t == task_id}
