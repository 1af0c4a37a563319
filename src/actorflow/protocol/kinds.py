"""Actor kinds by task type: one record per kind, registered once.

A ``Kind`` holds everything the layers below the runtime know of a task type: its pure
state machine, the structural rule ``Plan.validate`` checks on every task of that type,
and the description ``flowlaunch plan show`` prints.  The runtime side (how an act moves
data) registers an executor under the same name in ``actorflow.actors.executors``; a test
checks that both registries name exactly the same kinds.  Adding a kind is one record
here (or ``register_kind`` from a plugin module) plus one executor.
"""

from __future__ import annotations

from dataclasses import dataclass

from actorflow.errors import RegistryError
from actorflow.protocol import rules
from actorflow.protocol.kind_states import (
    AccState,
    InputState,
    OutputState,
    RepeatState,
    SourceState,
    TickState,
)
from actorflow.protocol.rules import Rule
from actorflow.protocol.state import RUNNING, ActorState
from actorflow.protocol.task import TaskView as Task
from actorflow.registry import Registry


@dataclass(frozen=True)
class Kind:
    """One task type: state machine, structural rule, and what it is for (``plan show``).

    ``remote_inputs``: tasks of this kind may consume regsts produced on another machine
    (only ``comm_net``: every other edge between machines goes through one).
    ``shape``: the Graphviz node shape of ``flowlaunch plan dot``.
    """

    name: str
    state: type[ActorState]
    rule: Rule
    description: str
    remote_inputs: bool = False
    shape: str = "box"


KINDS: Registry[Kind] = Registry("task type")


def register_kind(kind: Kind) -> Kind:
    """Register a kind by its name; a second kind of the same name is a RegistryError."""
    return KINDS.register(kind.name, kind)


def get_kind(task_type: str) -> Kind:
    return KINDS.get(task_type)


def kind_names() -> list[str]:
    return KINDS.names()


def make_state(task: Task, producer_of: dict[int, int]) -> ActorState:
    """The state machine of ``task``'s kind; an unknown kind names the task and the known."""
    try:
        kind = KINDS.get(task.task_type)
    except RegistryError as e:
        raise RegistryError(f"task {task.task_id} ({task.label}): {e}") from None
    return kind.state(task, producer_of)


for _kind in (
    Kind("normal", ActorState, rules.normal,
         "runs its exec sequence of kernels on every piece"),
    Kind("input", InputState, rules.input_,
         "one piece per feed from the client (Session.run / feed)", shape="invhouse"),
    Kind("source", SourceState, rules.source,
         "a generator kernel run for a piece count (started by CMD start)", shape="invhouse"),
    Kind("output", OutputState, rules.output,
         "hands every piece it reads to the client", shape="house"),
    Kind("tick", TickState, rules.tick,
         "control only: passes the beat on, no kernels", shape="point"),
    Kind("acc", AccState, rules.acc,
         "accumulates acc_num pieces into one (sum), emits once per group"),
    Kind("repeat", RepeatState, rules.repeat,
         "emits every piece it reads repeat_num times"),
    Kind("copy_h2d", ActorState, rules.copy(to_device=True),
         "copies a regst from host memory to device memory"),
    Kind("copy_d2h", ActorState, rules.copy(to_device=False),
         "copies a regst from device memory to host memory"),
    Kind("comm_net", ActorState, rules.comm_net,
         "on the receiving machine: brings a regst produced on another machine here",
         remote_inputs=True, shape="cds"),
    Kind("boxing", ActorState, rules.boxing,
         "slices, concatenates or adds parallel pieces to change SBP/placement",
         shape="hexagon"),
):
    register_kind(_kind)

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
        if msg.cmd == "start":
            n = msg.payload if msg.payload is not None else self.attrs.get("piece_num")
            self.budget = None if n is None else int(n)
            self.closed = self.budget is not None
        elif msg.cmd == "stop":
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
        if msg.cmd == "feed":
            if self.closed:
                raise ProtocolError(f"task {self.task_id} (input {self.label}): fed after close")
            self.budget = (self.budget or 0) + (1 if msg.payload is None else int(msg.payload))
        elif msg.cmd == "close":
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
            self.flush = False
            act = Act(self.task_id, self.acts, self.groups, [], [(p.desc_id, self.held)],
                      (False, True, -1))
            self.held, self.count = None, 0
            self.groups += 1
            return act
        c = self._cons[0]
        first = self.held is None
        if first:
            self.held = p.free.popleft()
        slot, in_piece = c.ready.popleft()
        self.count += 1
        emit = self.count == self.acc_num
        act = Act(self.task_id, self.acts, self.groups, [(c.desc_id, slot)],
                  [(p.desc_id, self.held)], (first, emit, in_piece))
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


for _name, _cls in {
    "normal": ActorState, "source": SourceState, "input": InputState, "output": OutputState,
    "tick": TickState, "acc": AccState, "repeat": RepeatState,
    "boxing": ActorState, "comm_net": ActorState, "copy_h2d": ActorState,
    "copy_d2h": ActorState,
}.items():
    register_kind(_name, _cls)

from actorflow.protocol import mainjob  # noqa: E402,F401  (registers the main job's kinds)

__all__ = ["RUNNING", "AccState", "InputState", "OutputState", "RepeatState", "SourceState",
           "TickState", "kind_names", "make_state", "register_kind"]
