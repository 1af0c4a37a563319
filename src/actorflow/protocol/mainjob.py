"""The main job's actor kinds (seed 001, "MainJob"): pure state machines, no threads.

A multi-job plan runs every job's *critical section* under one main job:

    wait_and_send_ids -> reentrant_lock -> case -> (per critical section) source tick
      -> identity tick on every machine -> the job's tasks -> sink tick per machine
      -> callback tick (tells the client) and esac -> back edge to the lock

Critical-section ids are data: they ride in the ``aux`` field of the READY messages
between these kinds (all on one unit of machine 0), so the state machines can decide
with no regst memory.  The lock admits an id when its critical section does not conflict
with any running one (``attrs["conflicts"]``: id -> ids it conflicts with); ids wait in
arrival order, and a waiting id holds back those behind it (no overtaking, so a writer is
never starved by a stream of readers).  ``esac`` returns an id once every machine's sink
tick of that critical section finished the piece; EORD reaches the lock's back edge last.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Any

from actorflow.errors import ProtocolError
from actorflow.protocol import rules
from actorflow.protocol.kind_record import Kind
from actorflow.protocol.kind_states import TickState, _Generator
from actorflow.protocol.messages import CLOSE, READY, SEND, Act, Exit, Msg
from actorflow.protocol.rules import Structure
from actorflow.protocol.state import EXITED, RUNNING, ZOMBIE, ActorState, Produced
from actorflow.protocol.task import TaskShape
from actorflow.protocol.task import TaskView as Task


def _send_ready_payload(state: ActorState, out: list, p: Produced, slot: int, piece: int,
                        payload: Any) -> None:
    """READY to every consumer of ``p`` carrying ``payload`` (a critical-section id)."""
    start = len(out)
    state._send_ready(out, p, slot, piece)
    for m in out[start:]:
        m.aux = payload


class _PayloadInputs(ActorState):
    """Keeps, per consumed desc, the payloads of its ready regsts beside their slots."""

    def __init__(self, task: Task, producer_of: dict[int, int]) -> None:
        super().__init__(task, producer_of)
        self.payloads: dict[int, deque[Any]] = {c: deque() for c in self.consumed}

    def handle(self, msg: Msg) -> list[Any]:
        if msg.type == READY and msg.regst_desc_id in self.payloads:
            self.payloads[msg.regst_desc_id].append(msg.aux)
        return super().handle(msg)

    def _pop(self, desc_id: int) -> tuple[int, int, Any]:
        slot, piece = self.consumed[desc_id].ready.popleft()
        return slot, piece, self.payloads[desc_id].popleft()


class WaitAndSendIdsState(_Generator):
    """Takes critical-section ids from the client (``CMD send``) and sends them on, in order."""

    kind = "wait_and_send_ids"

    def __init__(self, task: Task, producer_of: dict[int, int]) -> None:
        super().__init__(task, producer_of)
        self.ids: deque[int] = deque()
        self.num_cs = int(task.attrs.get("num_critical_sections", 0))
        if len(self._prod) != 1 or self._cons:
            raise ProtocolError(f"task {task.task_id} (wait_and_send_ids): needs one produced "
                                "regst desc and no consumed ones")

    def _on_cmd(self, msg: Msg) -> None:
        if msg.cmd == SEND:
            if self.closed:
                raise ProtocolError(f"task {self.task_id} (wait_and_send_ids): id sent after "
                                    "close")
            i = msg.aux
            if not 0 <= i < self.num_cs:
                raise ProtocolError(f"task {self.task_id} (wait_and_send_ids): critical "
                                    f"section id {i} is not in [0, {self.num_cs})")
            self.ids.append(i)
            self.budget = (self.budget or 0) + 1
        elif msg.cmd == CLOSE:
            self.closed = True
        else:
            super()._on_cmd(msg)

    def _start_act(self) -> Act:
        act = super()._start_act()
        act.info = self.ids.popleft()
        return act

    def _finish(self, act: Act, out: list) -> None:
        d, slot = act.writes[0]
        _send_ready_payload(self, out, self.produced[d], slot, act.piece_id, act.info)

    def dry_run_commands(self, pieces: int) -> list[tuple[str, int | None]]:
        """What the dry run sends: every critical section ``pieces`` times, in the order a
        client sends one request (``attrs["request_order"]``: a job's push jobs, the job,
        its pull jobs, job after job), one ``send`` per id, then close."""
        order = [int(i) for i in self.attrs.get("request_order", range(self.num_cs))]
        return [*(("send", i) for _ in range(pieces) for i in order), ("close", None)]


class ReentrantLockState(_PayloadInputs):
    """Admits critical-section ids that conflict with none running; the rest wait in order.

    consumed ``start`` (ids from wait_and_send_ids) and ``end`` (ids back from esac, the
    back edge); produced ``out`` (admitted ids, to case).  An act either admits the oldest
    waiting id (``info = ("admit", id)``) or takes one returned id (``("return", id)``).
    """

    kind = "reentrant_lock"

    def __init__(self, task: Task, producer_of: dict[int, int]) -> None:
        super().__init__(task, producer_of)
        try:
            self.start = self.consumed[task.attrs["start_desc"]]
            self.end = self.consumed[task.attrs["end_desc"]]
        except KeyError as e:
            raise ProtocolError(f"task {task.task_id} (reentrant_lock): attrs start_desc/"
                                f"end_desc must name its consumed regst descs ({e})") from e
        if len(self._prod) != 1:
            raise ProtocolError(f"task {task.task_id} (reentrant_lock): needs one produced "
                                "regst desc")
        self.conflicts: dict[int, set[int]] = {
            int(k): {int(x) for x in v} for k, v in task.attrs.get("conflicts", {}).items()}
        self.running: Counter[int] = Counter()
        self.admitted = 0
        self.returned = 0

    def admissible(self, cs: int) -> bool:
        """True when critical section ``cs`` conflicts with none of those running."""
        clash = self.conflicts.get(cs, set())
        return not any(n and r in clash for r, n in self.running.items())

    def blocked_on(self) -> dict[str, Any]:
        s = super().blocked_on()
        s.update(running={cs: n for cs, n in sorted(self.running.items()) if n},
                 waiting=list(self.payloads[self.start.desc_id]))
        return s

    def _can_act(self) -> bool:
        if self.end.ready:
            return True
        if not self.start.ready or not self._prod[0].free:
            return False
        return self.admissible(self.payloads[self.start.desc_id][0])

    def _start_act(self) -> Act:
        if self.end.ready:
            slot, piece, cs = self._pop(self.end.desc_id)
            if self.running[cs] <= 0:
                raise ProtocolError(f"task {self.task_id} (reentrant_lock): critical section "
                                    f"{cs} returned but it is not running")
            self.running[cs] -= 1
            self.returned += 1
            return Act(self.task_id, self.acts, piece, [(self.end.desc_id, slot)], [],
                       ("return", cs))
        slot, piece, cs = self._pop(self.start.desc_id)
        self.running[cs] += 1
        self.admitted += 1
        p = self._prod[0]
        return Act(self.task_id, self.acts, piece, [(self.start.desc_id, slot)],
                   [(p.desc_id, p.free.popleft())], ("admit", cs))

    def _finish(self, act: Act, out: list) -> None:
        for d, slot in act.writes:
            _send_ready_payload(self, out, self.produced[d], slot, act.piece_id, act.info[1])
        for d, slot in act.reads:
            self._send_ack(out, self.consumed[d], slot, act.piece_id)

    def _input_done(self) -> bool:
        return (self.start.eord and not self.start.ready and not self.end.ready
                and self.admitted == self.returned)

    def _progress(self, out: list[Any]) -> list[Any]:
        # as ActorState, but the lock outlives its EORD: it still takes the back edge's
        # returns and its EORD, which come after everything downstream drained
        if self.status == RUNNING:
            while self._can_act():
                act = self._start_act()
                self.acts += 1
                self.inflight[act.act_id] = act
                out.append(act)
            if not self.inflight and self._input_done():
                self._send_eord(out)
                self.status = ZOMBIE
        if (self.status == ZOMBIE and self.end.eord and not self.end.ready and not self.inflight
                and all(p.all_free() for p in self._prod)):
            self.status = EXITED
            out.append(Exit(self.task_id))
        return out


class CaseState(_PayloadInputs):
    """Routes each admitted id to its critical section's output (``attrs["cs_descs"]``).

    The piece id it writes counts that critical section's instances, so a job's tasks see
    pieces 0, 1, 2 ... whatever other jobs ran in between.
    """

    kind = "case"

    def __init__(self, task: Task, producer_of: dict[int, int]) -> None:
        super().__init__(task, producer_of)
        if len(self._cons) != 1:
            raise ProtocolError(f"task {task.task_id} (case): needs one consumed regst desc")
        self.out_of = [int(d) for d in task.attrs.get("cs_descs", [])]
        if sorted(self.out_of) != sorted(self.produced):
            raise ProtocolError(f"task {task.task_id} (case): attrs cs_descs {self.out_of} must "
                                f"list its produced regst descs {sorted(self.produced)}")
        self.instances = [0] * len(self.out_of)

    def _target(self, cs: Any) -> Produced:
        if not isinstance(cs, int) or not 0 <= cs < len(self.out_of):
            raise ProtocolError(f"task {self.task_id} (case): critical section id {cs!r} is "
                                f"not in [0, {len(self.out_of)})")
        return self.produced[self.out_of[cs]]

    def _can_act(self) -> bool:
        c = self._cons[0]
        return bool(c.ready) and bool(self._target(self.payloads[c.desc_id][0]).free)

    def _start_act(self) -> Act:
        c = self._cons[0]
        slot, _piece, cs = self._pop(c.desc_id)
        p = self._target(cs)
        piece = self.instances[cs]
        self.instances[cs] += 1
        return Act(self.task_id, self.acts, piece, [(c.desc_id, slot)],
                   [(p.desc_id, p.free.popleft())], cs)


class EsacState(ActorState):
    """Returns a critical-section id to the lock once all its sink ticks finished a piece.

    ``attrs["cs_of_desc"]`` maps each consumed desc (one sink tick per machine) to its
    critical section; the produced desc is the lock's back edge.
    """

    kind = "esac"

    def __init__(self, task: Task, producer_of: dict[int, int]) -> None:
        super().__init__(task, producer_of)
        cs_of = {int(k): int(v) for k, v in task.attrs.get("cs_of_desc", {}).items()}
        if set(cs_of) != set(self.consumed) or len(self._prod) != 1:
            raise ProtocolError(f"task {task.task_id} (esac): attrs cs_of_desc must map each "
                                f"consumed regst desc {sorted(self.consumed)} to a critical "
                                "section, and it produces one regst desc")
        self.groups: dict[int, list[int]] = {}
        for d, cs in sorted(cs_of.items()):
            self.groups.setdefault(cs, []).append(d)

    def _ready_cs(self) -> int | None:
        for cs, descs in self.groups.items():
            if all(self.consumed[d].ready for d in descs):
                return cs
        return None

    def _can_act(self) -> bool:
        return bool(self._prod[0].free) and self._ready_cs() is not None

    def _start_act(self) -> Act:
        cs = self._ready_cs()
        assert cs is not None
        reads = []
        piece = -1
        for d in self.groups[cs]:
            slot, piece = self.consumed[d].ready.popleft()
            reads.append((d, slot))
        p = self._prod[0]
        return Act(self.task_id, self.acts, piece, reads, [(p.desc_id, p.free.popleft())], cs)

    def _finish(self, act: Act, out: list) -> None:
        d, slot = act.writes[0]
        _send_ready_payload(self, out, self.produced[d], slot, act.piece_id, act.info)
        for d, slot in act.reads:
            self._send_ack(out, self.consumed[d], slot, act.piece_id)

    def _input_done(self) -> bool:
        if not all(c.eord for c in self._cons):
            return False
        left = {c.desc_id: len(c.ready) for c in self._cons if c.ready}
        if left:
            raise ProtocolError(f"task {self.task_id} (esac): every sink tick ended but regsts "
                                f"are left on descs {left}: its machines finished different "
                                "numbers of pieces")
        return True


class CallbackTickState(TickState):
    """Tells the client that one machine finished a piece of a critical section."""

    kind = "callback_tick"


# -- structural rules (Plan.validate) --------------------------------------------------------
def _counts(t: TaskShape, consumed: str, produced: str) -> list[str]:
    """``consumed``/``produced``: "0", "1", "2" or "1+" regst descs."""
    errs = rules.kernels(t, False)
    for what, want, n in (("consumes", consumed, len(t.consumed_ids())),
                          ("produces", produced, len(t.produced))):
        ok = n >= 1 if want == "1+" else n == int(want)
        if not ok:
            errs.append(f"{rules.article(t.task_type)} task {what} {want} regst desc(s), this "
                        f"one {n}")
    return errs


def _wait_rule(t: TaskShape, s: Structure) -> list[str]:
    return _counts(t, "0", "1")


def _lock_rule(t: TaskShape, s: Structure) -> list[str]:
    errs = _counts(t, "2", "1")
    ids = set(t.consumed_ids())
    if not errs and {t.attrs.get("start_desc"), t.attrs.get("end_desc")} != ids:
        errs.append(f"attrs start_desc/end_desc must name its consumed regst descs {sorted(ids)}")
    return errs


def _case_rule(t: TaskShape, s: Structure) -> list[str]:
    errs = _counts(t, "1", "1+")
    mine = sorted(d.regst_desc_id for d in t.produced.values())
    if sorted(int(d) for d in t.attrs.get("cs_descs", [])) != mine:
        errs.append(f"attrs cs_descs must list its produced regst descs {mine}")
    return errs


def _esac_rule(t: TaskShape, s: Structure) -> list[str]:
    errs = _counts(t, "1+", "1")
    ids = sorted(t.consumed_ids())
    if sorted(int(d) for d in t.attrs.get("cs_of_desc", {})) != ids:
        errs.append(f"attrs cs_of_desc must map each consumed regst desc {ids} to a critical "
                    "section")
    return errs


def _callback_rule(t: TaskShape, s: Structure) -> list[str]:
    return _counts(t, "1+", "0")


MAIN_JOB_KINDS: tuple[Kind, ...] = (
    Kind("wait_and_send_ids", WaitAndSendIdsState, _wait_rule,
         "main job: takes critical-section ids from the client, sends them on in order",
         shape="invhouse"),
    Kind("reentrant_lock", ReentrantLockState, _lock_rule,
         "main job: admits an id when its job conflicts with none running; the rest wait",
         shape="octagon"),
    Kind("case", CaseState, _case_rule,
         "main job: starts the admitted job's critical section", shape="trapezium"),
    Kind("esac", EsacState, _esac_rule,
         "main job: returns a job's id to the lock once every machine finished its piece",
         shape="invtrapezium"),
    Kind("callback_tick", CallbackTickState, _callback_rule,
         "main job: tells the client a machine finished a piece of a job", shape="point"),
)
"""The main job's kinds; ``kinds.py`` registers them with the built-in ones."""

__all__ = ["MAIN_JOB_KINDS", "CallbackTickState", "CaseState", "EsacState", "ReentrantLockState",
           "WaitAndSendIdsState"]
