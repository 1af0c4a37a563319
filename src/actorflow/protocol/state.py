"""The actor protocol as a pure state machine: ``handle(msg) -> actions``.

No threads, sockets, clocks or arrays live here.  The shell (runtime) executes the
actions in order: ``Msg`` -> send it, ``Act`` -> run the kernels and then call
``act_done(act)`` (which returns the READY/ACK messages to send), ``Exit`` -> the actor is
finished.  Rules (docs/architecture.md, "The actor protocol and the unit loop"):

1. act when every consumed desc has a ready regst at the front and every produced desc a
   free regst (kinds refine this);
2./3. after the act, READY to every consumer of each written regst (reading count = number
   of consumers) and ACK back for each read regst; an ACK decrements the count;
5. EORD once every consumed desc saw EORD and nothing is queued or in flight; then the
   zombie state until every produced regst is acked; then ``Exit``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from actorflow.errors import ProtocolError
from actorflow.protocol.messages import ACK, CMD, EORD, READY, Act, Exit, Msg
from actorflow.protocol.task import TaskView as Task

RUNNING, ZOMBIE, EXITED = "running", "zombie", "exited"


class Produced:
    """One produced regst desc: ``register_num`` slots with per-consumer reading marks.

    ``held[slot]`` is a bit mask of the consumers still reading that slot (bit ``i`` is
    ``consumers[i]``), so a consumer that acks one regst twice is caught even while
    another consumer still holds it.
    """

    __slots__ = ("all_mask", "bit", "consumers", "desc_id", "eord_sent", "free", "held", "seq")

    def __init__(self, desc_id: int, register_num: int, consumers: list[int]) -> None:
        self.desc_id = desc_id
        self.consumers = tuple(consumers)
        self.bit = {c: 1 << i for i, c in enumerate(self.consumers)}
        self.all_mask = (1 << len(self.consumers)) - 1
        self.held = [0] * register_num
        self.free: deque[int] = deque(range(register_num))
        self.seq = dict.fromkeys(self.consumers, 0)  # next seq per destination
        self.eord_sent = False

    def all_free(self) -> bool:
        return len(self.free) == len(self.held)

    def holders(self) -> list[int]:
        """Consumers that still read at least one regst of this desc (for hang reports)."""
        mask = 0
        for m in self.held:
            mask |= m
        return [c for c, b in self.bit.items() if mask & b]


class Consumed:
    """One consumed regst desc: the FIFO of regsts its producer announced ready."""

    __slots__ = ("desc_id", "eord", "next_seq", "producer", "ready")

    def __init__(self, desc_id: int, producer: int) -> None:
        self.desc_id = desc_id
        self.producer = producer
        self.ready: deque[tuple[int, int]] = deque()  # (slot, piece_id)
        self.eord = False
        self.next_seq = 0


class ActorState:
    """Base state machine; the ``normal`` kind as is.  Kinds override the ``_`` hooks."""

    kind = "normal"

    def __init__(self, task: Task, producer_of: dict[int, int]) -> None:
        """``producer_of`` maps every consumed regst desc id to its producer task id."""
        self.task_id = task.task_id
        self.label = task.label
        self.attrs = task.attrs
        self.produced: dict[int, Produced] = {}
        for d in task.produced.values():
            self.produced[d.regst_desc_id] = Produced(
                d.regst_desc_id, d.register_num, d.consumer_task_ids)
        self.consumed: dict[int, Consumed] = {}
        for desc_id in task.consumed_ids():
            if desc_id not in producer_of:
                raise ProtocolError(f"task {self.task_id}: consumed regst desc {desc_id} has no "
                                    "producer in the plan")
            self.consumed[desc_id] = Consumed(desc_id, producer_of[desc_id])
        self._prod = list(self.produced.values())
        self._cons = list(self.consumed.values())
        self.status = RUNNING
        self.inflight: dict[int, Act] = {}
        self.acts = 0  # acts started
        self._sent = 0  # messages sent, for unique msg ids
        self._id_base = self.task_id << 32

    # -- public API ------------------------------------------------------------------
    def handle(self, msg: Msg) -> list[Any]:
        t = msg.type
        if self.status == EXITED:
            raise ProtocolError(f"task {self.task_id} ({self.label}) got {msg!r} after it exited")
        if t == READY:
            c = self.consumed.get(msg.regst_desc_id)
            if c is None:
                raise ProtocolError(f"task {self.task_id} ({self.label}) got READY for regst desc "
                                    f"{msg.regst_desc_id}, which it does not consume")
            if c.eord:
                raise ProtocolError(f"task {self.task_id}: READY on regst desc {c.desc_id} after "
                                    "its EORD")
            if msg.seq != c.next_seq:
                raise ProtocolError(
                    f"task {self.task_id}: regst desc {c.desc_id} message out of order "
                    f"(seq {msg.seq}, expected {c.next_seq})")
            c.next_seq += 1
            c.ready.append((msg.slot, msg.piece_id))
        elif t == ACK:
            self._on_ack(msg)
        elif t == EORD:
            c = self.consumed.get(msg.regst_desc_id)
            if c is None:
                raise ProtocolError(f"task {self.task_id} ({self.label}) got EORD for regst desc "
                                    f"{msg.regst_desc_id}, which it does not consume")
            if c.eord:  # its seq may well be the next one: only this says it is a repeat
                raise ProtocolError(f"task {self.task_id}: a second EORD on regst desc "
                                    f"{c.desc_id}")
            if msg.seq != c.next_seq:
                raise ProtocolError(
                    f"task {self.task_id}: EORD on regst desc {c.desc_id} overtook a READY "
                    f"(seq {msg.seq}, expected {c.next_seq})")
            c.eord = True  # no seq is read after it: eord refuses every later message
        elif t == CMD:
            self._on_cmd(msg)
        else:
            raise ProtocolError(f"task {self.task_id}: unknown message type {t!r}")
        return self._progress([])

    def act_done(self, act: Act) -> list[Any]:
        """The act's kernels finished: send READY/ACK, then try to act again."""
        if self.inflight.pop(act.act_id, None) is None:
            raise ProtocolError(f"task {self.task_id}: act {act.act_id} completed twice")
        out: list[Any] = []
        self._finish(act, out)
        return self._progress(out)

    def blocked_on(self) -> dict[str, Any]:
        """Why this actor is not acting now (for hang reports): plain ids only."""
        return {
            "task_id": self.task_id,
            "label": self.label,
            "kind": self.kind,
            "status": self.status,
            "acts": self.acts,
            "inflight": len(self.inflight),
            "inputs_empty": [c.desc_id for c in self._cons if not c.ready and not c.eord],
            "inputs_eord": [c.desc_id for c in self._cons if c.eord],
            "outputs_full": [
                {"regst_desc_id": p.desc_id,
                 "held_by": p.holders()}
                for p in self._prod if not p.free],
            "queued": {c.desc_id: len(c.ready) for c in self._cons if c.ready},
            # for trace why-stuck: pieces of running acts, regsts still held by consumers
            "inflight_pieces": [a.piece_id for a in list(self.inflight.values())],
            "outputs_held": [
                {"regst_desc_id": p.desc_id, "held_by": p.holders(), "free": len(p.free)}
                for p in self._prod if not p.all_free()],
        }

    # -- the loop ----------------------------------------------------------------------
    def _progress(self, out: list[Any]) -> list[Any]:
        if self.status == RUNNING:
            inflight = self.inflight
            while True:
                while self._can_act():
                    act = self._start_act()
                    self.acts += 1
                    inflight[act.act_id] = act
                    out.append(act)
                if inflight or not self._input_done():
                    return out
                if not self._before_eord():  # it may make one more act possible (acc flush)
                    break
            self._send_eord(out)
            self.status = ZOMBIE
        if self.status == ZOMBIE and not self.inflight and all(p.all_free() for p in self._prod):
            self.status = EXITED
            out.append(Exit(self.task_id))
        return out

    def _send(self, out: list, type_: int, dst: int, desc_id: int, slot: int, piece: int,
              seq: int = 0) -> None:
        n = self._sent = self._sent + 1
        out.append(Msg(type_, self.task_id, dst, desc_id, slot, piece, seq, self._id_base | n))

    def _send_ready(self, out: list, p: Produced, slot: int, piece: int) -> None:
        consumers = p.consumers
        if not consumers:  # task-local scratch: free again at once
            p.free.append(slot)
            return
        p.held[slot] = p.all_mask
        seq, tid, desc_id, base, n = p.seq, self.task_id, p.desc_id, self._id_base, self._sent
        for dst in consumers:
            s = seq[dst]
            seq[dst] = s + 1
            n += 1
            out.append(Msg(READY, tid, dst, desc_id, slot, piece, s, base | n))
        self._sent = n

    def _send_ack(self, out: list, c: Consumed, slot: int, piece: int) -> None:
        n = self._sent = self._sent + 1
        out.append(Msg(ACK, self.task_id, c.producer, c.desc_id, slot, piece, 0,
                       self._id_base | n))

    def _send_eord(self, out: list) -> None:
        for p in self._prod:
            if p.eord_sent:
                continue
            p.eord_sent = True
            for dst in p.consumers:
                s = p.seq[dst]
                p.seq[dst] = s + 1
                self._send(out, EORD, dst, p.desc_id, -1, -1, s)

    def _on_ack(self, msg: Msg) -> None:
        p = self.produced.get(msg.regst_desc_id)
        if p is None:
            raise ProtocolError(f"task {self.task_id} ({self.label}) got ACK for regst desc "
                                f"{msg.regst_desc_id}, which it does not produce")
        slot = msg.slot
        bit = p.bit.get(msg.src, 0)
        if not 0 <= slot < len(p.held) or not p.held[slot] & bit:
            raise ProtocolError(f"task {self.task_id}: unexpected ACK from task {msg.src} for "
                                f"regst desc {p.desc_id} slot {slot} (not held by it)")
        mask = p.held[slot] & ~bit
        p.held[slot] = mask
        if not mask:
            p.free.append(slot)

    # -- hooks that kinds refine -----------------------------------------------------------
    def _on_cmd(self, msg: Msg) -> None:
        raise ProtocolError(f"task {self.task_id} ({self.kind}) does not take command "
                            f"'{msg.cmd_name}'")

    def _can_act(self) -> bool:
        for c in self._cons:
            if not c.ready:
                return False
        for p in self._prod:
            if not p.free:
                return False
        return bool(self._cons)

    def _start_act(self) -> Act:
        cons = self._cons
        piece = cons[0].ready[0][1]
        reads = []
        for c in cons:
            reads.append((c.desc_id, c.ready.popleft()[0]))
        writes = [(p.desc_id, p.free.popleft()) for p in self._prod]
        return Act(self.task_id, self.acts, piece, reads, writes)

    def _finish(self, act: Act, out: list) -> None:
        prod, cons = self.produced, self.consumed
        for desc_id, slot in act.writes:
            self._send_ready(out, prod[desc_id], slot, act.piece_id)
        for desc_id, slot in act.reads:
            self._send_ack(out, cons[desc_id], slot, act.piece_id)

    def _input_done(self) -> bool:
        """True when no more acts will come from upstream."""
        if not self._cons:
            return False
        for c in self._cons:
            if not c.eord:
                return False
        leftover = {c.desc_id: len(c.ready) for c in self._cons if c.ready}
        if not leftover:
            return True
        if len(leftover) == len(self._cons):
            return False  # blocked on a free output regst; acts again after an ACK
        raise ProtocolError(
            f"task {self.task_id} ({self.label}): every input ended (EORD) but regsts are "
            f"still queued on descs {leftover} while others are empty: its inputs carried "
            "different piece counts")

    def _before_eord(self) -> bool:
        """Last chance before EORD goes out; return True if it made an act possible."""
        return False


def describe_wait(s: dict[str, Any]) -> str:
    """One phrase from ``blocked_on()``: what this actor waits for, and on whom."""
    why = []
    if s["inputs_empty"]:
        why.append(f"waits for READY on regst descs {s['inputs_empty']}")
    for o in s["outputs_full"]:
        why.append(f"regst desc {o['regst_desc_id']} has no free regst (held by tasks "
                   f"{o['held_by']})")
    return "; ".join(why) or "idle"


def describe_states(states: list[dict[str, Any]], limit: int = 8) -> str:
    """One line from several actors' ``blocked_on()`` dicts, for timeout messages."""
    parts = [f"task {s['task_id']} ({s['label']}, {s['status']}): {describe_wait(s)}"
             for s in states[:limit]]
    more = f" and {len(states) - limit} more" if len(states) > limit else ""
    return ("; ".join(parts) or "no live actors") + more
