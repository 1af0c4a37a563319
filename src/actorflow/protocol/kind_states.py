"""The refined state machines: kinds whose act condition or bookkeeping differ from ``normal``.

Generators (``source``, ``input``) act on a piece budget, ``acc`` folds N pieces into one,
``repeat`` turns one into N, ``output`` and ``tick`` keep the base rules.  Each class is
named by one record in ``protocol.kinds``.
"""

from __future__ import annotations

from typing import Any

from actorflow.errors import ProtocolError
from actorflow.protocol.messages import CLOSE, FEED, START, STOP, Act, Msg
from actorflow.protocol.state import ActorState
from actorflow.protocol.task import TaskView as Task


class _Generator(ActorState):
    """Base of kinds with no data inputs: they act on a piece budget."""

    def __init__(self, task: Task, producer_of: dict[int, int]) -> None:
        super().__init__(task, producer_of)
        self.pieces_made = 0
        # pieces allowed so far (None: unbounded); a gated source acts once per gate tick
        self.budget: int | None = None if (
            task.attrs.get("gated") and task.task_type == "source") else 0
        self.closed = False

    def blocked_on(self) -> dict[str, Any]:
        s = super().blocked_on()
        s.update(budget=self.budget, pieces_made=self.pieces_made, closed=self.closed)
        return s

    def _can_act(self) -> bool:
        if self.budget is not None and self.pieces_made >= self.budget:
            return False
        for c in self._cons:  # optional control inputs (ticks)
            if not c.ready:
                return False
        for p in self._prod:
            if not p.free:
                return False
        return True

    def _start_act(self) -> Act:
        reads = [(c.desc_id, c.ready.popleft()[0]) for c in self._cons]
        writes = [(p.desc_id, p.free.popleft()) for p in self._prod]
        piece = self.pieces_made
        self.pieces_made += 1
        return Act(self.task_id, self.acts, piece, reads, writes)

    def _input_done(self) -> bool:
        if self._cons and all(c.eord and not c.ready for c in self._cons):
            return True
        if self.attrs.get("gated"):  # a multi-job plan's identity tick paces it: only the
            return False              # gate's EORD ends it (the client's close/stop do not)
        return self.closed and (self.budget is None or self.pieces_made >= self.budget)


class SourceState(_Generator):
    """Generator kernel with a piece count; starts on ``CMD start``."""

    kind = "source"

    def _on_cmd(self, msg: Msg) -> None:
        if msg.cmd == START:
            n = msg.arg if msg.arg is not None else self.attrs.get("piece_num")
            self.budget = None if n is None else int(n)
            self.closed = self.budget is not None
        elif msg.cmd == STOP:
            if self.attrs.get("gated"):
                return  # its gate's EORD ends it, after every admitted piece
            self.budget = self.pieces_made if self.budget is None else min(
                self.budget, self.pieces_made)
            self.closed = True
        else:
            super()._on_cmd(msg)


class InputState(_Generator):
    """Pieces fed by the client: ``CMD feed`` adds one, ``CMD close`` ends the stream."""

    kind = "input"

    def _on_cmd(self, msg: Msg) -> None:
        if msg.cmd == FEED:
            if self.closed:
                raise ProtocolError(f"task {self.task_id} (input {self.label}): fed after close")
            self.budget = (self.budget or 0) + (1 if msg.arg is None else msg.arg)
        elif msg.cmd == CLOSE:
            self.closed = True
        else:
            super()._on_cmd(msg)


class AccState(ActorState):
    """N pieces in, 1 piece out: the output regst is held while a group accumulates.

    ``info`` of an act is ``(first, emit, in_piece)``: first of its group (copy, not add),
    last of its group (send READY), and the piece id of the input regst it reads (the ACK
    carries it, so every ACK names the piece of the READY it answers).  A partial group
    left at EORD is emitted before EORD.
    """

    kind = "acc"

    def __init__(self, task: Task, producer_of: dict[int, int]) -> None:
        super().__init__(task, producer_of)
        self.acc_num = int(task.attrs.get("acc_num", 1))
        if self.acc_num < 1 or len(self._cons) != 1 or len(self._prod) != 1:
            raise ProtocolError(f"task {task.task_id} (acc): needs acc_num >= 1, one consumed "
                                "and one produced regst desc")
        self.held: int | None = None  # produced slot being accumulated into
        self.count = 0
        self.groups = 0
        self.flush = False

    def _can_act(self) -> bool:
        if self.flush:
            return self.held is not None
        return bool(self._cons[0].ready) and (self.held is not None or bool(self._prod[0].free))

    def _start_act(self) -> Act:
        p = self._prod[0]
        if self.flush:  # emit the partial group, no input read
            assert self.held is not None  # _can_act flushes only a held regst
            self.flush = False
            act = Act(self.task_id, self.acts, self.groups, [], [(p.desc_id, self.held)],
                      (False, True, -1))
            self.held, self.count = None, 0
            self.groups += 1
            return act
        c = self._cons[0]
        first = self.held is None
        held = p.free.popleft() if self.held is None else self.held
        self.held = held
        slot, in_piece = c.ready.popleft()
        self.count += 1
        emit = self.count == self.acc_num
        act = Act(self.task_id, self.acts, self.groups, [(c.desc_id, slot)],
                  [(p.desc_id, held)], (first, emit, in_piece))
        if emit:
            self.held, self.count = None, 0
            self.groups += 1
        return act

    def _finish(self, act: Act, out: list) -> None:
        if act.info[1]:
            d, slot = act.writes[0]
            self._send_ready(out, self.produced[d], slot, act.piece_id)
        for d, slot in act.reads:
            self._send_ack(out, self.consumed[d], slot, act.info[2])

    def _before_eord(self) -> bool:
        if self.held is not None and not self.flush:
            self.flush = True
            return True
        return False


class RepeatState(ActorState):
    """1 piece in, N pieces out: the input regst is acked after its N-th use.

    ``info`` of an act is ``(last_use, in_piece)``.
    """

    kind = "repeat"

    def __init__(self, task: Task, producer_of: dict[int, int]) -> None:
        super().__init__(task, producer_of)
        self.repeat_num = int(task.attrs.get("repeat_num", 1))
        if self.repeat_num < 1 or len(self._cons) != 1 or len(self._prod) != 1:
            raise ProtocolError(f"task {task.task_id} (repeat): needs repeat_num >= 1, one "
                                "consumed and one produced regst desc")
        self.used = 0  # uses of the current front input
        self.made = 0

    def _start_act(self) -> Act:
        c, p = self._cons[0], self._prod[0]
        slot, in_piece = c.ready[0]
        self.used += 1
        last = self.used == self.repeat_num
        if last:
            c.ready.popleft()
            self.used = 0
        act = Act(self.task_id, self.acts, self.made, [(c.desc_id, slot)],
                  [(p.desc_id, p.free.popleft())], (last, in_piece))
        self.made += 1
        return act

    def _finish(self, act: Act, out: list) -> None:
        d, slot = act.writes[0]
        self._send_ready(out, self.produced[d], slot, act.piece_id)
        if act.info[0]:
            d, slot = act.reads[0]
            self._send_ack(out, self.consumed[d], slot, act.info[1])


class OutputState(ActorState):
    """Hands each piece to the client; no produced data."""

    kind = "output"


class TickState(ActorState):
    """Control only: same rules, no kernels."""

    kind = "tick"
