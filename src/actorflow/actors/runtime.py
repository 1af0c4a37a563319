"""The runtime of one machine (or, in a Session, of every machine in one process).

Tasks with the same ``(machine_id, thrd_id)`` share one execution unit: one thread, one
inbox, one stream.  A unit takes a message, hands it to the actor's pure state machine,
and executes the returned actions in order; the loop is ``unit_loop.run_unit``, shared
with process units (only where messages come from differs).  Messages between actors of
the same unit go through a local deque and never touch a queue or a socket.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable

from actorflow.actors.cores import NativeRouter, NativeUnitCore
from actorflow.actors.delivery import Batcher
from actorflow.actors.hosting import Deliver, Recorder
from actorflow.actors.memory import Allocator, HostAllocator, PinnedBuffers
from actorflow.actors.thread_unit import ThreadUnit
from actorflow.actors.unit_loop import (
    Coalesced,
)
from actorflow.errors import (
    KernelError,
    ProtocolError,
    WaitTimeout,
)
from actorflow.plan.memory import check_fits, desc_bytes
from actorflow.plan.model import Plan, Task
from actorflow.protocol.messages import Msg, cmd
from actorflow.protocol.state import describe_states


class MachineRuntime:
    """Hosts the actors of some machines of a plan on threads and routes their messages.

    ``deliver``/``take_feed`` connect output/input actors to a client (a Session).
    """

    def __init__(
        self,
        plan: Plan,
        machine_ids: Iterable[int] | None = None,
        allocator: Allocator | None = None,
        recorder: Recorder | None = None,
        on_deliver: Deliver | None = None,
        units: Iterable[tuple[int, int]] | None = None,
        producer_of: dict[int, int] | None = None,
        native_loops: bool = True,
    ) -> None:
        """``units`` keeps only tasks of those ``(machine, thrd)`` (one process unit);
        ``producer_of`` adds producers of regst descs whose tasks are not in ``plan``;
        ``native_loops``: units on the compiled core run their whole loop in it (thread
        units; a process unit's loop reads its socket in Python)."""
        self.native_loops = native_loops
        self._native_router: NativeRouter | None = None
        self.lost: list[Msg] = []  # messages fault injection lost (``lose_first``)
        self._losing: tuple[int, int, int] | None = None
        self.plan = plan
        ids = set(machine_ids) if machine_ids is not None else {t.machine_id for t in plan.tasks}
        self.tasks = [t for t in plan.tasks if t.machine_id in ids]
        if units is not None:
            keep = set(units)
            self.tasks = [t for t in self.tasks if (t.machine_id, t.thrd_id) in keep]
        # messages to tasks not hosted here go to remote_send(msg) (routing.Router.send)
        self.remote_send: Callable[[Msg], None] | None = None
        self.recorder = recorder
        self.allocator = allocator or HostAllocator()
        self.on_deliver = on_deliver
        self.batcher: Batcher | None = None  # output pieces in batches (actors/delivery.py)
        # messages to peer units coalesced per loop turn (routing.Router with coalesce=True);
        # the unit loop flushes it before every blocking wait
        self.coalesced: Coalesced | None = None
        self.stopping = False
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._all_exited = threading.Event()
        self._exited: set[int] = set()
        self._feeds: dict[int, deque[dict]] = {}
        producer_of = dict(producer_of or {})
        producer_of.update(
            {d.regst_desc_id: t.task_id for t in plan.tasks for d in t.produced.values()})
        self.memory: dict[int, list[dict]] = {}
        check_fits(sum(desc_bytes(d) for t in self.tasks for d in t.produced.values()),
                   f"plan '{plan.job.name}' on machine(s) {sorted(ids)} of this process")
        self.mem_of = {d.regst_desc_id: d.mem_case for t in plan.tasks
                       for d in t.produced.values()}
        self.pinned = PinnedBuffers()
        for t in self.tasks:
            for d in t.produced.values():
                self.memory[d.regst_desc_id] = self.allocator.allocate(d)
        by_unit: dict[tuple[int, int], list[Task]] = {}
        for t in self.tasks:
            by_unit.setdefault((t.machine_id, t.thrd_id), []).append(t)
        self.units = {k: ThreadUnit(self, k, ts) for k, ts in sorted(by_unit.items())}
        self.route: dict[int, ThreadUnit] = {}
        for u in self.units.values():
            u.build(producer_of)
            for tid in u.actors:
                self.route[tid] = u
        if not self.tasks:
            self._all_exited.set()

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self.pin_copy_buffers()
        for u in self.units.values():
            u.plan()
        for u in self.units.values():
            u.start()

    def native_router(self) -> NativeRouter:
        """Task -> inbox of every unit of this runtime on the native loop (made once)."""
        with self._lock:
            if self._native_router is None:
                self._native_router = NativeRouter(
                    [u.core for u in self.units.values()
                     if u.native and isinstance(u.core, NativeUnitCore)])
            return self._native_router

    def pin_copy_buffers(self) -> None:
        """Pin the host regsts this runtime's copy tasks copy from/to (once its memory,
        including regsts other units produce, is in place)."""
        self.pinned.pin(self.tasks, self.memory, self.mem_of)

    def close_streams(self) -> None:
        """Finish every unit's stream (worker threads, device streams) and unpin memory."""
        for u in self.units.values():
            u.stream.close()
        self.pinned.close()

    def send(self, msg: Msg, from_unit: ThreadUnit | None = None) -> None:
        if self._losing is not None and self._loses(msg):
            return
        u = self.route.get(msg.dst)
        if u is None:
            if from_unit is not None and from_unit.remote is not None:
                from_unit.remote.send(msg)
                return
            if self.remote_send is not None:
                self.remote_send(msg)
                return
            raise ProtocolError(f"no route to task {msg.dst} for {msg!r}")
        u.put(msg)  # (messages between actors of one unit never get here: its core)

    def lose_first(self, type_: int, piece: int, dst: int | None = None) -> list[Msg]:
        """Fault injection for tests of hangs: the first message of ``type_`` for ``piece``
        (to task ``dst``, if given) that one unit sends to another is lost, on either core;
        returns the list that will hold it."""
        self._losing = (type_, piece, -2 if dst is None else dst)
        if any(u.native for u in self.units.values()):
            self.native_router().lose_first(type_, piece, self._losing[2])
        return self.lost

    def _loses(self, msg: Msg) -> bool:
        if msg.src < 0 or self._losing is None:
            return False
        if any(u.native for u in self.units.values()):  # one loss for both paths
            lose = self.native_router().take_loss(msg)
        else:
            t, p, d = self._losing
            lose = (msg.type, msg.piece_id) == (t, p) and d in (-2, msg.dst)
            if lose:
                self._losing = None
        if lose:
            self.lost.append(msg)
        return lose

    def command(self, task_id: int, name: str, arg: int | None = None) -> None:
        self.send(cmd(task_id, name, arg))

    def actor_exited(self, task_id: int) -> None:
        with self._lock:
            self._exited.add(task_id)
            if len(self._exited) == len(self.tasks):
                self._all_exited.set()

    def fail(self, error: BaseException, cause: BaseException | None = None) -> None:
        with self._lock:
            if self.error is None:
                if cause is not None:
                    error.__cause__ = cause
                self.error = error
        self.stopping = True
        for u in self.units.values():
            u.stop()
        self._all_exited.set()
        if self.on_deliver is not None:
            self.on_deliver(None, -1, {})  # wake the client

    def exited_within(self, timeout: float) -> bool:
        """True once every actor exited or the runtime failed; False after ``timeout``."""
        return self._all_exited.wait(timeout)

    def wait_exited(self, timeout: float) -> None:
        """Wait until every actor exited; the timeout error names the ones still alive."""
        if not self._all_exited.wait(timeout):
            raise WaitTimeout(
                f"waited {timeout:.1f}s for every actor to exit; still running: "
                f"{self.describe_live()}")
        if self.error is not None:
            raise self.error

    def actor_states(self) -> list[dict]:
        """Every hosted actor's ``blocked_on()`` and unit: plain data for trace dumps."""
        out = []
        for u in list(self.units.values()):
            if u.core is None:
                continue
            for s in u.core.blocked_on():
                s["machine_id"], s["thrd_id"] = u.key
                out.append(s)
        return out

    def describe_live(self, limit: int = 8) -> str:
        live = [s for u in self.units.values() if u.core is not None
                for s in u.core.blocked_on() if s["task_id"] not in self._exited]
        return describe_states(live, limit)

    def join(self, timeout: float = 10.0) -> None:
        self.stopping = True
        deadline = time.monotonic() + timeout
        for u in self.units.values():
            if u.thread is not None and u.thread.is_alive():
                u.stop()
        for u in self.units.values():
            if u.thread is not None:
                u.thread.join(max(0.0, deadline - time.monotonic()))
                if u.thread.is_alive():
                    raise WaitTimeout(f"unit thread {u.name} did not stop within {timeout:.1f}s")
        self.close_streams()
        self.allocator.close()

    # -- client side -----------------------------------------------------------------
    def push_feed(self, task_id: int, arrays: dict) -> None:
        with self._lock:
            self._feeds.setdefault(task_id, deque()).append(arrays)
        self.command(task_id, "feed")

    def take_feed(self, task_id: int) -> dict:
        with self._lock:
            q = self._feeds.get(task_id)
            if not q:
                raise ProtocolError(f"input task {task_id} acted with no fed piece")
            return q.popleft()

    def deliver(self, task: Task, piece_id: int, arrays: dict) -> None:
        """An output actor's piece; ``arrays`` are its regst (reused once the act is done):
        a ``batcher`` copies them into a batch, ``on_deliver`` gets its own copies."""
        if self.batcher is not None:
            self.batcher.add(task, piece_id, arrays)
            return
        if self.on_deliver is None:
            raise KernelError(task.label, task.task_id, task.machine_id, piece_id,
                              "output actor has no client to deliver to")
        self.on_deliver(task, piece_id, {k: v.copy() for k, v in arrays.items()})
